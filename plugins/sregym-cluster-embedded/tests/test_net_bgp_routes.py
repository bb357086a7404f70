"""Pod routes between nodes from Calico's BGP resources (network/bgp.py): the selector syntax, the
route computation, the kernel guard's islands and the service proxy holding unrouted traffic."""

from __future__ import annotations

import asyncio
import errno
import os
from types import SimpleNamespace

import pytest
from _fixtures_ctrl import FakeKubelet, anyio_backend, settle  # noqa: F401
from _fixtures_net import Items, connects_from, listening, release, two_node_network
from sregym_cluster_embedded.controllers.informer import Informer
from sregym_cluster_embedded.network import bgp
from sregym_cluster_embedded.network import netguard as ng

MASTER = "has(node-role.kubernetes.io/master)"
REFLECTOR = "route-reflector == 'true'"
NODES = {"node-1": {"kubernetes.io/hostname": "node-1", "route-reflector": "true"},
         "node-2": {"kubernetes.io/hostname": "node-2"},
         "node-3": {"kubernetes.io/hostname": "node-3"}}


def peer(peer_selector: str | None, node_selector: str | None = "all()", **spec) -> dict:
    body = {k: v for k, v in {"peerSelector": peer_selector, "nodeSelector": node_selector}.items() if v is not None}
    return {"metadata": {"name": "peer-with-route-reflectors"}, "spec": {**body, **spec}}


def config(mesh: bool | None) -> dict:
    return {"metadata": {"name": "default"}, "spec": {} if mesh is None else {"nodeToNodeMeshEnabled": mesh}}


# ---------------------------------------------------------------- selectors

@pytest.mark.parametrize(("selector", "labels", "expected"), [
    ("all()", {}, True),
    ("", {"a": "b"}, True),
    ("has(node-role.kubernetes.io/master)", {"node-role.kubernetes.io/control-plane": ""}, False),
    ("has(node-role.kubernetes.io/control-plane)", {"node-role.kubernetes.io/control-plane": ""}, True),
    ("!has(route-reflector)", {"route-reflector": "true"}, False),
    ("route-reflector == 'true'", {"route-reflector": "true"}, True),
    ('route-reflector == "true"', {"route-reflector": "false"}, False),
    ("rack != 'r1'", {}, True),
    ("rack in {'r1', 'r2'}", {"rack": "r2"}, True),
    ("rack not in {'r1', 'r2'}", {"rack": "r2"}, False),
    ("has(a) && (b == 'x' || !has(c))", {"a": "", "c": ""}, False),
    ("has(a) && (b == 'x' || !has(c))", {"a": "", "b": "x", "c": ""}, True),
    ("zone starts with 'eu-'", {"zone": "eu-west"}, True),
    ("zone ends with 'west' && zone contains 'u-w'", {"zone": "eu-west"}, True),
])
def test_calico_selectors_select_as_calico_reads_them(selector, labels, expected):
    assert bgp.selects(selector, labels) is expected


@pytest.mark.parametrize("bad", ["has(", "a == b", "a ==", "&& has(a)", "a in {'x'", "has(a) has(b)", "a ~ 'b'"])
def test_a_selector_calico_would_not_parse_selects_nothing(bad):
    with pytest.raises(bgp.SelectorError):
        bgp.parse_selector(bad)
    assert bgp.selects(bad, {"a": "b"}) is False


# ---------------------------------------------------------------- routes

def test_the_mesh_routes_every_node_to_every_other():
    for configs in ([], [config(None)], [config(True)]):
        assert set(bgp.islands(NODES, configs, [peer(MASTER)]).values()) == {1}


def test_reflectors_a_peer_selects_join_every_node_that_peers_with_them():
    assert set(bgp.islands(NODES, [config(False)], [peer(REFLECTOR)]).values()) == {1}
    assert bgp.sessions(NODES, [peer(REFLECTOR)]) == {frozenset(("node-1", "node-2")), frozenset(("node-1", "node-3"))}


def test_a_selector_naming_a_label_no_node_carries_leaves_every_node_alone():
    found = bgp.islands(NODES, [config(False)], [peer(MASTER)])
    assert sorted(found.values()) == [1, 2, 3]
    assert bgp.islands(NODES, [config(False)], []) == found  # no BGPPeer at all: the same
    assert bgp.islands(NODES, [config(False)], [peer("has(")]) == found  # an unparsable one selects nobody


def test_a_peer_for_one_node_or_an_outside_router_joins_only_what_it_names():
    one = bgp.islands(NODES, [config(False)], [peer(REFLECTOR, node_selector=None, node="node-2")])
    assert one["node-1"] == one["node-2"] != one["node-3"]
    tor = bgp.islands(NODES, [config(False)], [{"metadata": {"name": "tor"}, "spec": {"peerIP": "10.0.0.1"}}])
    assert sorted(tor.values()) == [1, 2, 3]  # a router outside the cluster: no route between nodes here


def _routes(nodes: dict, configs: list, peers: list) -> bgp.Routes:
    view = SimpleNamespace(client=None, informers={}, nodes=Informer(None, "nodes"))
    routes = bgp.Routes(view)
    for obj in configs:
        routes.configs.upsert(obj)
    for obj in peers:
        routes.peers.upsert(obj)
    for name, labels in nodes.items():
        view.nodes.upsert({"metadata": {"name": name, "labels": labels}})
    return routes


def test_routes_follow_the_objects_and_tell_their_listeners():
    routes = _routes(NODES, [config(False)], [peer(MASTER)])
    assert set(routes.view.informers) == {bgp.PEERS, bgp.CONFIGS}  # started, synced and stopped with the view
    assert routes.partitioned()
    assert not routes.routed("node-2", "node-1") and not routes.routed("node-2", "node-3")
    assert routes.routed("node-2", "node-2")  # same node
    assert routes.routed(None, "node-1") and routes.routed("node-2", None)  # outside the routing
    assert routes.routed("node-2", "node-9")  # a node not known yet
    told = []
    routes.listeners.append(lambda: told.append(1))
    routes.peers.upsert({**peer(REFLECTOR), "metadata": {"name": "peer-with-route-reflectors", "resourceVersion": "9"}})
    assert told == [1] and not routes.partitioned() and routes.routed("node-2", "node-3")
    routes.view.nodes.upsert({"metadata": {"name": "node-1", "labels": {}, "resourceVersion": "9"}})
    assert told == [1, 1] and routes.partitioned()  # the reflector lost its label


def test_crds_and_the_seeded_configuration_keep_the_mesh_on():
    names = {c["metadata"]["name"] for c in bgp.crds()}
    assert names == {bgp.PEERS, bgp.CONFIGS}
    assert all(c["spec"]["scope"] == "Cluster" for c in bgp.crds())
    assert bgp.mesh_enabled([bgp.default_config()])


def test_bgp_off_switch(monkeypatch):
    monkeypatch.setenv("SREGYM_EMBEDDED_BGP", "0")
    assert not bgp.enabled()
    monkeypatch.delenv("SREGYM_EMBEDDED_BGP")
    assert bgp.enabled()


# ---------------------------------------------------------------- the kernel guard's islands

def hotel_on_three_nodes() -> SimpleNamespace:
    namespaces = [{"metadata": {"name": "hotel", "labels": {"sregym.io/app": "hotel-reservation"}}}]
    pods = [{"metadata": {"name": f"p{i}", "namespace": "hotel", "uid": f"u{i}"}, "spec": {"nodeName": f"node-{i}"},
             "status": {"podIP": f"127.44.{i}.2"}} for i in (1, 2, 3)]
    pods.append({"metadata": {"name": "h", "namespace": "hotel", "uid": "uh"},
                 "spec": {"nodeName": "node-2", "hostNetwork": True}, "status": {"podIP": "127.44.0.2"}})
    services = [{"metadata": {"name": "geo", "namespace": "hotel"}, "spec": {"clusterIP": "127.43.0.7"}}]
    return SimpleNamespace(namespaces=Items(namespaces), pods=Items(pods), services=Items(services),
                           node_ips=lambda: [])


def test_guard_entries_carry_the_island_only_while_routes_are_partitioned(tmp_path):
    settings = SimpleNamespace(pod_cidr_prefix="127.44", service_cidr_prefix="127.43")
    view, groups = hotel_on_three_nodes(), ng.AppGroups()
    hotel = groups.id("hotel-reservation")
    whole = _routes(NODES, [config(False)], [peer(REFLECTOR)])
    assert ng.table(view, settings, groups, whole) == ng.table(view, settings, groups)  # nothing changes
    cut = _routes(NODES, [config(False)], [peer(MASTER)])
    table = ng.table(view, settings, groups, cut)
    islands = cut.islands()
    for i in (1, 2, 3):
        assert table[ng.key(f"127.44.{i}.2", 0)] == hotel | (islands[f"node-{i}"] << ng.ISLAND_SHIFT)
    assert table[ng.key("127.43.0.7", 0)] == hotel  # a Service IP: the proxy decides per backend
    (tmp_path / "pod-u2").mkdir()
    (tmp_path / "pod-uh").mkdir()
    callers = ng.callers(view, tmp_path, groups, {}, cut)
    assert callers[ng._cgroup_id(tmp_path / "pod-u2")] == hotel | (islands["node-2"] << ng.ISLAND_SHIFT)
    assert callers[ng._cgroup_id(tmp_path / "pod-uh")] == hotel  # host network: no island


def test_the_program_refuses_another_islands_pod_with_ehostunreach(tmp_path) -> None:
    """The loaded program on real processes in pod cgroups: a pod reaches its own island's pods and
    the Service IPs; another island's pod fails at connect() with EHOSTUNREACH; a caller of no
    island yet (just admitted) is not held back by routes."""
    if os.geteuid() != 0 or ng.cgroup2_root() is None:
        pytest.skip("the guard needs root and cgroup v2")
    guard = ng.NetGuard(tmp_path)
    try:
        hotel = guard.groups.id("hotel-reservation")
        pods = {name: guard.cgroup / f"pod-{name}" for name in ("on-1", "on-2", "fresh")}
        for path in pods.values():
            path.mkdir()
        guard.admit(pods["on-1"], {"sregym.io/app": "hotel-reservation"}, island=1)
        guard.admit(pods["on-2"], {"sregym.io/app": "hotel-reservation"}, island=2)
        guard.admit(pods["fresh"], {"sregym.io/app": "hotel-reservation"})
        addresses = {"pod on 1": "127.44.1.2", "pod on 2": "127.44.2.2", "service": "127.43.0.7"}
        with listening(addresses) as targets:
            guard.update({ng.key("127.44.0.0", ng.PREFIX16): ng.ALLOW, ng.key("127.43.0.0", ng.PREFIX16): ng.ALLOW,
                          ng.key(addresses["pod on 1"], 0): hotel | (1 << ng.ISLAND_SHIFT),
                          ng.key(addresses["pod on 2"], 0): hotel | (2 << ng.ISLAND_SHIFT),
                          ng.key(addresses["service"], 0): hotel})
            seen = {pod: connects_from(path, targets) for pod, path in pods.items()}
    finally:
        release(guard)
    unreachable = f"errno {errno.EHOSTUNREACH}"
    assert seen["on-1"] == {"pod on 1": "open", "pod on 2": unreachable, "service": "open"}
    assert seen["on-2"] == {"pod on 1": unreachable, "pod on 2": "open", "service": "open"}
    assert seen["fresh"] == {"pod on 1": "open", "pod on 2": "open", "service": "open"}


# ---------------------------------------------------------------- the service proxy

@pytest.fixture
async def two_nodes(tmp_path):
    async with two_node_network(tmp_path, "127.207", "127.208") as env:
        yield env


async def _answer(ip: str, port: int, source: str, timeout: float = 1.5) -> bytes | None:
    """What the Service answers this pod (None: nothing within ``timeout``, the SYN into no route)."""
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(ip, port, local_addr=(source, 0)), timeout)
    except (OSError, TimeoutError):
        return None
    try:
        writer.write(b"ping")
        await writer.drain()
        return await asyncio.wait_for(reader.readexactly(4), timeout)
    except (OSError, TimeoutError, asyncio.IncompleteReadError):
        return None
    finally:
        writer.close()


@pytest.mark.anyio
async def test_the_proxy_holds_traffic_between_unrouted_nodes_and_heals_with_the_selector(two_nodes):
    env = two_nodes
    assert (await env.client.get(bgp.CONFIGS, "default"))["spec"]["nodeToNodeMeshEnabled"] is True  # seeded
    svc = await env.client.create("services", {"metadata": {"name": "geo"}, "spec": {
        "selector": {"app": "geo"}, "ports": [{"port": 82, "targetPort": 8080}]}}, "default")
    ip = svc["spec"]["clusterIP"]
    ips = {}
    for name, node in (("geo-0", "node-1"), ("front-1", "node-1"), ("front-2", "node-2")):
        labels = {"app": "geo"} if name.startswith("geo") else {"role": "frontend"}
        await env.client.create("pods", {"metadata": {"name": name, "labels": labels}, "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "containers": [{"name": "m", "image": "x", "ports": [{"containerPort": 8080}]}]}}, "default")

        async def has_ip(name=name):
            return (await env.client.get("pods", name, "default")).get("status", {}).get("podIP")
        await settle(has_ip)
        ips[name] = (await env.client.get("pods", name, "default"))["status"]["podIP"]

    async def echo(reader, writer):
        while data := await reader.read(1024):
            writer.write(data)
            await writer.drain()
        writer.close()
    env.servers.append(await asyncio.start_server(echo, ips["geo-0"], 8080))

    async def answers(source: str) -> bool:
        return await _answer(ip, 82, source) == b"ping"
    await settle(lambda: answers(ips["front-2"]))  # the mesh: every node
    reader, writer = await asyncio.open_connection(ip, 82, local_addr=(ips["front-2"], 0))  # a pooled connection
    try:
        writer.write(b"ping")
        await writer.drain()
        assert await asyncio.wait_for(reader.readexactly(4), 5) == b"ping"
        # the mesh off, the route reflectors chosen by a label no node carries
        await env.client.patch(bgp.CONFIGS, "default", {"spec": {"nodeToNodeMeshEnabled": False}})
        await env.client.create(bgp.PEERS, {"apiVersion": "crd.projectcalico.org/v1", "kind": "BGPPeer",
                                            **peer(MASTER)})
        await settle(lambda: env.network.routes.partitioned())
        assert await _answer(ip, 82, ips["front-2"]) is None  # the other node: no answer
        await settle(lambda: answers(ips["front-1"]))  # the same node: as before (each try waits 1.5 s)
        writer.write(b"ping")  # the open connection stalls
        await writer.drain()
        stalled = asyncio.ensure_future(reader.readexactly(4))
        waiting = asyncio.ensure_future(_answer(ip, 82, ips["front-2"], timeout=30))  # a new one, retrying
        done, _ = await asyncio.wait({stalled, waiting}, timeout=1.0)
        assert not done
        # the fix: a reflector the selector names
        await env.client.patch("nodes", "node-1", {"metadata": {"labels": {"route-reflector": "true"}}})
        await env.client.patch(bgp.PEERS, "peer-with-route-reflectors", {"spec": {"peerSelector": REFLECTOR}})
        await settle(lambda: not env.network.routes.partitioned())
        assert await asyncio.wait_for(stalled, 15) == b"ping"  # the stalled segment goes through
        assert await waiting == b"ping"  # and the connection opened meanwhile is answered
        await settle(lambda: answers(ips["front-2"]))
    finally:
        writer.close()
