"""Service proxy over real TCP: refused without endpoints, round-robin, ClientIP affinity, NetworkPolicy, delay."""

from __future__ import annotations

import asyncio
import contextlib
import time

import pytest
from _fixtures_ctrl import FakeKubelet, anyio_backend, settle  # noqa: F401
from _fixtures_net import Env, two_node_network
from sregym_cluster_embedded.client import new_local_cluster
from sregym_cluster_embedded.controllers import start_controllers
from sregym_cluster_embedded.network import start_network
from sregym_cluster_embedded.settings import ClusterSettings

pytestmark = pytest.mark.anyio


@pytest.fixture
async def env(tmp_path):
    settings = ClusterSettings(state_dir=tmp_path, pod_cidr_prefix="127.203", service_cidr_prefix="127.204")
    client = new_local_cluster(settings)
    kubelet = FakeKubelet(client, ip_prefix="127.203")
    await kubelet.start()
    ctrl = start_controllers(client, settings, only=["scheduler", "endpoints"])
    network = await start_network(client, settings)
    e = Env(client, kubelet, network)
    yield e
    for server in e.servers:
        server.close()
    await network.stop()
    await ctrl.stop()
    await kubelet.stop()


async def fetch(ip, port, *, source=None, timeout=2.0) -> bytes:
    reader, writer = await asyncio.wait_for(asyncio.open_connection(ip, port, local_addr=(source, 0) if source else None), timeout)
    try:
        return await asyncio.wait_for(reader.read(), timeout)
    finally:
        writer.close()


async def refused(ip, port) -> bool:
    try:
        await fetch(ip, port, timeout=1)
    except ConnectionRefusedError:
        return True
    except Exception:
        return False
    return False


async def test_balancing_refusal_and_affinity(env: Env):
    svc = await env.client.create("services", {"metadata": {"name": "web"}, "spec": {
        "selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}}, "default")
    ip = svc["spec"]["clusterIP"]
    assert ip.startswith("127.204.")
    assert await refused(ip, 80)  # no endpoints yet: like kube-proxy's REJECT
    await env.pod("web-a", {"app": "web"})
    await env.pod("web-b", {"app": "web"})

    async def both():
        with contextlib.suppress(OSError, asyncio.TimeoutError):
            seen = {await fetch(ip, 80) for _ in range(4)}
            return seen == {b"web-a", b"web-b"}
        return False
    await settle(both)
    await env.client.patch("services", "web", {"spec": {"sessionAffinity": "ClientIP"}}, "default")

    async def sticky():  # round robin answers from both until the proxy has taken the change
        return len({await fetch(ip, 80) for _ in range(6)}) == 1
    await settle(sticky)
    env.kubelet.unready.update({"web-a", "web-b"})
    await settle(lambda: refused(ip, 80))


async def test_network_policy_and_delay(env: Env):
    svc = await env.client.create("services", {"metadata": {"name": "api"}, "spec": {
        "selector": {"app": "api"}, "ports": [{"port": 81, "targetPort": 8080}]}}, "default")
    ip = svc["spec"]["clusterIP"]
    await env.pod("api-0", {"app": "api"})
    frontend_ip = await env.pod("front", {"role": "frontend"}, serve=False)
    other_ip = await env.pod("other", {"role": "batch"}, serve=False)
    await settle(lambda: _ok(fetch(ip, 81)))
    await env.client.create("networkpolicies.networking.k8s.io", {"metadata": {"name": "api-ingress"}, "spec": {
        "podSelector": {"matchLabels": {"app": "api"}}, "policyTypes": ["Ingress"],
        "ingress": [{"from": [{"podSelector": {"matchLabels": {"role": "frontend"}}}], "ports": [{"port": 8080}]}]}}, "default")

    async def other_dropped() -> bool:  # answered until the proxy has taken the policy; then dropped, not refused
        try:
            await fetch(ip, 81, source=other_ip, timeout=0.5)
        except asyncio.TimeoutError:
            return True
        except Exception:
            return False
        return False
    await settle(other_dropped)
    assert await fetch(ip, 81, source=frontend_ip) == b"api-0"
    with pytest.raises(asyncio.TimeoutError):
        await fetch(ip, 81, timeout=0.5)  # the host is no pod: default deny applies
    env.network.set_delay("api", 3000)
    start = time.monotonic()
    assert await fetch(ip, 81, source=frontend_ip, timeout=30) == b"api-0"
    assert time.monotonic() - start >= 3.0
    env.network.clear_faults()
    start = time.monotonic()
    await fetch(ip, 81, source=frontend_ip)
    assert time.monotonic() - start < 3.0  # suite-rules: outer-bound (the delay it had is 3 s; none now)


async def _ok(coro) -> bool:
    try:
        return bool(await coro)
    except Exception:
        return False


async def test_node_port_listens_on_every_node_ip(env: Env):
    await env.client.patch("nodes", "node-1", {"status": {"addresses": [{"type": "InternalIP", "address": "127.203.1.1"}]}},
                           subresource="status")
    svc = await env.client.create("services", {"metadata": {"name": "np"}, "spec": {
        "type": "NodePort", "selector": {"app": "np"}, "ports": [{"port": 82, "targetPort": 8080}]}}, "default")
    node_port = svc["spec"]["ports"][0]["nodePort"]
    assert 30000 <= node_port <= 32767
    await env.pod("np-0", {"app": "np"})
    await settle(lambda: _ok(fetch("127.203.1.1", node_port)))
    assert await fetch("127.203.1.1", node_port) == b"np-0"
    assert await fetch(svc["spec"]["clusterIP"], 82) == b"np-0"


async def test_load_balancer_gets_a_node_ip_ingress(env: Env):
    await env.client.patch("nodes", "node-1", {"status": {"addresses": [{"type": "InternalIP", "address": "127.203.1.1"}]}},
                           subresource="status")
    await env.client.create("services", {"metadata": {"name": "lb"}, "spec": {
        "type": "LoadBalancer", "selector": {"app": "lb"}, "ports": [{"port": 8443, "targetPort": 8080}]}}, "default")
    await env.pod("lb-0", {"app": "lb"})

    async def assigned():
        svc = await env.client.get("services", "lb", "default")
        return ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") == [{"ip": "127.203.1.1", "ipMode": "VIP"}]
    await settle(assigned)
    await settle(lambda: _ok(fetch("127.203.1.1", 8443)))
    assert await fetch("127.203.1.1", 8443) == b"lb-0"


@pytest.fixture
async def two_nodes(tmp_path):
    async with two_node_network(tmp_path, "127.205", "127.206") as env:
        yield env


async def test_internal_traffic_policy_local_keeps_traffic_on_the_callers_node(two_nodes: Env):
    env = two_nodes
    svc = await env.client.create("services", {"metadata": {"name": "geo"}, "spec": {
        "selector": {"app": "geo"}, "ports": [{"port": 82, "targetPort": 8080}]}}, "default")
    ip = svc["spec"]["clusterIP"]
    for name, node in (("geo-0", "node-1"), ("front-1", "node-1"), ("front-2", "node-2")):
        labels = {"app": "geo"} if name.startswith("geo") else {"role": "frontend"}
        await env.client.create("pods", {"metadata": {"name": name, "labels": labels}, "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "containers": [{"name": "m", "image": "x", "ports": [{"containerPort": 8080}]}]}}, "default")
    ips = {}
    for name in ("geo-0", "front-1", "front-2"):
        async def has_ip(name=name):
            return (await env.client.get("pods", name, "default")).get("status", {}).get("podIP")
        await settle(has_ip)
        ips[name] = (await env.client.get("pods", name, "default"))["status"]["podIP"]

    async def reply(reader, writer):
        writer.write(b"geo-0")
        await writer.drain()
        writer.close()
    env.servers.append(await asyncio.start_server(reply, ips["geo-0"], 8080))
    await settle(lambda: _ok(fetch(ip, 82, source=ips["front-2"])))  # Cluster: any node
    await env.client.patch("services", "geo", {"spec": {"internalTrafficPolicy": "Local"}}, "default")
    await settle(lambda: (env.network.view.services.get("default", "geo") or {}).get("spec", {})
                 .get("internalTrafficPolicy") == "Local")
    assert await fetch(ip, 82, source=ips["front-1"]) == b"geo-0"  # same node
    assert await fetch(ip, 82, source=ips["front-2"]) == b""  # no local endpoint: dropped


async def test_a_fault_set_later_impairs_an_open_connection_and_clearing_heals_it(env: Env):
    """Like netem on an interface: a delay set while a (gRPC-style, long-lived) connection is open slows
    that connection's responses too, not only connections opened afterwards; clearing it heals them,
    a segment stalled by loss included (it goes out with its next retransmission)."""
    svc = await env.client.create("services", {"metadata": {"name": "echo"}, "spec": {
        "selector": {"app": "echo"}, "ports": [{"port": 83, "targetPort": 8080}]}}, "default")
    ip = svc["spec"]["clusterIP"]
    pod_ip = await env.pod("echo-0", {"app": "echo"}, serve=False)

    async def echo(reader, writer):
        while data := await reader.read(1024):
            writer.write(data)
            await writer.drain()
        writer.close()
    env.servers.append(await asyncio.start_server(echo, pod_ip, 8080))

    async def opened():
        try:
            _r, w = await asyncio.wait_for(asyncio.open_connection(ip, 83), 5)
        except (TimeoutError, OSError):
            return False
        w.close()
        return True
    await settle(opened)
    reader, writer = await asyncio.open_connection(ip, 83)

    async def round_trip() -> float:
        start = time.monotonic()
        writer.write(b"ping")
        await writer.drain()
        assert await asyncio.wait_for(reader.readexactly(4), 30) == b"ping"
        return time.monotonic() - start

    try:
        assert await round_trip() < 3.0  # no delay: far below the one set next
        env.network.set_delay("default/echo-0", 3000)  # on the backend pod, as the network-delay fault sets it
        assert await round_trip() >= 3.0
        env.network.set_loss("default/echo-0", 100.0)  # every segment lost: the open connection stalls
        env.network.set_delay("default/echo-0", 0)
        writer.write(b"ping")
        await writer.drain()
        answer = asyncio.ensure_future(reader.readexactly(4))
        done, _ = await asyncio.wait({answer}, timeout=1.0)
        assert not done  # stalled
        cleared = time.monotonic()
        env.network.clear_faults("default/echo-0")
        # the stalled segment goes out with its next retransmission (back-off 0.2+0.4+0.8 s so far):
        # within the back-off already running, and the connection is healthy again after it
        assert await asyncio.wait_for(answer, 60) == b"ping", time.monotonic() - cleared
        assert await round_trip() < 3.0
    finally:
        writer.close()
    reader, writer = await asyncio.open_connection(ip, 83)  # and a new connection is healthy at once
    try:
        assert await round_trip() < 3.0
    finally:
        writer.close()


async def test_hand_written_endpoints_reach_only_the_services_own_pods(env: Env):
    """A selectorless Service with Endpoints written by hand (issue 34, attack 4): a host listener
    (the agent API, a generator) and another namespace's pod get no traffic; the namespace's own pod does."""
    async def host_reply(reader, writer):
        writer.write(b"host")
        await writer.drain()
        writer.close()
    host = await asyncio.start_server(host_reply, "127.0.0.1", 0)
    env.servers.append(host)
    host_port = host.sockets[0].getsockname()[1]
    await env.client.create("namespaces", {"metadata": {"name": "other"}})
    await env.client.create("pods", {"metadata": {"name": "elsewhere"}, "spec": {
        "containers": [{"name": "m", "image": "x"}]}}, "other")

    async def other_ip():
        return (await env.client.get("pods", "elsewhere", "other")).get("status", {}).get("podIP")
    await settle(other_ip)
    elsewhere = await other_ip()
    own = await env.pod("own", {"app": "own"})
    svc = await env.client.create("services", {"metadata": {"name": "side"}, "spec": {
        "ports": [{"port": 82, "targetPort": 8080}]}}, "default")
    ip = svc["spec"]["clusterIP"]

    async def point_at(addr: str, port: int, pod: str | None = None) -> None:
        address = {"ip": addr, **({"targetRef": {"kind": "Pod", "name": pod, "namespace": "default"}} if pod else {})}
        body = {"metadata": {"name": "side"}, "subsets": [{"addresses": [address], "ports": [{"port": port}]}]}
        with contextlib.suppress(Exception):
            await env.client.delete("endpoints", "side", "default")
        await env.client.create("endpoints", body, "default")
        await asyncio.sleep(0.3)

    await point_at("127.0.0.1", host_port)
    assert await refused(ip, 82)  # no forwardable endpoint: no listener at all
    await point_at(elsewhere, 8080)
    assert await refused(ip, 82)
    await point_at(elsewhere, 8080, pod="own")  # a targetRef that does not match the address
    assert await refused(ip, 82)
    await point_at(own, 8080, pod="own")

    async def served():
        with contextlib.suppress(OSError, asyncio.TimeoutError):
            return await fetch(ip, 82) == b"own"
        return False
    await settle(served)
