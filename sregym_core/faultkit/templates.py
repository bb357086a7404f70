"""Template faults: a fault that patches a few fields of the target's workload object.

Most Kubernetes faults change a few fields of a workload's pod template. A :class:`TemplateFault`
computes JSON-patch operations from the live object (its ``mutate`` function); injection applies
them and remembers the original value of every touched path, so ``recover`` and the reference fix
put exactly those fields back (a targeted ``kubectl patch``, what an SRE would do), and
``is_present`` checks that the injected values are still live (while ignoring fields the API server
defaults in).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..faults import FaultContext
from ..types import Capability, FailureMode, FaultSpec, GroundTruth, Layer, Target, TargetSelector
from . import kube, weakening
from .truth import TruthValues, truth_factory

_MISSING = {"$missing": True}

#: the workload kinds whose pod template a fault can change
WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet")


def pointer_get(obj: Any, path: str) -> Any:
    """The value at JSON-pointer ``path`` of ``obj`` (a deep copy), or a private MISSING marker."""
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
        before_items = original if isinstance(original, list) and len(original) == len(wanted) else [None] * len(wanted)
        return isinstance(live, list) and len(live) == len(wanted) and all(map(_contains, live, wanted, before_items))
    return live == wanted


def _weakened(live: Any, original: Any, path: str) -> bool:
    """Was the field the fault broke deleted or made useless instead of repaired, where the app as deployed had it?
    The workload then runs without the check or the bound it shipped with: a weaker configuration, not the repair
    (red-team round 12: the broken probe or the tiny memory limit removed; round 13: a probe that never acts or checks
    nothing, a limit raised past any use, a request dropped; :mod:`.weakening` says which)."""
    if original is None or original == _MISSING:
        return False  # the fault added the field: taking it away is the fix
    if live == _MISSING:
        return True
    if path.endswith("/resources") and isinstance(original, dict):
        return weakening.resources_weaker(live, original) is not None
    if path.rsplit("/", 1)[-1] in weakening.PROBES:
        return weakening.probe_weaker(live, original) is not None
    return False


#: ``mutate(ctx, target, params, live_object) -> json-patch operations``
Mutation = Callable[[FaultContext, Target, Mapping[str, Any], dict], list[dict]]


class TemplateFault:
    """A :class:`~sregym_core.faults.Fault` that patches fields of the target's workload object.

    ``restart_after`` deletes the pods after the patch (for fields pods read only at start);
    ``truth`` is the fault's ground-truth function (see :func:`truth_factory`).
    """

    #: the contract kit's reason to accept a reference fix that runs recover: recover here is the
    #: targeted change an SRE makes, never a restore of a saved whole object
    recover_is_the_fix = "recover patches back exactly the injected fields of the live object (a targeted kubectl patch)"

    def __init__(self, mutate: Mutation, *, truth: Callable[..., GroundTruth], restart_after: bool = False) -> None:
        self.mutate = mutate
        self.truth = truth
        self.restart_after = restart_after

    def ground_truth(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> GroundTruth:
        return self.truth(ctx, target, params)

    def inject(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
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

    def _forced_rollback(self, ctx: FaultContext, target: Target) -> None:
        # a StatefulSet never replaces a pod that did not become Ready: delete it, as an SRE would
        if target.component.kind == "StatefulSet":
            kube.delete_pods(ctx, target)

    def is_present(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
        obj = kube.get(ctx, target.component.kind, target.component.name, missing_ok=True)
        if obj is None:
            return True  # deleting the workload is not a fix
        originals = ctx.state.get("originals", {})
        for op in ctx.state.get("ops", []):
            live = pointer_get(obj, op["path"])
            if op["op"] == "remove":
                # present while the removed element is nowhere in its list (an agent may put it back
                # at another position, which is just as good)
                parent_path, _, _index = op["path"].rpartition("/")
                parent = pointer_get(obj, parent_path)
                original = originals.get(op["path"])
                if not (isinstance(parent, list) and original in parent) and live != original:
                    return True
                continue
            original = originals.get(op["path"], _MISSING)
            if _weakened(live, original, op["path"]):
                return True
            # removed keys count only in resource maps (API defaults fill probes, ports... back in)
            if _contains(live, op["value"], original if op["path"].endswith("/resources") and original != _MISSING else None):
                return True
        return False

    def recover(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
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
            elif op["op"] == "remove" and _is_list_index(obj, op["path"]) and \
                    original in (pointer_get(obj, op["path"].rpartition("/")[0]) or []):
                continue  # the removed element is back already (a fix put it there): re-adding would duplicate it
            else:
                ops.append({"op": "add", "path": op["path"], "value": original})
        if ops:
            kube.patch(ctx, target.component.kind, target.component.name, ops, type="json")
            self._forced_rollback(ctx, target)

    def reference_fix(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
        """Patch back exactly the injected fields: the targeted fix an SRE makes."""
        self.recover(ctx, target, params)


def template_fault(*, name: str, summary: str, mutate: Mutation, resource_kind: str = "Deployment",
                   mechanism: str, symptoms: tuple[str, ...] = (), keywords: tuple[str, ...] = (),
                   params_schema: dict | None = None, selector: TargetSelector | None = None,
                   values: TruthValues | None = None, layer: Layer = "k8s",
                   restart_after: bool = False, prose: str | None = None,
                   capabilities: Iterable[Capability] = frozenset({"any"}),
                   failure_mode: FailureMode = "persistent") -> FaultSpec:
    """A :class:`FaultSpec` whose ``impl`` is a :class:`TemplateFault` (targets any workload by default)."""
    truth = truth_factory(name, layer, resource_kind, mechanism, symptoms=symptoms, keywords=keywords,
                          values=values, prose=prose)
    return FaultSpec(
        name=name, summary=summary, layer=layer,
        selector=selector or TargetSelector(kinds=WORKLOADS),
        params_schema=params_schema or schema(),
        impl=TemplateFault(mutate, truth=truth, restart_after=restart_after),
        capabilities=capabilities, failure_mode=failure_mode, symptoms=symptoms,
    )


def schema(**properties: dict) -> dict:
    """A closed params schema (no unknown keys) with the given properties."""
    return {"type": "object", "additionalProperties": False, "properties": properties}


def injected_value(state: dict, suffix: str) -> Any:
    """The value an injection wrote at the path ending with ``suffix`` (for ground truth)."""
    for op in state.get("ops", []):
        if op["path"].endswith(suffix) and "value" in op:
            return op["value"]
    return None


def original_value(state: dict, suffix: str) -> Any:
    """The value at the path ending with ``suffix`` before the injection (for ground truth)."""
    for path, value in state.get("originals", {}).items():
        if path.endswith(suffix):
            return None if value is _MISSING else value
    return None
