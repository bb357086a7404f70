"""Declarative building blocks for fault primitives.

Most Kubernetes faults change a few fields of a workload's pod template. A :class:`TemplateFault`
computes JSON-patch operations from the live object; injection applies them and remembers the
original value of every touched path, so ``recover`` and the reference fix put exactly those fields
back (a targeted ``kubectl patch``, what an SRE would do), and ``is_present`` checks that the injected
values are still live.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from sregym_core.types import FaultSpec, GroundTruth, TargetSelector

from . import kube

_MISSING = {"$missing": True}

WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet")


def pointer_get(obj: Any, path: str) -> Any:
    node = obj
    for raw in path.strip("/").split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list):
            index = int(part)
            if index >= len(node):
                return _MISSING
            node = node[index]
        elif isinstance(node, dict):
            if part not in node:
                return _MISSING
            node = node[part]
        else:
            return _MISSING
    return copy.deepcopy(node)


def _is_list_index(obj: Any, path: str) -> bool:
    parent, _, last = path.rpartition("/")
    return (last.isdigit() or last == "-") and isinstance(pointer_get(obj, parent), list)


def _contains(live: Any, wanted: Any, original: Any = None) -> bool:
    """``live`` still holds the injected ``wanted``, ignoring fields the API server defaulted in (a
    container's ``imagePullPolicy``, a port's ``protocol``...) but not keys the injection removed
    from ``original`` (a CPU request taken out must stay out)."""
    if isinstance(wanted, dict):
        if not isinstance(live, dict):
            return False
        before = original if isinstance(original, dict) else {}
        if any(k in live for k in before if k not in wanted):
            return False
        return all(k in live and _contains(live[k], v, before.get(k)) for k, v in wanted.items())
    if isinstance(wanted, list):
        before = original if isinstance(original, list) and len(original) == len(wanted) else [None] * len(wanted)
        return isinstance(live, list) and len(live) == len(wanted) and all(map(_contains, live, wanted, before))
    return live == wanted


Mutation = Callable[[Any, Any, dict, dict], list[dict]]  # (ctx, target, params, live obj) -> json-patch ops


class TemplateFault:
    """A fault that patches fields of the target's workload object."""

    def __init__(self, mutate: Mutation, *, restart_after: bool = False) -> None:
        self.mutate = mutate
        self.restart_after = restart_after

    def inject(self, ctx: Any, target: Any, params: dict) -> None:
        obj = kube.workload(ctx, target)
        ops = self.mutate(ctx, target, params, obj)
        # an "add" into a list inserts: there was nothing at that path before (restore removes it)
        originals = {op["path"]: _MISSING if op["op"] == "add" and _is_list_index(obj, op["path"])
                     else pointer_get(obj, op["path"]) for op in ops}
        ctx.state["ops"] = ops
        ctx.state["originals"] = originals
        kube.patch(ctx, target.component.kind, target.component.name, ops, type="json")
        if self.restart_after:
            kube.delete_pods(ctx, target)

    def _forced_rollback(self, ctx: Any, target: Any) -> None:
        # a StatefulSet never replaces a pod that did not become Ready: delete it, as an SRE would
        if target.component.kind == "StatefulSet":
            kube.delete_pods(ctx, target)

    def present(self, ctx: Any, target: Any, params: dict) -> bool:
        obj = kube.get(ctx, target.component.kind, target.component.name, missing_ok=True)
        if obj is None:
            return True  # deleting the workload is not a fix
        for op in ctx.state.get("ops", []):
            live = pointer_get(obj, op["path"])
            if op["op"] == "remove":
                # present while the removed element is nowhere in its list (an agent may put it back
                # at another position, which is just as good)
                parent_path, _, _index = op["path"].rpartition("/")
                parent = pointer_get(obj, parent_path)
                original = ctx.state["originals"].get(op["path"])
                if not (isinstance(parent, list) and original in parent) and live != original:
                    return True
                continue
            # removed keys count only in resource maps (API defaults fill probes, ports... back in)
            original = ctx.state.get("originals", {}).get(op["path"]) if op["path"].endswith("/resources") else None
            if _contains(live, op["value"], original):
                return True
        return False

    def restore(self, ctx: Any, target: Any, params: dict) -> None:
        obj = kube.get(ctx, target.component.kind, target.component.name, missing_ok=True)
        if obj is None:
            return
        ops = []
        # reverse order so list indices of earlier operations stay valid
        for op in reversed(ctx.state.get("ops", [])):
            original = ctx.state["originals"].get(op["path"], _MISSING)
            live = pointer_get(obj, op["path"])
            if original is _MISSING:
                # an element inserted into a list is removed only while it is still the injected one
                # (after a fix, that index holds the element that was there before)
                inserted = op["op"] == "add" and _is_list_index(obj, op["path"])
                if live is not _MISSING and (not inserted or _contains(live, op.get("value"))):
                    ops.append({"op": "remove", "path": op["path"]})
            else:
                ops.append({"op": "add", "path": op["path"], "value": original})
        if ops:
            kube.patch(ctx, target.component.kind, target.component.name, ops, type="json")
            self._forced_rollback(ctx, target)


def truth_factory(name: str, layer: str, resource_kind: str, mechanism: str, *, symptoms: tuple[str, ...] = (),
                  keywords: tuple[str, ...] = (), values: Callable[[Any, dict, dict], dict] | None = None,
                  prose: str | None = None):
    """Build the ``ground_truth(target, params, state)`` callable of a fault."""

    def ground_truth(target: Any, params: dict, state: dict) -> GroundTruth:
        mutated = values(target, params, state) if values else dict(params)
        text = prose or f"{mechanism} on {{component}}."
        return GroundTruth(
            fault=name, layer=layer, components=(target.component.name,), namespace=target.namespace,
            resource_kind=resource_kind, mechanism=mechanism, mutated_values=mutated,
            prose=text.format(component=target.component.name, namespace=target.namespace, **{
                k: (json.dumps(v) if isinstance(v, dict | list) else v) for k, v in mutated.items()}),
            symptoms=symptoms, keywords=keywords,
        )

    return ground_truth


def template_fault(*, name: str, summary: str, mutate: Mutation, resource_kind: str = "Deployment",
                   mechanism: str, symptoms: tuple[str, ...] = (), keywords: tuple[str, ...] = (),
                   params_schema: dict | None = None, selector: TargetSelector | None = None,
                   values: Callable[[Any, dict, dict], dict] | None = None, layer: str = "k8s",
                   restart_after: bool = False, prose: str | None = None, capabilities=frozenset({"any"}),
                   failure_mode: str = "persistent") -> FaultSpec:
    impl = TemplateFault(mutate, restart_after=restart_after)
    return FaultSpec(
        name=name, summary=summary, layer=layer,
        selector=selector or TargetSelector(kinds=WORKLOADS),
        params_schema=params_schema or {"type": "object", "additionalProperties": False, "properties": {}},
        inject=impl.inject, recover=impl.restore, is_present=impl.present, reference_fix=impl.restore,
        ground_truth=truth_factory(name, layer, resource_kind, mechanism, symptoms=symptoms, keywords=keywords,
                                   values=values, prose=prose),
        capabilities=capabilities, failure_mode=failure_mode, symptoms=symptoms,
    )


def schema(**properties: dict) -> dict:
    return {"type": "object", "additionalProperties": False, "properties": properties}


def injected_value(state: dict, suffix: str) -> Any:
    """The value an injection wrote at the path ending with ``suffix`` (for ground truth)."""
    for op in state.get("ops", []):
        if op["path"].endswith(suffix) and "value" in op:
            return op["value"]
    return None


def original_value(state: dict, suffix: str) -> Any:
    for path, value in state.get("originals", {}).items():
        if path.endswith(suffix):
            return None if value is _MISSING else value
    return None
