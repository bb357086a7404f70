"""conntrack-exhaustion: kube-proxy's conntrack sizing lowered far below the nodes' connection count.

kube-proxy sets each node's ``nf_conntrack_max`` to ``max(conntrack.maxPerCore × cores,
conntrack.min)`` from its configuration (``config.conf`` in ``kube-system/kube-proxy`` on kubeadm
clusters). The fault writes ``maxPerCore: 16`` and ``min: 32`` there (a "tuning" copied from a tiny
edge node): every connection through a Service holds an entry on the caller's and the backend's node
while open and for two minutes in TIME_WAIT, the tables fill, and new connections are dropped
(``nf_conntrack: table full, dropping packet``; callers time out). The fix restores the sizing
(the defaults: ``maxPerCore: 32768``, ``min: 131072``, or null).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import yaml

from sregym_core.errors import PermanentFaultError
from sregym_core.faultkit import function_fault, kube, schema
from sregym_core.types import FaultSpec, TargetSelector

from . import hooks

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sregym_core.faults import FaultContext
    from sregym_core.types import Target

NAMESPACE, NAME, KEY = "kube-system", "kube-proxy", "config.conf"
SERVED = TargetSelector(kinds=("Deployment",), exclude_roles=("workload-generator", "stateful", "db:*"),
                        requires=("service",))


def _config(ctx: FaultContext) -> tuple[str, dict]:
    obj = kube.get(ctx, "configmap", NAME, namespace=NAMESPACE, missing_ok=True)
    text = ((obj or {}).get("data") or {}).get(KEY)
    if text is None:
        raise PermanentFaultError(f"this cluster has no {NAMESPACE}/{NAME} ConfigMap with {KEY}")
    doc = yaml.safe_load(text) or {}
    return text, doc if isinstance(doc, dict) else {}


def _write(ctx: FaultContext, doc: dict) -> None:
    kube.patch(ctx, "configmap", NAME, {"data": {KEY: yaml.safe_dump(doc, sort_keys=False)}}, namespace=NAMESPACE)


def _tables(ctx: FaultContext) -> dict[str, dict]:
    return {name: node["conntrack"] for name, node in hooks.call(ctx, "node_agents").items() if "conntrack" in node}


def inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    if not _tables(ctx):
        raise PermanentFaultError("this cluster's service proxy keeps no conntrack table")
    text, doc = _config(ctx)
    ctx.state["saved"] = text
    doc["conntrack"] = {**(doc.get("conntrack") or {}), "maxPerCore": params["max_per_core"], "min": params["min"]}
    _write(ctx, doc)
    # the proxy applies it within seconds; the tables then fill with the app's own traffic
    hooks.wait_for(lambda: any(t["drops"] > 0 for t in _tables(ctx).values()), 120.0,
                   "a node's conntrack table to fill")


def is_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    """Some node's table is smaller than the connections its traffic needs (entries + drops, 2 min)."""
    return any(t["max"] <= t["demand"] for t in _tables(ctx).values())


def reference_fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    _, doc = _config(ctx)
    doc["conntrack"] = {**(doc.get("conntrack") or {}), "maxPerCore": 32768, "min": 131072}
    _write(ctx, doc)
    hooks.wait_for(lambda: not is_present(ctx, target, params), 30.0, "the conntrack tables to have room")


def recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    if ctx.state.get("saved") is not None:
        kube.patch(ctx, "configmap", NAME, {"data": {KEY: ctx.state["saved"]}}, namespace=NAMESPACE)
        # the proxy re-reads its configuration every few seconds
        hooks.wait_for(lambda: not is_present(ctx, target, params), 30.0, "the conntrack tables to have room")


VOCABULARY = (
    "conntrack", "nf_conntrack", "connection tracking", "connection-tracking", "maxpercore", "conntrack.min",
    "kube-proxy config*", "kube-proxy's config*", "table full", "dropping packet",
)

FAULTS: list[FaultSpec] = [
    function_fault(
        name="conntrack-exhaustion",
        summary="kube-proxy's conntrack sizing lowered: the nodes' connection-tracking tables fill and drop "
                "new connections",
        layer="network", selector=SERVED, resource_kind="ConfigMap",
        mechanism="conntrack.maxPerCore/min in kube-system/kube-proxy lowered far below the nodes' connection "
                  "count: nf_conntrack table full, new connections dropped",
        params_schema=schema(max_per_core={"type": "integer", "minimum": 1, "maximum": 1024, "default": 16},
                             min={"type": "integer", "minimum": 1, "maximum": 4096, "default": 32}),
        inject=inject, is_present=is_present, recover=recover, reference_fix=reference_fix,
        symptoms=("intermittent connection timeouts", "ConntrackFull node events: nf_conntrack: table full, "
                  "dropping packet", "deadline exceeded at callers"),
        keywords=("conntrack", "nf_conntrack_max", "kube-proxy", "maxPerCore", "table full"),
        values=lambda t, p, s: {"configmap": f"{NAMESPACE}/{NAME}", "max_per_core": p.get("max_per_core", 16),
                                "min": p.get("min", 32)},
        prose="kube-proxy's configuration ({configmap}) sets conntrack maxPerCore {max_per_core} and min {min}, so "
              "each node's nf_conntrack_max is tiny: the tables fill with the app's connections (open and in "
              "TIME_WAIT) and new connections are dropped ('nf_conntrack: table full, dropping packet'), so calls "
              "to {component} and others time out. Fix: restore the conntrack sizing (maxPerCore 32768, min "
              "131072).",
        capabilities=hooks.NODE_AGENT, vocabulary=VOCABULARY,
    ),
]
