"""Pod IP exhaustion (upstream ``pod_cidr_exhaustion_hotel_reservation``): the cluster's IP pool
shrunk to one small block and filled, so a new pod gets no address.

The CNI's pool (Calico's ``IPPool`` ``default-ipv4-ippool``, ``kubectl get ippools``) is cut down to
the last /26 (by default) of one node's block; as with Calico's strict affinity no other node may
take addresses from it, so every other node has none. A Deployment of filler pods (``warm-pool``,
in the app's namespace, pinned to that node) holds every address left in the pool. Then the
target's pods are recreated (as after an eviction): their sandboxes fail with
``FailedCreatePodSandBox ... no IP addresses available``, they stay ContainerCreating, and the
target's Service has no endpoints. The pods that keep running keep their addresses, as they do
with Calico. The fix: enlarge the pool back (the agent may patch that one pool) or free its
addresses (remove the fillers). Needs the embedded cluster's IPAM (its pool semantics: each node
allocates from its own /24 block inside the pools).
"""

from __future__ import annotations

import ipaddress
import json
from typing import TYPE_CHECKING, Any

from sregym_core.errors import PermanentFaultError
from sregym_core.faultkit import function_fault, kube, schema, users
from sregym_core.types import FaultSpec, TargetSelector

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sregym_core.faults import FaultContext
    from sregym_core.types import Target


RESOURCE, POOL = "ippools.crd.projectcalico.org", "default-ipv4-ippool"
FILLER = "warm-pool"
HOSTNAME = "kubernetes.io/hostname"
#: a node's block: .0 is the network, .1 the node itself, .255 the broadcast address
FIRST_HOST, LAST_HOST = 2, 254
SERVED = TargetSelector(kinds=("Deployment",), requires=("service",),
                        exclude_roles=("workload-generator", "db:*", "cache:*", "stateful"))
PARAMS = schema(prefix_length={"type": "integer", "minimum": 24, "maximum": 30, "default": 26,
                               "description": "the prefix length the pool is shrunk to (a /26 holds 64 addresses)"})


def _pool(ctx: FaultContext) -> dict:
    out = ctx.kubectl("get", RESOURCE, POOL, "-o", "json", "--ignore-not-found")
    if not out.strip():
        raise PermanentFaultError(f"this cluster has no IPPool {POOL}",
                                  hints=("the embedded cluster installs it unless SREGYM_EMBEDDED_IPAM=0",))
    return json.loads(out)


def _enabled_pools(ctx: FaultContext) -> list[ipaddress.IPv4Network]:
    items = json.loads(ctx.kubectl("get", RESOURCE, "-o", "json"))["items"]
    out = []
    for item in items:
        spec = item.get("spec") or {}
        try:
            cidr = ipaddress.ip_network(str(spec.get("cidr", "")), strict=False)
        except ValueError:
            continue
        if not spec.get("disabled") and isinstance(cidr, ipaddress.IPv4Network):
            out.append(cidr)
    return out


def _hosts(block: str) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    net = ipaddress.ip_network(block, strict=False)
    return [net.network_address + h for h in range(FIRST_HOST, LAST_HOST + 1)
            if int(net.network_address) + h <= int(net.broadcast_address)]


def _nodes(ctx: FaultContext) -> list[dict]:
    return json.loads(ctx.kubectl("get", "nodes", "-o", "json"))["items"]


def _used(ctx: FaultContext) -> dict[str, set[str]]:
    """Node -> addresses its live pods hold."""
    used: dict[str, set[str]] = {}
    for pod in json.loads(ctx.kubectl("get", "pods", "-A", "-o", "json"))["items"]:
        spec, status = pod["spec"], pod.get("status") or {}
        if spec.get("hostNetwork") or not status.get("podIP") or status.get("phase") in ("Succeeded", "Failed"):
            continue
        used.setdefault(spec.get("nodeName", ""), set()).add(status["podIP"])
    return used


def free_addresses(pools: list[ipaddress.IPv4Network], blocks: dict[str, str], used: dict[str, set[str]],
                   only: str | None = None) -> int:
    """Addresses a new pod could still get: in its node's block, inside an enabled pool, not held."""
    return sum(1 for node, block in blocks.items() if only in (None, node) for ip in _hosts(block)
               if str(ip) not in used.get(node, set()) and any(ip in pool for pool in pools))


def _blocks(ctx: FaultContext) -> dict[str, str]:
    return {n["metadata"]["name"]: n["spec"]["podCIDR"] for n in _nodes(ctx) if (n.get("spec") or {}).get("podCIDR")}


def _target_pods(ctx: FaultContext, target: Target) -> list[dict]:
    obj = kube.workload(ctx, target)
    selector = ",".join(f"{k}={v}" for k, v in obj["spec"]["selector"].get("matchLabels", {}).items())
    items = json.loads(ctx.kubectl("get", "pods", "-n", ctx.namespace, "-l", selector, "-o", "json"))["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def _filler(ctx: FaultContext, node: str, replicas: int) -> dict:
    labels = {"app": FILLER}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": FILLER, "namespace": ctx.namespace, "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {
                         "nodeSelector": {HOSTNAME: node}, "terminationGracePeriodSeconds": 1,
                         "containers": [{"name": "worker", "image": "busybox:1.36", "command": ["sleep", "86400"],
                                         "resources": {"requests": {"cpu": "1m", "memory": "4Mi"}}}]}}}}


def inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    pool = _pool(ctx)
    blocks = _blocks(ctx)
    if not blocks:
        raise PermanentFaultError("no node has a podCIDR to shrink the pool to")
    nodes = [p["spec"].get("nodeName") for p in _target_pods(ctx, target) if p["spec"].get("nodeName") in blocks]
    node = nodes[0] if nodes else sorted(blocks)[0]
    block = ipaddress.ip_network(blocks[node])
    if not isinstance(block, ipaddress.IPv4Network):  # the pools this fault shrinks are IPv4 (_enabled_pools)
        raise PermanentFaultError(f"node {node}'s podCIDR {block} is not IPv4: no IPv4 pool to shrink to it")
    shrunk = list(block.subnets(new_prefix=int(params["prefix_length"])))[-1]
    ctx.state.update(pool={"cidr": pool["spec"]["cidr"], "blockSize": pool["spec"].get("blockSize")},
                     cidr=str(shrunk), node=node)
    ctx.kubectl("patch", RESOURCE, POOL, "--type", "merge", "-p",
                json.dumps({"spec": {"cidr": str(shrunk), "blockSize": shrunk.prefixlen}}))
    fillers = free_addresses([shrunk], blocks, _used(ctx), only=node)
    ctx.state["fillers"] = fillers
    kube.apply(ctx, _filler(ctx, node, fillers))
    if not kube.wait_until(lambda: free_addresses(_enabled_pools(ctx), blocks, _used(ctx), only=node) == 0,
                           timeout=300.0, interval=3.0):
        raise PermanentFaultError(f"the {fillers} {FILLER} pods did not take the pool's addresses on {node} in 300 s")
    kube.delete_pods(ctx, target)  # the app needs new pods now, as after an eviction or a node drain


def is_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    """Some of the target's pods wait for an address and the pools have too few left."""
    obj = kube.get(ctx, target.component.kind, target.component.name, missing_ok=True)
    if obj is None:
        return True  # deleting the workload is no fix
    wanted = int(obj["spec"].get("replicas", 1) or 0)
    missing = wanted - sum(1 for p in _target_pods(ctx, target) if (p.get("status") or {}).get("podIP"))
    if missing <= 0:
        return False
    return free_addresses(_enabled_pools(ctx), _blocks(ctx), _used(ctx)) < missing


def _restore_pool(ctx: FaultContext) -> None:
    saved = ctx.state.get("pool") or {}
    if saved.get("cidr"):
        spec = {"cidr": saved["cidr"], **({"blockSize": saved["blockSize"]} if saved.get("blockSize") else {})}
        ctx.kubectl("patch", RESOURCE, POOL, "--type", "merge", "-p", json.dumps({"spec": spec}))


def _wait_target(ctx: FaultContext, target: Target, *, recovering: bool = False) -> None:
    # the kubelet retries a failed sandbox on a back-off of at most 10 s
    ctx.kubectl("rollout", "status", f"deployment/{target.component.name}", "-n", ctx.namespace, "--timeout=180s",
                check=False, timeout=200.0)
    # then, as an SRE watches the site: callers that failed meanwhile recover on their own back-off
    # (TrainTicket's callers still failed 60 % of requests right after the rollout)
    if recovering:
        users.wait_users_after_recover(ctx, target)
    else:
        users.wait_users_succeed(ctx)


def fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    _restore_pool(ctx)  # as a cluster admin would: give the pool its addresses back
    _wait_target(ctx, target)


def recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    if "pool" not in ctx.state:
        return
    _restore_pool(ctx)
    kube.delete(ctx, "deployment", FILLER)
    _wait_target(ctx, target, recovering=True)


# how an SRE says "the pods ran out of IP addresses"; the pod states (ContainerCreating,
# FailedCreatePodSandBox) are left out: they alone do not say why
VOCABULARY = (
    "ippool", "ip pool", "ip address pool", "pod cidr", "podcidr", "ipam", "ip exhaust*", "address exhaust*",
    "exhausted .. ip*", "ip* .. exhausted", "out of ip*", "ran out of .. address*", "no ip address* available",
    "no free ip*", "no more ip*", "no .. ip* left", "pool .. shrunk", "shrunk .. pool", "pool .. too small",
    "cidr .. shrunk", "cidr .. too small", "sandbox .. no ip*", "filler pods", "pods .. hold* .. address*",
)


def _values(target: Target, params: Mapping[str, Any], state: dict) -> dict:
    return {"ippool": POOL, "cidr": state.get("cidr") or "127.42.1.192/26",
            "original_cidr": (state.get("pool") or {}).get("cidr") or "127.42.0.0/16",
            "filler": FILLER, "fillers": state.get("fillers") or 63, "node": state.get("node") or "node-1"}


FAULTS: list[FaultSpec] = [
    function_fault(
        name="pod-ip-exhaustion", summary="the pod IP pool shrunk and filled: new pods get no IP address",
        layer="network", selector=SERVED, resource_kind="IPPool", capabilities={"embedded"},
        params_schema=PARAMS,
        mechanism="the Calico IPPool was shrunk to one small block that filler pods hold entirely, so the "
                  "target's new pods get no IP: FailedCreatePodSandBox, stuck ContainerCreating",
        inject=inject, is_present=is_present, recover=recover, reference_fix=fix,
        symptoms=("ContainerCreating", "FailedCreatePodSandBox", "no endpoints"),
        keywords=("IPPool", "IPAM", "CIDR", "IP addresses"),
        values=_values,
        prose="The IPPool {ippool} was shrunk from {original_cidr} to {cidr} and {fillers} pods of the {filler} "
              "Deployment hold every address in it: {component}'s new pods get no IP address "
              "(FailedCreatePodSandBox) and stay ContainerCreating.", vocabulary=VOCABULARY,
    ),
]

__all__ = ["FAULTS", "free_addresses"]
