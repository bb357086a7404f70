"""Node agent features beyond the basics: node stop/start, fault env, hostPort conflicts, gRPC and
startup probes, downward API and projected volumes, TTY exec, image change on a live pod."""

from __future__ import annotations

import asyncio
import json
import random
import time

import pytest
from _fixtures_node import (
    condition,
    container_status,
    events_for,
    node_cluster,
    pod_getter,
    pod_manifest,
    read_all,
    wait_for,
)

pytestmark = pytest.mark.slow

GRPC_SERVER = """
import grpc, os, time
from concurrent import futures
state = {'n': 0}
def check(request, context):
    state['n'] += 1
    return b'\\x08\\x01' if os.path.exists('healthy') else b'\\x08\\x02'
handler = grpc.method_handlers_generic_handler('grpc.health.v1.Health', {
    'Check': grpc.unary_unary_rpc_method_handler(check, request_deserializer=lambda b: b, response_serializer=lambda b: b)})
server = grpc.server(futures.ThreadPoolExecutor(2)); server.add_generic_rpc_handlers((handler,))
server.add_insecure_port('0.0.0.0:9000'); server.start(); server.wait_for_termination()
"""


def run(coro):
    return asyncio.run(coro)


def test_stop_node_keeps_pods_running_and_start_node_resumes():
    async def body():
        async with node_cluster() as (client, nodes):
            await client.create("pods", pod_manifest("p", [{"name": "c", "image": "busybox", "command": ["sleep", "60"]}]))
            await wait_for(pod_getter(client, "p"), lambda p: p["status"].get("phase") == "Running")
            lease = await client.get("leases.coordination.k8s.io", "node-1", "kube-node-lease")
            assert lease["spec"]["holderIdentity"] == "node-1"
            node = await client.get("nodes", "node-1")
            assert condition(node, "Ready")["status"] == "True"
            assert node["status"]["allocatable"]["pods"] == "110"
            await nodes.stop_node("node-1")
            runner = nodes.agents["node-1"].find("default", "p").runners[0]
            pid = runner.process.pid
            await client.delete("pods", "p", "default")  # nobody finishes the deletion while the kubelet is down
            await asyncio.sleep(0.5)
            assert runner.running()
            assert (await client.get("pods", "p", "default"))["metadata"]["deletionTimestamp"]
            await nodes.start_node("node-1")

            async def gone():
                try:
                    await client.get("pods", "p", "default")
                    return {"gone": False}
                except Exception as exc:  # noqa: BLE001
                    return {"gone": exc.code == 404}
            await wait_for(gone, lambda r: r["gone"], timeout=10)
            assert runner.process.returncode is not None and runner.process.pid == pid
    run(body())


def test_fault_env_reaches_new_processes_only():
    async def body():
        async with node_cluster() as (client, nodes):
            await client.create("pods", pod_manifest("old", [{"name": "c", "image": "busybox", "command": ["sleep", "60"]}]))
            await wait_for(pod_getter(client, "old"), lambda p: p["status"].get("phase") == "Running")
            nodes.set_fault_env("node-1", {"FAULT_MARK": "armed"})
            await client.create("pods", pod_manifest("new", [{"name": "c", "image": "busybox",
                                                              "command": ["sh", "-c", "echo mark=$FAULT_MARK; sleep 60"]}]))
            await wait_for(pod_getter(client, "new"), lambda p: p["status"].get("phase") == "Running")
            await asyncio.sleep(0.3)
            assert b"mark=armed" in await read_all(nodes.runtime.read_log("default", "new", "c"))
            old_env = nodes.agents["node-1"].find("default", "old").runners[0].context.env
            assert "FAULT_MARK" not in old_env
    run(body())


def test_host_port_forwards_and_conflict_is_rejected():
    async def body():
        async with node_cluster() as (client, nodes):
            host_port = random.randint(20000, 29999)
            container = {"name": "c", "image": "python:3.11", "command": ["python", "-m", "http.server", "8080"],
                         "ports": [{"containerPort": 8080, "hostPort": host_port}],
                         "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1}}
            await client.create("pods", pod_manifest("a", [container]))
            await wait_for(pod_getter(client, "a"), lambda p: condition(p, "Ready").get("status") == "True")
            reader, writer = await asyncio.open_connection(nodes.agents["node-1"].host_ip, host_port)
            writer.write(b"GET / HTTP/1.0\r\n\r\n")
            assert (await reader.read()).startswith(b"HTTP/1.0 200")
            writer.close()
            await client.create("pods", pod_manifest("b", [container]))
            pod = await wait_for(pod_getter(client, "b"), lambda p: p["status"].get("phase") == "Failed")
            assert pod["status"]["reason"] == "NodePorts"
            assert "Predicate NodePorts failed" in pod["status"]["message"]
    run(body())


PORT_CLIENT = """
import errno, json, socket, sys
kept, out = [], []
for _ in range(6):
    s = socket.socket()
    try:
        s.connect((sys.argv[1], 8080))
        out.append(s.getsockname()[1]); kept.append(s)
    except OSError as e:
        out.append(errno.errorcode[e.errno])
print("ports=" + json.dumps(out), flush=True)
"""


def test_pod_sysctls_admission_value_check_and_the_local_port_range():
    """The kubelet's SysctlForbidden, the runtime's refused value, and a pod's
    ip_local_port_range on its own processes (the node without the network guard: the shim's
    fallback, named by a SysctlNotApplied event; the cgroup program is node/portrange.py's test)."""
    def sysctl(value: str, name: str = "net.ipv4.ip_local_port_range") -> dict:
        return {"securityContext": {"sysctls": [{"name": name, "value": value}]}}

    async def body():
        async with node_cluster() as (client, nodes):
            sleeper = [{"name": "c", "image": "python:3.11", "command": ["sleep", "60"]}]
            await client.create("pods", pod_manifest("unsafe", sleeper, **sysctl("4096", "net.core.somaxconn")))
            pod = await wait_for(pod_getter(client, "unsafe"), lambda p: p["status"].get("phase") == "Failed")
            assert pod["status"]["reason"] == "SysctlForbidden"
            assert pod["status"]["message"] == \
                'Pod was rejected: forbidden sysctl: "net.core.somaxconn" not allowlisted'
            await client.create("pods", pod_manifest("inverted", sleeper, **sysctl("32003 32000")))
            await wait_for(lambda: events_for(client, "inverted"), lambda evs: any(
                e["reason"] == "FailedCreatePodSandBox" and "invalid argument" in e["message"] for e in evs))
            assert (await client.get("pods", "inverted", "default"))["status"].get("phase") == "Pending"
            if nodes.net_guard is None and nodes.agents["node-1"].shim is None:
                pytest.skip("neither the cgroup program (network guard) nor the shim (a C compiler) here")
            await client.create("pods", pod_manifest("server", [{
                "name": "c", "image": "python:3.11", "command": ["python", "-m", "http.server", "8080"],
                "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1}}]))
            server = await wait_for(pod_getter(client, "server"), lambda p: condition(p, "Ready").get("status") == "True")
            await client.create("pods", pod_manifest("client", [{
                "name": "c", "image": "python:3.11", "command": ["python", "-c", PORT_CLIENT, server["status"]["podIP"]]}],
                restartPolicy="Never", **sysctl("32020 32023")))
            await wait_for(pod_getter(client, "client"), lambda p: p["status"].get("phase") == "Succeeded")
            log = (await read_all(nodes.runtime.read_log("default", "client", "c"))).decode()
            ports = json.loads(log.split("ports=", 1)[1])
            assert sorted(ports[:4]) == [32020, 32021, 32022, 32023]
            assert ports[4:] == ["EADDRNOTAVAIL", "EADDRNOTAVAIL"]
            if nodes.net_guard is None:  # this fixture's nodes: no guard, so the shim applied it
                events = await events_for(client, "client")
                assert any(e["reason"] == "SysctlNotApplied" and "statically linked" in e["message"] for e in events)
    run(body())


def test_grpc_and_startup_probes():
    pytest.importorskip("grpc")

    async def body():
        async with node_cluster() as (client, nodes):
            await client.create("pods", pod_manifest("g", [{
                # the work dir is writable: pods run as a non-root user by default
                "name": "g", "image": "python:3.11", "workingDir": "/tmp", "command": ["python", "-c", GRPC_SERVER],
                "startupProbe": {"tcpSocket": {"port": 9000}, "periodSeconds": 1, "failureThreshold": 50},
                "readinessProbe": {"grpc": {"port": 9000}, "periodSeconds": 1}}]))
            pod = await wait_for(pod_getter(client, "g"), lambda p: container_status(p).get("started"))
            assert condition(pod, "Ready")["status"] == "False"
            await wait_for(lambda: events_for(client, "g"), lambda evs: any(
                'Readiness probe failed: service unhealthy (responded with "NOT_SERVING")' in e["message"] for e in evs))
            proc = await nodes.runtime.exec("default", "g", "g", ["touch", "healthy"])
            assert await proc.wait() == 0
            await wait_for(pod_getter(client, "g"), lambda p: condition(p, "Ready").get("status") == "True")
    run(body())


def test_downward_api_and_projected_volumes():
    def token_source(pod: dict, projection: dict) -> str:
        return f"tok-{pod['metadata']['namespace']}-{projection.get('path')}"

    async def body():
        async with node_cluster(token_source=token_source) as (client, nodes):
            await client.create("configmaps", {"metadata": {"name": "cm", "namespace": "default"}, "data": {"k": "v1"}})
            manifest = pod_manifest("dw", [{
                "name": "c", "image": "busybox", "command": ["sleep", "60"],
                "resources": {"limits": {"memory": "64Mi", "cpu": "250m"}},
                "env": [{"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
                        {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}],
                "volumeMounts": [{"name": "info", "mountPath": "/etc/podinfo"}, {"name": "all", "mountPath": "/etc/all"}]}],
                volumes=[{"name": "info", "downwardAPI": {"items": [
                    {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                    {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}}]}},
                    {"name": "all", "projected": {"sources": [
                        {"configMap": {"name": "cm"}},
                        {"downwardAPI": {"items": [{"path": "ns", "fieldRef": {"fieldPath": "metadata.namespace"}}]}},
                        {"serviceAccountToken": {"path": "token"}}]}}])
            manifest["metadata"]["labels"] = {"tier": "db"}
            await client.create("pods", manifest)
            await wait_for(pod_getter(client, "dw"), lambda p: p["status"].get("phase") == "Running")
            proc = await nodes.runtime.exec("default", "dw", "c", [
                "sh", "-c", "cat /etc/podinfo/labels; echo; cat /etc/podinfo/name /etc/all/k /etc/all/ns; echo; "
                            "cat /etc/all/token; echo; echo $MEM $CPU"])
            out = (await proc.stdout.read()).decode()
            assert 'tier="db"' in out and "dwv1default" in out.replace("\n", "")
            assert "tok-default-token" in out and "64 1" in out
            await client.patch("configmaps", "cm", {"data": {"k": "v2"}}, "default")
            worker = nodes.agents["node-1"].find("default", "dw")
            await worker._builder.refresh()  # the periodic sync, without waiting for it
            proc = await nodes.runtime.exec("default", "dw", "c", ["cat", "/etc/all/k"])
            assert (await proc.stdout.read()) == b"v2"
    run(body())


def test_tty_exec_and_image_change_restarts_container():
    async def body():
        async with node_cluster() as (client, nodes):
            await client.create("pods", pod_manifest("t", [{"name": "c", "image": "busybox", "command": ["sleep", "60"]}]))
            await wait_for(pod_getter(client, "t"), lambda p: p["status"].get("phase") == "Running")
            proc = await nodes.runtime.exec("default", "t", "c", ["sh", "-c", "tty >/dev/null && echo is-a-tty"], tty=True)
            out = await asyncio.wait_for(proc.stdout.read(), 5)
            assert await proc.wait() == 0
            assert b"is-a-tty" in out
            pod = await client.get("pods", "t", "default")
            pod["spec"]["containers"][0]["image"] = "alpine"
            await client.update("pods", pod)
            pod = await wait_for(pod_getter(client, "t"), lambda p: container_status(p).get("image") == "alpine"
                                 and "running" in container_status(p).get("state", {}))
            assert container_status(pod)["restartCount"] == 1
    run(body())


def test_post_start_and_pre_stop_hooks_run():
    async def body():
        async with node_cluster() as (client, nodes):
            mounts = [{"name": "host", "mountPath": "/hooks"}]
            await client.create("pods", pod_manifest("hooks", [{
                "name": "c", "image": "busybox", "command": ["sh", "-c", "trap 'echo term >> /hooks/log; exit 0' TERM; "
                                                                          "while :; do sleep 0.1; done"],
                "volumeMounts": mounts, "securityContext": {"runAsUser": 0},  # writes to a root-owned hostPath
                "lifecycle": {"postStart": {"exec": {"command": ["sh", "-c", "echo poststart >> /hooks/log"]}},
                              "preStop": {"exec": {"command": ["sh", "-c", "echo prestop >> /hooks/log"]}}}}],
                volumes=[{"name": "host", "hostPath": {"path": "/var/hooks", "type": "DirectoryOrCreate"}}]))
            await wait_for(pod_getter(client, "hooks"), lambda p: p["status"].get("phase") == "Running")
            await asyncio.sleep(0.5)
            await client.delete("pods", "hooks", "default")
            log = nodes.agents["node-1"].root / "host" / "var" / "hooks" / "log"

            async def lines():
                return {"lines": log.read_text().split() if log.exists() else []}
            # preStop, then SIGTERM, run one after the other through exec and the node agent's loop:
            # on a busy 2-core machine (the full suite) that once took longer than 10 s
            result = await wait_for(lines, lambda r: "term" in r["lines"], timeout=40)
            assert result["lines"] == ["poststart", "prestop", "term"]
    run(body())


def test_active_deadline_and_fallback_termination_message():
    async def body():
        async with node_cluster() as (client, _):
            await client.create("pods", pod_manifest("late", [{"name": "c", "image": "busybox", "command": ["sleep", "60"]}],
                                                     activeDeadlineSeconds=1))
            await client.create("pods", pod_manifest("msg", [{
                "name": "c", "image": "busybox", "command": ["sh", "-c", "echo first; echo last words; exit 2"],
                "terminationMessagePolicy": "FallbackToLogsOnError"}], restartPolicy="Never"))
            pod = await wait_for(pod_getter(client, "late"), lambda p: p["status"].get("phase") == "Failed")
            assert pod["status"]["reason"] == "DeadlineExceeded"
            pod = await wait_for(pod_getter(client, "msg"), lambda p: p["status"].get("phase") == "Failed")
            terminated = container_status(pod)["state"]["terminated"]
            assert terminated["exitCode"] == 2 and terminated["message"] == "first\nlast words"
    run(body())


def test_python_fallback_without_the_preload_shim_binds_pod_ips():
    async def body():
        async with node_cluster(preload_shim=False) as (client, _):
            server = "import http.server as h; h.HTTPServer(('0.0.0.0', 8080), h.SimpleHTTPRequestHandler).serve_forever()"
            for name in ("one", "two"):  # same port, two pods: only works when each binds its pod IP
                await client.create("pods", pod_manifest(name, [{
                    "name": "c", "image": "python:3.11", "command": ["python", "-c", server],
                    "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1}}]))
            for name in ("one", "two"):
                pod = await wait_for(pod_getter(client, name), lambda p: condition(p, "Ready").get("status") == "True")
                assert container_status(pod)["restartCount"] == 0
                assert "LD_PRELOAD" not in str(pod)
    run(body())


def test_disk_pressure_shows_in_node_conditions(monkeypatch):
    from collections import namedtuple

    from sregym_cluster_embedded.node import kubelet

    async def body():
        async with node_cluster() as (client, nodes):
            agent = nodes.agents["node-1"]
            assert condition(await client.get("nodes", "node-1"), "DiskPressure")["status"] == "False"
            usage = namedtuple("usage", "total used free percent")
            monkeypatch.setattr(kubelet.psutil, "disk_usage", lambda _path: usage(100, 95, 5, 95.0))
            # the cluster-wide configuration ignores the host's disk (kind's 0%); the node's drop-in
            # brings back the kubelet's default floor
            assert agent.pressure()[1] is False
            await client.patch("configmaps", "kubelet-config-node-1",
                               {"data": {"kubelet": "evictionHard:\n  nodefs.available: 10%\n"}}, "kube-system")
            await agent.eviction.reload(force=True)
            assert agent.pressure()[1] is True
            await agent._update_node_status()
            node = await client.get("nodes", "node-1")
            assert condition(node, "DiskPressure")["status"] == "True"
            assert condition(node, "DiskPressure")["reason"] == "KubeletHasDiskPressure"
    run(body())


def test_ephemeral_debug_container_runs_once_with_logs():
    async def body():
        async with node_cluster() as (client, nodes):
            await client.create("pods", pod_manifest("app", [{"name": "c", "image": "busybox", "command": ["sleep", "60"]}]))
            await wait_for(pod_getter(client, "app"), lambda p: p["status"].get("phase") == "Running")
            pod = await client.get("pods", "app", "default")
            pod["spec"]["ephemeralContainers"] = [{"name": "debugger", "image": "busybox",
                                                   "command": ["sh", "-c", "echo debugging $HOSTNAME"]}]
            await client.update("pods", pod, subresource="ephemeralcontainers")
            pod = await wait_for(pod_getter(client, "app"), lambda p: any(
                "terminated" in s["state"] for s in p["status"].get("ephemeralContainerStatuses") or []))
            status = pod["status"]["ephemeralContainerStatuses"][0]
            assert status["state"]["terminated"]["exitCode"] == 0 and status["restartCount"] == 0
            assert await read_all(nodes.runtime.read_log("default", "app", "debugger")) == b"debugging app\n"
            assert container_status(pod)["restartCount"] == 0  # the app container was left alone
    run(body())


def test_exit_of_main_process_ends_container_even_with_leftover_children():
    async def body():
        async with node_cluster() as (client, nodes):
            # the background sleep keeps stdout open; the container still ends with its main process
            await client.create("pods", pod_manifest("bg", [{"name": "c", "image": "busybox",
                                                            "command": ["sh", "-c", "sleep 60 & sleep 0.5; exit 4"]}],
                                                     restartPolicy="Never"))
            started = time.monotonic()
            pod = await wait_for(pod_getter(client, "bg"), lambda p: p["status"].get("phase") == "Failed", timeout=55)
            assert time.monotonic() - started < 55  # suite-rules: outer-bound (the background sleep holds stdout 60 s)
            assert container_status(pod)["state"]["terminated"]["exitCode"] == 4
            runner = nodes.agents["node-1"].find("default", "bg").runners[0]
            assert not runner.group.pids()  # the leftover sleep was killed with the container
    run(body())


def test_finished_execs_are_forgotten_so_the_stop_never_kills_a_reused_pid():
    async def body():
        async with node_cluster() as (client, nodes):
            await client.create("pods", pod_manifest("probed", [{
                "name": "c", "image": "busybox", "command": ["sleep", "60"],
                "readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 1}}]))
            await wait_for(pod_getter(client, "probed"), lambda p: condition(p, "Ready").get("status") == "True")
            await asyncio.sleep(3)  # a few more probes, each an exec that exits
            # what is left is the container's main process; an exited probe's PID may already
            # belong to another process, which the node's stop would kill
            await wait_for(lambda: asyncio.sleep(0, {"pids": sorted(nodes.pids)}),
                           lambda r: len(r["pids"]) == 1, timeout=10)
    run(body())
