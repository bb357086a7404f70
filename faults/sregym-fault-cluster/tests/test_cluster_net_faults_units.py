"""Pure logic of the cluster network faults (fast, no cluster)."""

from __future__ import annotations

import ipaddress
import json

from sregym_fault_cluster import bgp, ipam, kube_proxy


def test_free_addresses_count_only_the_pools_inside_each_nodes_block():
    blocks = {"node-1": "127.42.1.0/24", "node-2": "127.42.2.0/24"}
    everything = [ipaddress.ip_network("127.42.0.0/16")]
    assert ipam.free_addresses(everything, blocks, {}) == 2 * 253
    shrunk = [ipaddress.ip_network("127.42.1.192/26")]
    used = {"node-1": {"127.42.1.2", "127.42.1.192"}}
    assert ipam.free_addresses(shrunk, blocks, used) == 62  # .193-.254 on node-1, none on node-2
    assert ipam.free_addresses(shrunk, blocks, used, only="node-2") == 0
    full = {"node-1": {f"127.42.1.{h}" for h in range(192, 255)}}
    assert ipam.free_addresses(shrunk, blocks, full) == 0


def test_ground_truth_values_read_well_before_an_injection():
    values = ipam._values(None, {}, {})
    assert values["cidr"].endswith("/26") and values["fillers"] == 63 and values["ippool"] == ipam.POOL
    spec = next(f for f in kube_proxy.FAULTS if f.name == "kube-proxy-buggy-image")
    assert spec.capabilities == frozenset({"embedded"})
    assert next(f for f in ipam.FAULTS).capabilities == frozenset({"embedded"})


def test_filler_deployment_is_pinned_to_the_pools_node():
    class Ctx:
        namespace = "hotel-reservation"

    body = ipam._filler(Ctx(), "node-2", 63)
    assert body["spec"]["replicas"] == 63
    assert body["spec"]["template"]["spec"]["nodeSelector"] == {ipam.HOSTNAME: "node-2"}
    assert body["metadata"]["namespace"] == "hotel-reservation"


# ---------------------------------------------------------------- calico-route-reflector-drift

NODES = {"node-1": {"kubernetes.io/hostname": "node-1", "route-reflector": "true"},
         "node-2": {"kubernetes.io/hostname": "node-2", "node-role.kubernetes.io/control-plane": ""},
         "node-3": {"kubernetes.io/hostname": "node-3"}}
MESH_OFF = [{"metadata": {"name": "default"}, "spec": {"nodeToNodeMeshEnabled": False}}]


def _peer(selector, **spec):
    return {"metadata": {"name": bgp.PEER}, "spec": {"nodeSelector": "all()", "peerSelector": selector, **spec}}


def test_selectors_read_as_calico_reads_them():
    assert bgp.selects("all()", {}) and bgp.selects("", {"a": "b"})
    assert not bgp.selects(bgp.DRIFTED_SELECTOR, NODES["node-2"])  # kubeadm's nodes carry control-plane
    assert bgp.selects("has(node-role.kubernetes.io/control-plane)", NODES["node-2"])
    assert bgp.selects(bgp.GOOD_SELECTOR, NODES["node-1"]) and not bgp.selects(bgp.GOOD_SELECTOR, NODES["node-3"])
    assert bgp.selects("has(route-reflector) && !has(node-role.kubernetes.io/control-plane)", NODES["node-1"])
    assert bgp.selects("rack in {'a', 'b'} || route-reflector != 'true'", NODES["node-3"])
    assert not bgp.selects("rack not in {'a'} && (has(x) || has(y))", NODES["node-3"])
    for bad in ("has(", "a == b", "route-reflector ==", "has(a) has(b)"):
        assert not bgp.selects(bad, NODES["node-1"])  # Calico peers with nobody on it


def test_routes_join_the_nodes_a_reflector_peers_with():
    assert len(set(bgp.islands(NODES, [], []).values())) == 1  # no configuration: Calico's mesh
    assert len(set(bgp.islands(NODES, MESH_OFF, [_peer(bgp.GOOD_SELECTOR)]).values())) == 1
    assert len(set(bgp.islands(NODES, MESH_OFF, [_peer(bgp.DRIFTED_SELECTOR)]).values())) == 3
    one = bgp.islands(NODES, MESH_OFF, [{"metadata": {"name": "p"}, "spec": {"node": "node-3",
                                                                             "peerSelector": bgp.GOOD_SELECTOR}}])
    assert one["node-1"] == one["node-3"] != one["node-2"]
    tor = bgp.islands(NODES, MESH_OFF, [{"metadata": {"name": "tor"}, "spec": {"peerIP": "10.0.0.1"}}])
    assert len(set(tor.values())) == 3  # a router outside the cluster joins no nodes here


class _Cluster:
    """Nodes, Calico's BGP objects and the app's pods, answering the kubectl reads the fault makes."""

    namespace = "hotel-reservation"

    def __init__(self, configs, peers, pod_nodes=("node-1", "node-2")):
        self.objects = {bgp.CONFIGS: configs, bgp.PEERS: peers,
                        "nodes": [{"metadata": {"name": n, "labels": labels}} for n, labels in NODES.items()],
                        "pods": [{"metadata": {"name": f"p{i}"}, "spec": {"nodeName": n},
                                  "status": {"phase": "Running"}} for i, n in enumerate(pod_nodes)]}

    def kubectl(self, *args, check=True, **_kwargs):
        assert args[0] == "get"
        return json.dumps({"items": self.objects[args[1]]})


def test_unrouted_reads_the_live_objects_for_the_apps_nodes():
    assert bgp.unrouted(_Cluster(MESH_OFF, [_peer(bgp.DRIFTED_SELECTOR)]))
    assert not bgp.unrouted(_Cluster(MESH_OFF, [_peer(bgp.GOOD_SELECTOR)]))  # the reference fix
    assert not bgp.unrouted(_Cluster([], [_peer(bgp.DRIFTED_SELECTOR)]))  # the mesh back on
    assert not bgp.unrouted(_Cluster(MESH_OFF, [_peer(bgp.DRIFTED_SELECTOR)], pod_nodes=("node-2", "node-2")))
    labelled = _Cluster(MESH_OFF, [_peer(bgp.DRIFTED_SELECTOR)])
    labelled.objects["nodes"][0]["metadata"]["labels"]["node-role.kubernetes.io/master"] = ""
    assert not bgp.unrouted(labelled)  # the reflector labelled as the selector says: routes again


def test_route_reflector_fault_declares_what_it_needs_and_reads_well():
    spec = next(f for f in bgp.FAULTS if f.name == "calico-route-reflector-drift")
    assert spec.capabilities == frozenset({"embedded", "multi-node"})
    values = bgp._values(None, {}, {})
    assert values["selector"] == "has(node-role.kubernetes.io/master)" and values["peer"] == bgp.PEER
