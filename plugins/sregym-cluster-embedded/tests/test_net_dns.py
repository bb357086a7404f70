"""Cluster DNS: the resolver's answers, the real UDP/TCP server, resolv.conf, env vars and the resolver hook."""

from __future__ import annotations

import asyncio
import os
import socket
import struct
import subprocess
import sys

import pytest
from _fixtures_ctrl import FakeKubelet, anyio_backend, settle  # noqa: F401
from sregym_cluster_embedded.client import new_local_cluster
from sregym_cluster_embedded.controllers import start_controllers
from sregym_cluster_embedded.network import HOOK_DIR, build_service_env, pod_resolv_conf, start_network
from sregym_cluster_embedded.network import dnswire as w
from sregym_cluster_embedded.settings import ClusterSettings

pytestmark = pytest.mark.anyio


@pytest.fixture
async def net(tmp_path):
    settings = ClusterSettings(state_dir=tmp_path, pod_cidr_prefix="127.201", service_cidr_prefix="127.202")
    client = new_local_cluster(settings)
    kubelet = FakeKubelet(client)
    await kubelet.start()
    ctrl = start_controllers(client, settings, only=["scheduler", "endpoints", "statefulset"])
    network = await start_network(client, settings)
    await client.create("services", {"metadata": {"name": "web"}, "spec": {
        "selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}, "default")
    await client.create("services", {"metadata": {"name": "db"}, "spec": {
        "clusterIP": "None", "selector": {"app": "db"}, "ports": [{"port": 5432}]}}, "default")
    await client.create("services", {"metadata": {"name": "ext"}, "spec": {
        "type": "ExternalName", "externalName": "example.com"}}, "default")
    await client.create("statefulsets.apps", {"metadata": {"name": "db"}, "spec": {
        "replicas": 2, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
        "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "m", "image": "x"}]}}}}, "default")
    yield network
    await network.stop()
    await ctrl.stop()
    await kubelet.stop()


def ask(server, name: str, qtype: int = w.TYPE_A, tcp: bool = False):
    query = w.build_query(4242, name, qtype)
    if tcp:
        with socket.create_connection((server.host, server.port), timeout=2) as sock:
            sock.sendall(struct.pack("!H", len(query)) + query)
            size = struct.unpack("!H", sock.recv(2))[0]
            data = b""
            while len(data) < size:
                data += sock.recv(size - len(data))
    else:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.settimeout(2)
            sock.sendto(query, (server.host, server.port))
            data = sock.recv(4096)
    rcode, answers = w.parse_answers(data)
    return rcode, [(t, socket.inet_ntoa(d) if t == w.TYPE_A else d) for _, t, d in answers]


async def in_thread(fn, *args, **kw):
    return await asyncio.get_running_loop().run_in_executor(None, lambda: fn(*args, **kw))


async def test_answers_over_udp_and_tcp(net):
    dns = net.dns
    web = await net.client.get("services", "web", "default")
    assert dns.host == "127.202.0.10"
    assert await in_thread(ask, dns, "web.default.svc.cluster.local") == (w.NOERROR, [(w.TYPE_A, web["spec"]["clusterIP"])])
    assert await in_thread(ask, dns, "web.default.svc.cluster.local", tcp=True) == (w.NOERROR, [(w.TYPE_A, web["spec"]["clusterIP"])])
    assert await in_thread(ask, dns, "web.default.svc.cluster.local", w.TYPE_AAAA) == (w.NOERROR, [])
    assert (await in_thread(ask, dns, "nope.default.svc.cluster.local"))[0] == w.NXDOMAIN
    assert (await in_thread(ask, dns, "web.nosuchns.svc.cluster.local"))[0] == w.NXDOMAIN
    assert (await in_thread(ask, dns, "example.com"))[0] == w.REFUSED  # never forwarded
    assert await in_thread(ask, dns, "127-201-3-4.default.pod.cluster.local") == (w.NOERROR, [(w.TYPE_A, "127.201.3.4")])
    rcode, answers = await in_thread(ask, dns, "_http._tcp.web.default.svc.cluster.local", w.TYPE_SRV)
    assert rcode == w.NOERROR and struct.unpack("!3H", answers[0][1][:6]) == (0, 100, 80)
    rcode, answers = await in_thread(ask, dns, "ext.default.svc.cluster.local")
    assert rcode == w.NOERROR and answers == [(w.TYPE_CNAME, b"example.com")]


async def test_reverse_lookups_name_app_services_but_not_the_hidden_namespaces(net):
    # issue #34, round 3: a PTR query from an app pod mapped a hidden Service's address to its name
    await net.client.create("namespaces", {"metadata": {"name": "shop-workload",
                                                        "labels": {"sregym.io/hidden": "true"}}}, None)
    await net.client.create("services", {"metadata": {"name": "workload-generator"}, "spec": {
        "selector": {"app": "gen"}, "ports": [{"port": 8089}]}}, "shop-workload")
    hidden = (await net.client.get("services", "workload-generator", "shop-workload"))["spec"]["clusterIP"]
    web = (await net.client.get("services", "web", "default"))["spec"]["clusterIP"]

    def ptr(ip: str) -> str:
        return ".".join(reversed(ip.split("."))) + ".in-addr.arpa"

    async def answered():
        return (await in_thread(ask, net.dns, ptr(web), w.TYPE_PTR))[0] == w.NOERROR
    await settle(answered)
    rcode, answers = await in_thread(ask, net.dns, ptr(web), w.TYPE_PTR)
    assert b"web" in answers[0][1] and b"default" in answers[0][1]
    rcode, answers = await in_thread(ask, net.dns, ptr(hidden), w.TYPE_PTR)
    assert rcode == w.NXDOMAIN and answers == []
    # its forward name still resolves (pods that must reach a hidden service, e.g. a trace collector)
    assert await in_thread(ask, net.dns, "workload-generator.shop-workload.svc.cluster.local") == (
        w.NOERROR, [(w.TYPE_A, hidden)])


async def test_headless_service_and_statefulset_hostnames(net):
    async def pods_ready():
        pods = await net.client.list("pods", "default", label_selector="app=db")
        return len(pods) == 2 and all(p["status"].get("podIP") for p in pods)
    await settle(pods_ready)
    pods = {p["metadata"]["name"]: p["status"]["podIP"] for p in await net.client.list("pods", "default")}

    async def answered():
        rcode, answers = await in_thread(ask, net.dns, "db.default.svc.cluster.local")
        return sorted(ip for _, ip in answers) == sorted(pods.values())
    await settle(answered)
    assert await in_thread(ask, net.dns, "db-1.db.default.svc.cluster.local") == (w.NOERROR, [(w.TYPE_A, pods["db-1"])])


async def test_malformed_packets_do_not_stop_the_server(net):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(b"\x00\x01garbage", (net.dns.host, net.dns.port))
        sock.sendto(b"\x00", (net.dns.host, net.dns.port))
    assert (await in_thread(ask, net.dns, "web.default.svc.cluster.local"))[0] == w.NOERROR


def test_resolv_conf_policies():
    settings = ClusterSettings(service_cidr_prefix="127.202")
    pod = {"metadata": {"namespace": "shop"}, "spec": {}}
    assert pod_resolv_conf(pod, settings=settings, dns_address="127.202.0.10") == (
        "nameserver 127.202.0.10\nsearch shop.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5\n")
    custom = {"metadata": {"namespace": "shop"}, "spec": {"dnsPolicy": "None", "dnsConfig": {
        "nameservers": ["8.8.8.8"], "searches": ["corp"], "options": [{"name": "ndots", "value": "2"}]}}}
    text = pod_resolv_conf(custom, settings=settings, dns_address="127.202.0.10")
    assert "8.8.8.8" not in text and text.startswith("nameserver 127.202.255.254\n") and "options ndots:2" in text


def test_service_env_vars_shape():
    svc = {"metadata": {"name": "redis-master", "creationTimestamp": "x"}, "spec": {
        "clusterIP": "127.43.0.7", "ports": [{"name": "redis", "port": 6379, "protocol": "TCP"}]}}
    env = build_service_env([svc])
    assert env["REDIS_MASTER_SERVICE_HOST"] == "127.43.0.7" and env["REDIS_MASTER_SERVICE_PORT"] == "6379"
    assert env["REDIS_MASTER_SERVICE_PORT_REDIS"] == "6379"
    assert env["REDIS_MASTER_PORT"] == "tcp://127.43.0.7:6379"
    assert env["REDIS_MASTER_PORT_6379_TCP_ADDR"] == "127.43.0.7" and env["REDIS_MASTER_PORT_6379_TCP_PROTO"] == "tcp"


async def test_network_env_and_python_hook_resolve_cluster_names(net):
    env_vars = net.service_env("default")
    web = await net.client.get("services", "web", "default")
    assert env_vars["WEB_SERVICE_HOST"] == web["spec"]["clusterIP"] and "KUBERNETES_SERVICE_HOST" in env_vars
    pod = {"metadata": {"namespace": "default"}, "spec": {}}
    env = dict(os.environ, **net.dns_env(pod))
    assert env["PYTHONPATH"] == str(HOOK_DIR)
    script = ("import socket\n"
              "print(socket.gethostbyname('web'))\n"
              "print(socket.getaddrinfo('web.default', 80, type=socket.SOCK_STREAM)[0][4])\n"
              "print(socket.gethostbyname('localhost'))\n"
              "try:\n    socket.getaddrinfo('example.com', 80)\nexcept socket.gaierror:\n    print('refused')\n")
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", script, env=env,
                                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 20)
    lines = out.decode().split("\n")
    assert lines[0] == web["spec"]["clusterIP"], err.decode()
    assert lines[1] == f"('{web['spec']['clusterIP']}', 80)" and lines[2] == "127.0.0.1" and lines[3] == "refused"


@pytest.mark.needs_root
async def test_private_resolv_conf_lets_glibc_resolve_cluster_names(net, tmp_path):
    from sregym_cluster_embedded.network import private_resolv_argv

    if net.dns.port != 53:
        pytest.skip("port 53 of the DNS address is taken on this machine")
    conf = tmp_path / "resolv.conf"
    conf.write_text(net.resolv_conf({"metadata": {"namespace": "default"}, "spec": {}}))
    argv = private_resolv_argv(["getent", "ahostsv4", "web"], conf)
    if argv is None:
        pytest.skip("needs root and unshare")
    host_resolv = open("/etc/resolv.conf").read()
    proc = await asyncio.create_subprocess_exec(*argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 20)
    web = await net.client.get("services", "web", "default")
    assert out.decode().split()[0] == web["spec"]["clusterIP"], err.decode()
    assert open("/etc/resolv.conf").read() == host_resolv  # the bind mount stayed private
