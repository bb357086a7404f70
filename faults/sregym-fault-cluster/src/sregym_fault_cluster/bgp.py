"""Route reflectors chosen by a deprecated label (upstream
``calico_route_reflector_label_drift_hotel_reservation``): pods on different nodes lose their routes.

Calico's nodes learn each other's pod routes over BGP. With the node-to-node mesh turned off
(``BGPConfiguration`` ``default``: ``nodeToNodeMeshEnabled: false``), every node peers with the
route reflectors a ``BGPPeer`` selects: here ``peer-with-route-reflectors`` (``nodeSelector:
all()``), whose ``peerSelector`` names the reflector by its node label. The fault leaves the
reflector labelled ``route-reflector=true`` but has the peer select the deprecated control-plane
label ``has(node-role.kubernetes.io/master)``, which no node carries any more (kubeadm's nodes carry
``node-role.kubernetes.io/control-plane``): no node peers with a reflector, the routes to other
nodes' pod blocks are withdrawn, and a pod's connection to a pod on another node goes nowhere (the
caller times out) while pods on the same node still talk. Every Deployment, Service and Endpoints
object is right; the break is in the CNI's cluster-scoped peering objects.

The fix an SRE makes: point the selector back at the label the reflector carries
(``route-reflector == 'true'``; the agent may change that one field of that one BGPPeer), or turn
the mesh back on. ``is_present`` reads the live Nodes, BGPConfigurations and BGPPeers and computes
the routes as Calico distributes them (``sregym_core.faultkit.calico``, the embedded cluster's
network computes them with it too): present while some node running the app's pods has no route to
another such node. Needs the embedded cluster (its
routes follow these objects; ``SREGYM_EMBEDDED_BGP=0`` turns them off) with two nodes or more.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from sregym_core.errors import PermanentFaultError
from sregym_core.faultkit import function_fault, kube, users
from sregym_core.faultkit.calico import CONFIGS, DEFAULT_CONFIG, GROUP, PEERS, VERSION, islands, selects
from sregym_core.types import FaultSpec, TargetSelector

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sregym_core.faults import FaultContext
    from sregym_core.types import Target

CONFIG, PEER = DEFAULT_CONFIG, "peer-with-route-reflectors"
REFLECTOR_LABEL, REFLECTOR_VALUE = "route-reflector", "true"
GOOD_SELECTOR = f"{REFLECTOR_LABEL} == '{REFLECTOR_VALUE}'"
DRIFTED_SELECTOR = "has(node-role.kubernetes.io/master)"
SERVED = TargetSelector(kinds=("Deployment",), requires=("service",),
                        exclude_roles=("workload-generator", "db:*", "cache:*", "stateful"))


# ---------------------------------------------------------------- the cluster's objects

def _items(ctx: FaultContext, resource: str) -> list[dict]:
    out = ctx.kubectl("get", resource, "-o", "json", check=False)
    try:
        return json.loads(out)["items"]
    except (ValueError, KeyError, TypeError):
        return []  # the resource type is gone: Calico's defaults (the mesh)


def _nodes(ctx: FaultContext) -> dict[str, dict[str, str]]:
    return {n["metadata"]["name"]: n["metadata"].get("labels") or {}
            for n in json.loads(ctx.kubectl("get", "nodes", "-o", "json"))["items"]}


def _app_nodes(ctx: FaultContext) -> set[str]:
    """The nodes running the app's pods (host-network pods route as their node)."""
    pods = json.loads(ctx.kubectl("get", "pods", "-n", ctx.namespace, "-o", "json"))["items"]
    return {p["spec"]["nodeName"] for p in pods if p["spec"].get("nodeName") and not p["spec"].get("hostNetwork")
            and (p.get("status") or {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")}


def unrouted(ctx: FaultContext) -> bool:
    """Whether some node running the app's pods has no route to another one."""
    found = islands(_nodes(ctx), _items(ctx, CONFIGS), _items(ctx, PEERS))
    return len({found.get(node) for node in _app_nodes(ctx)}) > 1


def _peer(selector: str) -> dict:
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "BGPPeer", "metadata": {"name": PEER},
            "spec": {"nodeSelector": "all()", "peerSelector": selector}}


def _set_peer(ctx: FaultContext, spec: dict, *, exists: bool) -> None:
    """The peer with ``spec``: created, or its spec replaced where it stands (every attempt's problem grant
    gives the peer a standing form; ``kubectl apply`` over an object it did not create would send a
    strategic merge patch, which custom resources refuse)."""
    if exists:
        ctx.kubectl("patch", PEERS, PEER, "--type=json", "-p", json.dumps([{"op": "replace", "path": "/spec",
                                                                              "value": spec}]))
    else:
        kube.apply(ctx, {**_peer(""), "spec": spec})


def inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    try:
        configs = json.loads(ctx.kubectl("get", CONFIGS, "-o", "json", check=False))["items"]
    except (ValueError, KeyError, TypeError):
        raise PermanentFaultError("this cluster serves no Calico BGP resources (bgpconfigurations, bgppeers)",
                                  hints=("the embedded cluster installs them unless SREGYM_EMBEDDED_BGP=0",)) from None
    nodes = _nodes(ctx)
    spread = _app_nodes(ctx)
    if len(nodes) < 2 or len(spread) < 2:
        raise PermanentFaultError(f"the app's pods run on {len(spread)} node(s) of {len(nodes)}: no traffic crosses "
                                  "nodes to lose its route", hints=("start a cluster with --nodes 3",))
    config = next((c for c in configs if c["metadata"]["name"] == CONFIG), None)
    peer_out = ctx.kubectl("get", PEERS, PEER, "-o", "json", "--ignore-not-found", check=False)
    existing = json.loads(peer_out) if peer_out.strip() else None
    reflector = next((n for n in sorted(nodes) if nodes[n].get(REFLECTOR_LABEL) == REFLECTOR_VALUE), sorted(nodes)[0])
    ctx.state.update(
        config=None if config is None else (config.get("spec") or {}),
        peer=None if existing is None else (existing.get("spec") or {}),
        reflector=reflector, labelled=nodes[reflector].get(REFLECTOR_LABEL) != REFLECTOR_VALUE,
        selector=DRIFTED_SELECTOR)
    # the route-reflector layout, then the drift: the peer selects reflectors by a label no node carries
    ctx.kubectl("label", "node", reflector, f"{REFLECTOR_LABEL}={REFLECTOR_VALUE}", "--overwrite")
    _set_peer(ctx, _peer(DRIFTED_SELECTOR)["spec"], exists=existing is not None)
    if config is None:
        kube.apply(ctx, {"apiVersion": f"{GROUP}/{VERSION}", "kind": "BGPConfiguration", "metadata": {"name": CONFIG},
                         "spec": {"nodeToNodeMeshEnabled": False, "asNumber": 64512}})
    else:
        ctx.kubectl("patch", CONFIGS, CONFIG, "--type", "merge", "-p",
                    json.dumps({"spec": {"nodeToNodeMeshEnabled": False}}))


def is_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    if kube.get(ctx, target.component.kind, target.component.name, missing_ok=True) is None:
        return True  # deleting the workload is no fix
    return unrouted(ctx)


def fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    # as a cluster admin would: the peer selects the reflectors by the label they carry
    ctx.kubectl("patch", PEERS, PEER, "--type", "merge", "-p", json.dumps({"spec": {"peerSelector": GOOD_SELECTOR}}))
    users.wait_users_succeed(ctx)


def recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    if "reflector" not in ctx.state:
        return
    saved_peer, saved_config = ctx.state.get("peer"), ctx.state.get("config")
    if saved_config is None:
        ctx.kubectl("delete", CONFIGS, CONFIG, "--ignore-not-found", check=False)
    else:
        mesh = saved_config.get("nodeToNodeMeshEnabled")
        ctx.kubectl("patch", CONFIGS, CONFIG, "--type", "merge", "-p",
                    json.dumps({"spec": {"nodeToNodeMeshEnabled": True if mesh is None else mesh}}))
    if saved_peer is None:
        ctx.kubectl("delete", PEERS, PEER, "--ignore-not-found", check=False)
    else:
        _set_peer(ctx, saved_peer, exists=True)
    if ctx.state.get("labelled"):
        ctx.kubectl("label", "node", ctx.state["reflector"], f"{REFLECTOR_LABEL}-", check=False)
    users.wait_users_after_recover(ctx, target)


# how an SRE says "the nodes lost their BGP routes: the peer selects the reflectors by a stale label"
VOCABULARY = (
    "bgppeer", "bgp peer*", "bgp peering", "route reflector*", "route-reflector", "peerselector", "peer selector",
    "node-role.kubernetes.io/master", "deprecated .. label", "master label", "stale .. label", "label .. drift*",
    "routes .. withdrawn", "withdrawn .. routes", "no route* .. node*", "cross-node .. rout*", "inter-node .. rout*",
    "node-to-node mesh", "nodetonodemesh*", "mesh .. disabled", "calico .. bgp", "bgp .. calico", "bird",
    "pods on different nodes .. cannot", "selector .. no node",
)


def _values(target: Target, params: Mapping[str, Any], state: dict) -> dict:
    return {"peer": PEER, "selector": state.get("selector") or DRIFTED_SELECTOR, "good_selector": GOOD_SELECTOR,
            "reflector": state.get("reflector") or "node-1", "label": f"{REFLECTOR_LABEL}={REFLECTOR_VALUE}",
            "config": CONFIG}


FAULTS: list[FaultSpec] = [
    function_fault(
        name="calico-route-reflector-drift",
        summary="the BGPPeer selects route reflectors by a deprecated label: pods on different nodes cannot talk",
        layer="network", selector=SERVED, resource_kind="BGPPeer", capabilities={"embedded", "multi-node"},
        mechanism="with Calico's node-to-node mesh off, the BGPPeer peer-with-route-reflectors selects the route "
                  "reflectors by the deprecated node-role.kubernetes.io/master label that no node carries: no node "
                  "peers with a reflector, routes to other nodes' pods are withdrawn, cross-node connections time out",
        inject=inject, is_present=is_present, recover=recover, reference_fix=fix,
        symptoms=("connection timeouts", "deadline exceeded", "errors between services on different nodes"),
        keywords=("BGPPeer", "peerSelector", "route reflector", "node-role.kubernetes.io/master", "Calico", "BGP"),
        values=_values,
        prose="The node-to-node mesh ({config} BGPConfiguration) is off and the BGPPeer {peer} selects route "
              "reflectors with {selector}, a deprecated label no node carries (the reflector {reflector} is labelled "
              "{label}): no node peers with a reflector, routes to other nodes' pods are withdrawn, and {component}'s "
              "calls to pods on other nodes time out.", vocabulary=VOCABULARY,
    ),
]

__all__ = ["FAULTS", "islands", "selects", "unrouted"]
