"""Node faults: node not ready, CPU noisy neighbour, disk full, network delay and loss.

Each fault's reference fix is what an SRE does through kubectl: move work off a dead node, remove
a neighbour's runaway pod, free space on the volume, replace pods whose network is impaired.
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any

from sregym_core.errors import PermanentFaultError
from sregym_core.faultkit import WORKLOADS, function_fault, kube, schema
from sregym_core.types import FaultSpec, TargetSelector

from . import hooks, placement

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sregym_core.faultkit import TruthValues
    from sregym_core.faults import FaultContext, FaultMethod
    from sregym_core.types import Capability, Layer, Target

STATELESS = TargetSelector(kinds=("Deployment",), exclude_roles=("workload-generator", "stateful", "db:*"))
WITH_VOLUME = TargetSelector(kinds=WORKLOADS, requires=("pvcs",))
WITH_SERVICE = TargetSelector(kinds=("Deployment",), exclude_roles=("workload-generator", "stateful", "db:*"),
                              requires=("service",))  # its pods must be able to move


# --------------------------------------------------------------------------- node-not-ready

def node_down_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    node = hooks.target_node(ctx, target)
    agents = hooks.call(ctx, "node_agents")
    if sum(1 for name, a in agents.items() if name != node and a.get("agent") == "running") < 1:
        raise PermanentFaultError("node-not-ready needs another running node for the pods to move to")
    pinned = _volume_pods_on(ctx, node)
    if pinned:
        # their volumes are bound to this node: no fix through the API could bring them back
        raise PermanentFaultError(f"node {node} also hosts pods with node-local volumes ({', '.join(pinned[:3])})",
                                  hints=("pick a target whose node runs only movable pods",))
    obj = kube.get(ctx, "node", node, namespace="")
    ctx.state.update(node=node, was_unschedulable=bool((obj.get("spec") or {}).get("unschedulable")))
    hooks.call(ctx, "stop_node", node)


def _volume_pods_on(ctx: FaultContext, node: str) -> list[str]:
    items = json.loads(ctx.kubectl("get", "pods", "-n", ctx.namespace, "--field-selector", f"spec.nodeName={node}",
                                   "-o", "json"))["items"]
    return [p["metadata"]["name"] for p in items
            if any(v.get("persistentVolumeClaim") for v in (p.get("spec") or {}).get("volumes") or [])]


def node_down_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    node = ctx.state["node"]
    stopped = hooks.call(ctx, "node_agents").get(node, {}).get("agent") == "stopped"
    if not stopped:
        return False
    # still broken unless the target serves from a healthy node
    for pod in hooks.pods(ctx, target):
        where = (pod.get("spec") or {}).get("nodeName")
        if where and where != node and hooks.is_ready(pod) and hooks.node_ready(ctx, where):
            return False
    return True


def node_down_fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    """Cordon the dead node and force-delete the target's pods on it (its kubelet never confirms)."""
    node = ctx.state["node"]
    ctx.kubectl("cordon", node)
    for pod in hooks.pods(ctx, target, include_terminating=True):
        if (pod.get("spec") or {}).get("nodeName") == node:
            ctx.kubectl("delete", "pod", pod["metadata"]["name"], "-n", ctx.namespace, "--force",
                        "--grace-period=0", check=False)
    hooks.wait_for(lambda: not node_down_present(ctx, target, params), 180.0,
                   f"a ready pod of {target.component.name} on another node")


def node_down_recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    node = ctx.state.get("node")
    if not node:
        return
    hooks.call(ctx, "start_node", node)
    if not ctx.state.get("was_unschedulable"):
        ctx.kubectl("uncordon", node, check=False)


# --------------------------------------------------------------------------- cpu-noisy-neighbor

def _busy_script(workers: int) -> str:
    # stress-ng where the image has it; otherwise shell busy loops. Both stop on their own after an hour.
    return (f"if command -v stress-ng >/dev/null 2>&1; then exec stress-ng --cpu {workers} --timeout 3600s --quiet; fi; "
            f"for i in $(seq {workers}); do timeout 3600 sh -c 'while :; do :; done' & done; wait")


def noisy_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    node = hooks.target_node(ctx, target)
    name = params["name"] or f"batch-cruncher-{uuid.uuid4().hex[:5]}"
    ctx.state.update(node=node, deployment=name)
    container = {"name": "cruncher", "image": "busybox", "command": ["sh", "-c", _busy_script(params["workers"])],
                 # a large request and no limit: the neighbour wins the node's CPU shares
                 "resources": {"requests": {"cpu": params["cpu_request"]}}}
    kube.apply(ctx, {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": ctx.namespace, "labels": {"app": name}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1,
                                       "containers": [container]}}},
    })


def noisy_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    obj = kube.get(ctx, "deployment", ctx.state["deployment"], missing_ok=True)
    if obj is None or (obj["spec"].get("replicas") or 0) == 0:
        return False
    containers = obj["spec"]["template"]["spec"].get("containers") or []
    return not all((c.get("resources") or {}).get("limits", {}).get("cpu") for c in containers)


def noisy_fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    ctx.kubectl("delete", "deployment", ctx.state["deployment"], "-n", ctx.namespace, "--ignore-not-found")


# --------------------------------------------------------------------------- disk-full

def disk_full_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    claim = hooks.claims(ctx, target)[0]
    ctx.state.update(claim=claim, filler=params["filler"])
    hooks.call(ctx, "disk_fill", hooks.hook_id(ctx, "diskfull"), namespace=ctx.namespace, claim=claim,
               filler=params["filler"], fill_bytes=params["fill_mb"] * 1024 * 1024)


def disk_full_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    record = hooks.status(ctx, "diskfull")
    return bool(record and record.get("full"))


def disk_full_fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    """Delete the stray file from a throw-away pod mounting the claim (the datastore may be crash
    looping, so exec into it is not reliable), then restart the datastore. The pod runs as root
    (allowed by the baseline Pod Security level): the file lies in the datastore's private data
    directory, which the default non-root user cannot enter."""
    name = f"disk-cleanup-{uuid.uuid4().hex[:6]}"
    node = hooks.target_node(ctx, target)
    kube.apply(ctx, {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ctx.namespace},
        "spec": {"restartPolicy": "Never", "nodeName": node, "terminationGracePeriodSeconds": 1,
                 "securityContext": {"runAsUser": 0},
                 "containers": [{"name": "cleanup", "image": "busybox",
                                 "command": ["rm", "-f", f"/volume/{ctx.state['filler']}"],
                                 "volumeMounts": [{"name": "v", "mountPath": "/volume"}]}],
                 "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": ctx.state["claim"]}}]},
    })

    def finished() -> bool:
        pod = kube.get(ctx, "pod", name, missing_ok=True)
        return pod is not None and (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")

    hooks.wait_for(finished, 60.0, f"pod {name}")
    ctx.kubectl("delete", "pod", name, "-n", ctx.namespace, "--ignore-not-found", "--wait=false")
    hooks.wait_for(lambda: not disk_full_present(ctx, target, params), 30.0, "the volume to have free space")
    hooks.restart_pods(ctx, target)  # skip the crash-loop back-off


def disk_full_recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    hooks.clear(ctx, "diskfull")


# --------------------------------------------------------------------------- network delay / loss

def _net_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    node = mark_node(ctx, hooks.target_node(ctx, target))
    impairment = {k: params[k] for k in ("delay_ms", "jitter_ms", "loss_pct") if k in params}
    record = hooks.call(ctx, "network_fault", hooks.hook_id(ctx, "network"), namespace=ctx.namespace,
                        labels=hooks.selector_labels(ctx, target), nodes=[node], **impairment)
    ctx.state["pods"] = record.get("targets", [])


def _net_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    """The impaired node hosts the target's pods, or nothing keeps them from landing there again
    (a restart that happened to reschedule them elsewhere has not mitigated a bad node)."""
    record = hooks.status(ctx, "network")
    if record and record.get("active"):
        return True
    return bool(ctx.state.get("node") and record) and may_land_on_node(ctx, target)


def mark_node(ctx: FaultContext, node: str) -> str:
    """Remember a node-scoped fault's bad node, and whether it was cordoned already (recover leaves
    the node as it found it)."""
    obj = kube.get(ctx, "node", node, namespace="")
    ctx.state.update(node=node, was_unschedulable=bool((obj.get("spec") or {}).get("unschedulable")))
    return node


def may_land_on_node(ctx: FaultContext, target: Target) -> bool:
    """Nothing keeps the target's pods off the bad node (cordon, an untolerated taint, the pod
    template's node selection): a restart that happened to place them elsewhere is no fix."""
    workload = kube.get(ctx, target.component.kind, target.component.name, missing_ok=True)
    if workload is None:
        return False
    return placement.schedulable_for(kube.get(ctx, "node", ctx.state["node"], namespace="", missing_ok=True),
                                     kube.pod_spec(workload))


def release_node(ctx: FaultContext, kind: str) -> None:
    """Clear the node's fault hook and uncordon it unless it was cordoned before the fault."""
    hooks.clear(ctx, kind)
    if ctx.state.get("node") and not ctx.state.get("was_unschedulable"):
        ctx.kubectl("uncordon", ctx.state["node"], check=False)


def move_off_node(ctx: FaultContext, target: Target, node: str) -> None:
    """Cordon the node and replace the target's pods on it, so they run elsewhere."""
    ctx.kubectl("cordon", node)
    old = set()
    for pod in hooks.pods(ctx, target, include_terminating=True):
        if (pod.get("spec") or {}).get("nodeName") == node:
            old.add(pod["metadata"]["uid"])
            ctx.kubectl("delete", "pod", pod["metadata"]["name"], "-n", ctx.namespace, "--wait=false", check=False)
    hooks.wait_for(lambda: any(hooks.is_ready(p) and p["spec"].get("nodeName") != node
                               for p in hooks.pods(ctx, target)), 180.0,
                   f"a ready pod of {target.component.name} on another node")


def drain_app_from_node(ctx: FaultContext, node: str) -> list[str]:
    """Cordon the node and move the app's pods off it, as ``kubectl drain`` would for them: every
    pod a ReplicaSet owns and no volume claim pins (a datastore on a node-local volume cannot move;
    it stays). Waits until each moved workload has a ready pod elsewhere; the moved pods' names."""
    ctx.kubectl("cordon", node)
    items = json.loads(ctx.kubectl("get", "pods", "-n", ctx.namespace, "-o", "json"))["items"]
    moved = []
    for pod in items:
        spec, meta = pod.get("spec") or {}, pod["metadata"]
        owners = {o.get("kind") for o in meta.get("ownerReferences") or []}
        pinned = any("persistentVolumeClaim" in v for v in spec.get("volumes") or [])
        if spec.get("nodeName") == node and "ReplicaSet" in owners and not pinned and not meta.get("deletionTimestamp"):
            moved.append(meta)
            ctx.kubectl("delete", "pod", meta["name"], "-n", ctx.namespace, "--wait=false", check=False)

    def replaced() -> bool:
        pods = json.loads(ctx.kubectl("get", "pods", "-n", ctx.namespace, "-o", "json"))["items"]
        for meta in moved:
            selector = {k: v for k, v in (meta.get("labels") or {}).items() if k != "pod-template-hash"}
            if not any(hooks.is_ready(p) and p["spec"].get("nodeName") != node
                       and selector.items() <= (p["metadata"].get("labels") or {}).items() for p in pods):
                return False
        return True

    hooks.wait_for(replaced, 180.0, f"the app's pods moved off {node} to be ready elsewhere")
    return [m["name"] for m in moved]


def _net_fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    """The node's network path is impaired: move the target's pods to another node."""
    move_off_node(ctx, target, ctx.state["node"])
    hooks.wait_for(lambda: not _net_present(ctx, target, params), 60.0, "no impaired pod left")


def _net_recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    release_node(ctx, "network")


# --------------------------------------------------------------------------- records

def _fault(name: str, summary: str, *, layer: Layer, selector: TargetSelector, params: Mapping[str, Any],
           inject: FaultMethod, present: FaultMethod, fix: FaultMethod, recover: FaultMethod, resource_kind: str,
           mechanism: str, symptoms: tuple[str, ...], keywords: tuple[str, ...], capabilities: frozenset[Capability],
           prose: str, values: TruthValues | None = None, recreates: tuple[str, ...] = ()) -> FaultSpec:
    return function_fault(name=name, summary=summary, layer=layer, selector=selector, params_schema=params,
                          inject=inject, recover=recover, is_present=present, reference_fix=fix,
                          resource_kind=resource_kind, mechanism=mechanism, symptoms=symptoms, keywords=keywords,
                          values=values, prose=prose, capabilities=capabilities, recreates=recreates)


def _with_state(*keys: str) -> TruthValues:
    def values(target: Target, params: Mapping[str, Any], state: dict) -> dict:
        return {**params, **{k: state.get(k, "(unknown)") for k in keys}}
    return values


FAULTS = [
    _fault("node-not-ready", "The node agent (kubelet) on the target's node stops: the node goes NotReady",
           layer="os", selector=STATELESS, params=schema(),
           inject=node_down_inject, present=node_down_present, fix=node_down_fix, recover=node_down_recover,
           resource_kind="Node", mechanism="kubelet stopped on the node hosting the target",
           symptoms=("node NotReady / Unknown", "pods on it not ready", "service endpoints empty"),
           keywords=("NotReady", "kubelet", "node down", "unreachable", "cordon", "drain"),
           capabilities=hooks.NODE_AGENT, values=_with_state("node"),
           prose="The kubelet on node {node}, which hosts {component}, stopped: the node stopped "
                 "heartbeating and went NotReady/Unknown, so {component}'s pods there are no longer ready "
                 "and nothing replaced them yet. Fix: cordon {node} and force-delete the pods stuck on it so "
                 "they are rescheduled on healthy nodes."),
    _fault("cpu-noisy-neighbor", "A CPU-hungry pod without limits lands on the target's node",
           layer="os", selector=TargetSelector(kinds=WORKLOADS),
           params=schema(workers={"type": "integer", "minimum": 1, "maximum": 8, "default": 2},
                         cpu_request={"type": "string", "default": "1"},
                         name={"type": "string", "default": "", "pattern": "^([a-z0-9]([-a-z0-9]{0,40}[a-z0-9])?)?$"}),
           inject=noisy_inject, present=noisy_present, fix=noisy_fix,
           recover=lambda ctx, target, params: noisy_fix(ctx, target, params),
           resource_kind="Deployment", mechanism="a busy neighbour pod with a large CPU request and no limit "
                                                  "on the target's node",
           symptoms=("latency up on co-located pods", "node CPU saturated", "kubectl top shows the neighbour"),
           keywords=("noisy neighbor", "CPU contention", "no CPU limit", "stress"),
           capabilities=frozenset({"any"}), values=_with_state("node", "deployment"),
           prose="Deployment {deployment} runs CPU-burning workers on node {node}, next to {component}, with a "
                 "large CPU request and no limit, starving {component} of CPU. Fix: delete it or give it a CPU limit."),
    _fault("disk-full", "A stray file fills the target's volume: writes fail with ENOSPC",
           layer="storage", selector=WITH_VOLUME,
           params=schema(fill_mb={"type": "integer", "minimum": 1, "maximum": 512, "default": 32},
                         filler={"type": "string", "default": "backup.tar.partial",
                                 "pattern": "^[A-Za-z0-9._-]{1,64}$"}),
           inject=disk_full_inject, present=disk_full_present, fix=disk_full_fix, recover=disk_full_recover,
           resource_kind="PersistentVolumeClaim", mechanism="volume filled by a stray file: No space left on device",
           symptoms=("No space left on device in the datastore's logs", "writes fail", "crash loop"),
           keywords=("disk full", "ENOSPC", "no space left", "volume full"),
           capabilities=hooks.LD_PRELOAD, values=_with_state("claim", "filler"),
           prose="The volume of claim {claim} mounted by {component} is full: a {fill_mb} MiB stray file "
                 "{filler} at its root uses the remaining space, so writes fail with ENOSPC (No space left on "
                 "device). Fix: delete {filler} from the volume and restart {component}."),
    _fault("network-delay", "The network of the target's node delays its traffic (netem-like, in the service proxy)",
           layer="network", selector=WITH_SERVICE,
           params=schema(delay_ms={"type": "number", "minimum": 1, "maximum": 10000, "default": 400},
                         jitter_ms={"type": "number", "minimum": 0, "maximum": 10000, "default": 50}),
           inject=_net_inject, present=_net_present, fix=_net_fix, recover=_net_recover,
           resource_kind="Node", mechanism="network delay on the node hosting the target's pods",
           symptoms=("high latency", "RPC deadline exceeded", "timeouts at callers"),
           keywords=("latency", "delay", "netem", "slow network"),
           capabilities=hooks.NODE_AGENT, values=_with_state("node", "pods"),
           prose="The network of node {node} delays every response from {component}'s pods there by {delay_ms} ms "
                 "(± {jitter_ms} ms), so callers see high latency and deadline errors. Fix: cordon {node} and "
                 "move {component}'s pods to another node."),
    _fault("network-loss", "The network of the target's node loses packets (each costs a retransmission time-out)",
           layer="network", selector=WITH_SERVICE,
           params=schema(loss_pct={"type": "number", "minimum": 1, "maximum": 100, "default": 40}),
           inject=_net_inject, present=_net_present, fix=_net_fix, recover=_net_recover,
           resource_kind="Node", mechanism="packet loss on the node hosting the target's pods",
           symptoms=("intermittent timeouts", "tail latency", "retransmissions"),
           keywords=("packet loss", "netem", "retransmission", "timeouts"),
           capabilities=hooks.NODE_AGENT, values=_with_state("node", "pods"),
           prose="The network of node {node} loses {loss_pct}% of the packets from {component}'s pods there, so "
                 "requests stall on retransmission time-outs. Fix: cordon {node} and move {component}'s pods to "
                 "another node."),
]

