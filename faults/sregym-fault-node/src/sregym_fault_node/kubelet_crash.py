"""kubelet-crash: the kubelet on every node crash-loops on a fleet-wide configuration change.

Upstream's ``kubelet_crash`` kills and stops the kubelet on every worker; this is the same outage
with a cause an SRE can find and fix through the API. Someone "tunes" image garbage collection in
the cluster-wide ``KubeletConfiguration`` (``kube-system/kubelet-config``, which kubeadm nodes read)
with the two thresholds the wrong way round (low 90 %, high 85 %) and restarts the kubelets to
pick it up. Each kubelet fails validation at start (``imageGCLowThresholdPercent
(--image-gc-low-threshold) 90 must be less than imageGCHighThresholdPercent``) and exits; systemd
restarts it every 10 s and it exits again. Every node stops heartbeating: after the grace period
the node lifecycle controller marks them ``Unknown`` ("Kubelet stopped posting node status"),
taints them ``node.kubernetes.io/unreachable`` and marks their pods not ready, so every Service
loses its endpoints and users fail. The containers keep running. After the default toleration
(300 s) the pods are marked for deletion and stay ``Terminating``, and their replacements stay
``Pending``: every node is tainted.

The fix is in the ConfigMap (the agent's grant: get/patch on ``kube-system/kubelet-config``, its
``kubelet`` key only): thresholds in order, low below high. The next restart succeeds, the
nodes turn Ready and the pods serve again. The mitigation checks nodes Ready and users served,
not the thresholds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import yaml

from sregym_core.errors import PermanentFaultError
from sregym_core.faultkit import function_fault, kube, schema, users
from sregym_core.types import FaultSpec, TargetSelector

from . import hooks
from .kubelet_config import BASE, KEY, NAMESPACE, read_config

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sregym_core.faults import FaultContext
    from sregym_core.types import Target

#: the target is the component whose users fail (every Service loses its endpoints)
ENTRY = TargetSelector(kinds=("Deployment",), exclude_roles=("workload-generator", "stateful", "db:*", "cache:*"),
                       requires=("service",))
SANE = {"imageGCHighThresholdPercent": 85, "imageGCLowThresholdPercent": 80}  # the kubelet's defaults


def _config(ctx: FaultContext) -> tuple[str, dict]:
    obj, doc = read_config(ctx, BASE)
    if obj is None:
        raise PermanentFaultError(f"no {NAMESPACE}/{BASE} ConfigMap: the nodes read no cluster-wide kubelet "
                                  "configuration", hints=("the embedded node agents create it when they start",))
    return (obj.get("data") or {}).get(KEY) or "", doc


def _write(ctx: FaultContext, doc: dict) -> None:
    kube.patch(ctx, "configmap", BASE, {"data": {KEY: yaml.safe_dump(doc, sort_keys=False)}}, namespace=NAMESPACE)


def _agents(ctx: FaultContext) -> dict:
    return hooks.call(ctx, "node_agents")


def _restart_kubelets(ctx: FaultContext, nodes: list[str]) -> None:
    """systemctl restart kubelet on each node, as a configuration rollout does."""
    for node in nodes:
        hooks.call(ctx, "stop_node", node)
        hooks.call(ctx, "start_node", node)


def inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    agents = _agents(ctx)
    if any(a.get("agent") != "running" for a in agents.values()):
        raise PermanentFaultError("a node agent is not running before the fault: "
                                  f"{ {n: a.get('agent') for n, a in agents.items()} }")
    text, doc = _config(ctx)
    nodes = sorted(agents)
    ctx.state.update(saved=text, nodes=nodes)
    doc["imageGCHighThresholdPercent"] = params["high_percent"]
    doc["imageGCLowThresholdPercent"] = params["low_percent"]
    _write(ctx, doc)
    _restart_kubelets(ctx, nodes)
    crashing = lambda: all(a.get("agent") == "crashloop" for a in _agents(ctx).values())  # noqa: E731
    if not kube.wait_until(crashing, timeout=20.0, interval=1.0):
        recover(ctx, target, params)
        raise PermanentFaultError("the kubelets started with the swapped thresholds: the node agents do not "
                                  "validate their configuration", hints=("needs sregym-cluster-embedded with "
                                                                         "node/service.py",))
    # the node lifecycle controller's grace period, then the pods leave their Services
    hooks.wait_for(lambda: not any(hooks.is_ready(p) for p in hooks.pods(ctx, target)), 150.0,
                   f"{target.component.name}'s pods to be marked not ready")


def _nodes_down(ctx: FaultContext) -> list[str]:
    agents = _agents(ctx)
    return [n for n in ctx.state.get("nodes") or sorted(agents)
            if agents.get(n, {}).get("agent") != "running" or not hooks.node_ready(ctx, n)]


def is_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    """A node whose kubelet does not run, or that is not Ready (whatever the ConfigMap says now)."""
    return bool(_nodes_down(ctx))


def _settle(ctx: FaultContext, target: Target) -> None:
    """Wait as an SRE watches: every node Ready, the target's rollout done, the users served."""
    hooks.wait_for(lambda: not _nodes_down(ctx), 90.0, "every node Ready")
    ctx.kubectl("rollout", "status", f"deployment/{target.component.name}", "-n", ctx.namespace, "--timeout=180s",
                check=False, timeout=200.0)
    # every caller had lost its backends; a gRPC client that failed to connect retries on its own back-off
    users.wait_users_succeed(ctx, window_s=15.0, timeout_s=180.0)


def fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    """Put the image GC thresholds back in order; systemd's next restart of each kubelet succeeds."""
    _, doc = _config(ctx)
    doc.update(SANE)
    _write(ctx, doc)
    _settle(ctx, target)


def recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    if "saved" not in ctx.state:
        return
    kube.patch(ctx, "configmap", BASE, {"data": {KEY: ctx.state["saved"]}}, namespace=NAMESPACE)
    # restart now rather than at the next scheduled restart
    _restart_kubelets(ctx, [n for n, a in _agents(ctx).items() if a.get("agent") != "running"])
    hooks.wait_for(lambda: not _nodes_down(ctx), 90.0, "every node Ready")


VOCABULARY = (
    "kubelet .. crash*", "kubelet .. exit*", "kubelet .. fail* .. start", "kubelet .. not running",
    "kubelet .. down", "kubelet .. stopped", "kubelet .. dead", "kubelet .. restart*", "crash loop* .. kubelet",
    "imagegc*",
    "image gc", "image garbage collection", "gc threshold*", "garbage collection threshold*",
    "low threshold", "high threshold", "thresholds .. swapped", "swapped .. threshold*",
    "failed to validate kubelet configuration", "invalid configuration", "kubelet stopped posting",
    "notready", "not ready .. every node", "all nodes", "every node", "unreachable",
)

FAULTS: list[FaultSpec] = [
    function_fault(
        name="kubelet-crash",
        summary="a fleet-wide kubelet configuration fails validation: the kubelet on every node crash-loops, "
                "every node goes NotReady",
        layer="os", selector=ENTRY, resource_kind="Node",
        mechanism="kube-system/kubelet-config has imageGCLowThresholdPercent above imageGCHighThresholdPercent; the "
                  "kubelets restarted to pick it up fail validation and exit in a loop, so every node stops "
                  "heartbeating, goes NotReady/Unknown with the unreachable taint and all pods leave their Services",
        params_schema=schema(low_percent={"type": "integer", "minimum": 0, "maximum": 100, "default": 90},
                             high_percent={"type": "integer", "minimum": 0, "maximum": 100, "default": 85}),
        inject=inject, is_present=is_present, recover=recover, reference_fix=fix,
        symptoms=("every node NotReady / Unknown: Kubelet stopped posting node status",
                  "node.kubernetes.io/unreachable taints", "Service endpoints empty", "users fail"),
        keywords=("kubelet", "NotReady", "KubeletConfiguration", "imageGCLowThresholdPercent",
                  "imageGCHighThresholdPercent", "kubelet-config"),
        values=lambda t, p, s: {"configmap": f"{NAMESPACE}/{BASE}", "low": p.get("low_percent", 90),
                                "high": p.get("high_percent", 85), "nodes": ", ".join(s.get("nodes") or [])},
        prose="The cluster-wide kubelet configuration {configmap} sets imageGCLowThresholdPercent {low} above "
              "imageGCHighThresholdPercent {high}. The kubelets on every node ({nodes}) were restarted with it, fail "
              "validation (invalid configuration: imageGCLowThresholdPercent must be less than "
              "imageGCHighThresholdPercent) and exit in a restart loop, so every node went NotReady/Unknown, got the "
              "unreachable taint, and {component}'s pods (all pods) left their Services. Fix: put the thresholds "
              "back in order (low below high, e.g. 80/85) in {configmap}.",
        capabilities=hooks.NODE_AGENT, vocabulary=VOCABULARY,
    ),
]
