"""Service routing in the cluster: ``internalTrafficPolicy: Local`` with no endpoint on the callers' nodes.

The Service keeps only node-local endpoints for in-cluster clients; the target's pods are pinned
to a node where none of its callers runs, so every caller's connection is dropped (kube-proxy does
not fall back to other nodes).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from sregym_core.errors import PermanentFaultError
from sregym_core.faultkit import function_fault, kube
from sregym_core.types import FaultSpec, TargetSelector

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sregym_core.faults import FaultContext
    from sregym_core.types import Target

SERVICE = TargetSelector(kinds=("Deployment",), requires=("service",),
                         exclude_roles=("workload-generator", "db:*", "cache:*"))
HOSTNAME = "kubernetes.io/hostname"


def _pods_of(ctx: FaultContext, deployment: str) -> list[dict]:
    obj = kube.get(ctx, "deployment", deployment, missing_ok=True)
    if obj is None:
        return []
    labels = obj["spec"]["selector"].get("matchLabels", {})
    selector = ",".join(f"{k}={v}" for k, v in labels.items())
    items = json.loads(ctx.kubectl("get", "pods", "-n", ctx.namespace, "-l", selector, "-o", "json"))["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def _caller_nodes(ctx: FaultContext, target: Target) -> set[str]:
    return {p["spec"].get("nodeName") for name in kube.dependents(ctx, target) for p in _pods_of(ctx, name)
            if p["spec"].get("nodeName")}


def _service_name(target: Target) -> str:
    name = target.component.service_name
    assert name, f"{target.component.name} has no Service"  # SERVICE, the fault's selector, requires one
    return name


def _endpoint_nodes(ctx: FaultContext, target: Target) -> set[str]:
    endpoints = kube.get(ctx, "endpoints", _service_name(target), missing_ok=True) or {}
    return {a.get("nodeName") for s in endpoints.get("subsets") or [] for a in s.get("addresses") or []
            if a.get("nodeName")}


def inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    callers = _caller_nodes(ctx, target)
    if not callers:
        raise PermanentFaultError(f"no running callers of {target.component.name}'s Service")
    nodes = json.loads(ctx.kubectl("get", "nodes", "-o", "json"))["items"]
    free = sorted(n["metadata"]["name"] for n in nodes
                  if n["metadata"]["name"] not in callers and not n["spec"].get("unschedulable")
                  and not n["spec"].get("taints"))
    if not free:
        raise PermanentFaultError("every schedulable node runs a caller: no node to pin the endpoints away to")
    svc = kube.service(ctx, target)
    obj = kube.workload(ctx, target)
    ctx.state.update(node=free[0], policy=svc["spec"].get("internalTrafficPolicy", "Cluster"),
                     node_selector=kube.pod_spec(obj).get("nodeSelector"))
    kube.patch(ctx, "service", svc["metadata"]["name"], {"spec": {"internalTrafficPolicy": "Local"}})
    # the endpoints move to a node no caller runs on; their old pods go, and with them the callers'
    # pooled connections
    kube.patch(ctx, "deployment", target.component.name,
               {"spec": {"template": {"spec": {"nodeSelector": {HOSTNAME: free[0]}}}}})
    ctx.kubectl("rollout", "status", f"deployment/{target.component.name}", "-n", ctx.namespace, "--timeout=120s",
                timeout=130)


def is_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    svc = kube.get(ctx, "service", _service_name(target), missing_ok=True)
    if svc is None:
        return True  # deleting the Service is no fix
    if svc["spec"].get("internalTrafficPolicy", "Cluster") != "Local":
        return False
    # present while some caller's node has no ready endpoint of the Service
    return bool(_caller_nodes(ctx, target) - _endpoint_nodes(ctx, target))


def fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    kube.patch(ctx, "service", _service_name(target), {"spec": {"internalTrafficPolicy": "Cluster"}})
    kube.restart_dependents(ctx, target)


def recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    if "policy" not in ctx.state:
        return
    kube.patch(ctx, "service", _service_name(target),
               {"spec": {"internalTrafficPolicy": ctx.state["policy"]}})
    selector = ctx.state.get("node_selector")
    if selector:
        kube.patch(ctx, "deployment", target.component.name, [
            {"op": "replace", "path": "/spec/template/spec/nodeSelector", "value": selector}], type="json")
    else:
        kube.remove_pod_spec_field(ctx, target, "nodeSelector")


FAULTS: list[FaultSpec] = [
    function_fault(
        name="internal-traffic-local", summary="Service internalTrafficPolicy Local with no endpoint on the callers' nodes",
        layer="network", selector=SERVICE, resource_kind="Service", capabilities={"multi-node"},
        mechanism="the Service's internalTrafficPolicy is Local and its pods are pinned to a node where no caller "
                  "runs: callers' connections are dropped",
        inject=inject, is_present=is_present, recover=recover, reference_fix=fix,
        symptoms=("connection errors", "no local endpoints"),
        keywords=("internalTrafficPolicy", "Local", "Service", "endpoints", "node"),
        values=lambda t, p, s: {"internalTrafficPolicy": "Local", "node": s.get("node", "")},
        prose="{component}'s Service has internalTrafficPolicy {internalTrafficPolicy} and its only endpoints run "
              "on {node}, where none of its callers runs: their connections are dropped.",
        # the policy by its name, or in plain words: traffic kept to the caller's own node
        vocabulary=("internaltrafficpolicy", "internal traffic policy", "traffic policy .. local",
                    "local machine only", "local node only", "caller's own machine", "caller's own node",
                    "same machine as the caller", "same node as the caller", "keeps traffic .. local",
                    "only .. copies on the caller's", "only .. pods on the caller's", "node-local"),
    ),
]

__all__ = ["FAULTS"]
