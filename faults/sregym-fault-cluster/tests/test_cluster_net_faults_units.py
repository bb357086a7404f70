"""Pure logic of the cluster network faults (fast, no cluster)."""

from __future__ import annotations

import ipaddress

from sregym_fault_cluster import ipam, kube_proxy


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
