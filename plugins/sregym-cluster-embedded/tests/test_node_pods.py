"""Pods run by the node agent as real processes, through the in-process API core."""

from __future__ import annotations

import asyncio
import base64
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

HTTP_SERVER = """
import http.server, os, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        ok = os.path.exists(os.environ.get('READY_FILE', '/nonexistent')) or self.path != '/ready'
        self.send_response(200 if ok else 503); self.end_headers(); self.wfile.write(b'hello')
    def log_message(self, *a): pass
http.server.HTTPServer(('0.0.0.0', 8080), H).serve_forever()
"""


def run(coro):
    return asyncio.run(coro)


def test_configmap_volume_secret_env_readiness_and_exec():
    async def body():
        async with node_cluster() as (client, nodes):
            await client.create("configmaps", {"metadata": {"name": "cfg", "namespace": "default"},
                                               "data": {"app.conf": "color=blue\n", "other": "x"}})
            await client.create("secrets", {"metadata": {"name": "creds", "namespace": "default"},
                                            "data": {"password": base64.b64encode(b"s3cret").decode()}})
            container = {
                "name": "web", "image": "python:3.11",
                "command": ["python", "-c", HTTP_SERVER],
                "env": [{"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}},
                        {"name": "GREETING", "value": "pw=$(PASSWORD)"},
                        {"name": "MY_POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                        {"name": "MY_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                        {"name": "READY_FILE", "value": "/work/ready"}],
                "workingDir": "/work",
                "volumeMounts": [{"name": "cfg", "mountPath": "/etc/app"},
                                 {"name": "cfg", "mountPath": "/etc/single.conf", "subPath": "app.conf"},
                                 {"name": "scratch", "mountPath": "/work"}],
                "ports": [{"containerPort": 8080, "name": "http"}],
                "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 1},
            }
            await client.create("pods", pod_manifest("web", [container], volumes=[
                {"name": "cfg", "configMap": {"name": "cfg", "items": [{"key": "app.conf", "path": "app.conf"}]}},
                {"name": "scratch", "emptyDir": {}}]))
            pod = await wait_for(pod_getter(client, "web"), lambda p: container_status(p).get("started"))
            ip = pod["status"]["podIP"]
            assert condition(pod, "Ready")["status"] == "False"
            # readiness fails until the file exists; the event says why
            await wait_for(lambda: events_for(client, "web"),
                           lambda evs: any(e["reason"] == "Unhealthy" and
                                           "Readiness probe failed: HTTP probe failed with statuscode: 503"
                                           in e["message"] for e in evs))
            proc = await nodes.runtime.exec("default", "web", "web", ["sh", "-c", "touch ready; echo $GREETING $MY_POD $MY_IP; cat /etc/app/app.conf /etc/single.conf; ls /etc/app"])
            out = await proc.stdout.read()
            assert await proc.wait() == 0
            text = out.decode()
            assert f"pw=s3cret web {ip}" in text
            assert text.count("color=blue") == 2
            assert "other" not in text  # items selected one key only
            pod = await wait_for(pod_getter(client, "web"), lambda p: condition(p, "Ready").get("status") == "True")
            assert container_status(pod)["ready"] is True
            reader, writer = await asyncio.open_connection(ip, 8080)
            writer.write(b"GET / HTTP/1.0\r\n\r\n")
            assert b"hello" in await reader.read()
            writer.close()
            usage = nodes.runtime.pod_usage("default", "web")
            assert usage["web"][1] > 1_000_000
    run(body())


def test_crashloop_backoff_and_previous_logs():
    async def body():
        async with node_cluster() as (client, nodes):
            await client.create("pods", pod_manifest("crash", [{
                "name": "app", "image": "busybox", "command": ["sh", "-c", "echo run at $(date +%s%N); exit 3"]}]))
            pod = await wait_for(pod_getter(client, "crash"),
                                 lambda p: container_status(p).get("state", {}).get("waiting", {}).get("reason") == "CrashLoopBackOff")
            status = container_status(pod)
            assert status["restartCount"] == 1
            assert "back-off 10s restarting failed container=app pod=crash_default(" in status["state"]["waiting"]["message"]
            assert status["lastState"]["terminated"]["exitCode"] == 3
            assert status["lastState"]["terminated"]["reason"] == "Error"
            assert pod["status"]["phase"] == "Running"
            previous = await read_all(nodes.runtime.read_log("default", "crash", "app", previous=True))
            assert previous.startswith(b"run at ")
            started = time.monotonic()
            pod = await wait_for(pod_getter(client, "crash"),
                                 lambda p: "back-off 20s" in str(container_status(p).get("state")), timeout=25)
            assert time.monotonic() - started >= 8  # the second restart waited ~10 s
            assert container_status(pod)["restartCount"] == 2
            events = await events_for(client, "crash")
            assert any(e["reason"] == "BackOff" and "Back-off restarting failed container app" in e["message"]
                       for e in events)
    run(body())


def test_previous_logs_missing_is_the_real_error():
    async def body():
        async with node_cluster() as (client, nodes):
            await client.create("pods", pod_manifest("once", [{"name": "c", "image": "busybox",
                                                               "command": ["sleep", "30"]}]))
            await wait_for(pod_getter(client, "once"), lambda p: p["status"].get("phase") == "Running")
            with pytest.raises(Exception) as info:
                nodes.runtime.read_log("default", "once", "c", previous=True)
            assert info.value.code == 400
            assert info.value.message == 'previous terminated container "c" in pod "once" not found'
            with pytest.raises(Exception) as info:
                nodes.runtime.read_log("default", "once", "nope")
            assert info.value.code == 400
    run(body())


def test_unknown_image_gives_errimagepull_then_backoff():
    async def body():
        async with node_cluster() as (client, _):
            await client.create("pods", pod_manifest("bad", [{"name": "c", "image": "nosuch/image:9"}]))
            pod = await wait_for(pod_getter(client, "bad"),
                                 lambda p: container_status(p).get("state", {}).get("waiting", {}).get("reason") == "ImagePullBackOff")
            assert pod["status"]["phase"] == "Pending"
            assert container_status(pod)["state"]["waiting"]["message"] == 'Back-off pulling image "nosuch/image:9"'
            messages = [e["message"] for e in await events_for(client, "bad")]
            assert any(m.startswith('Failed to pull image "nosuch/image:9": rpc error: code = NotFound') for m in messages)
            assert "Error: ErrImagePull" in messages and "Error: ImagePullBackOff" in messages
    run(body())


def test_an_image_put_back_restarts_the_container_without_waiting_out_the_back_off():
    """Chaos Mesh's pod-failure (and the noise source of that name) swaps a pod's image for one that
    cannot run, then puts it back: the real kubelet keys its back-off by the container's spec hash,
    so the original image starts at once, not after the pull back-off (20 s by then)."""
    async def body():
        async with node_cluster() as (client, _):
            await client.create("pods", pod_manifest("flip", [{"name": "c", "image": "busybox", "command": ["sleep", "300"]}]))
            await wait_for(pod_getter(client, "flip"), lambda p: container_status(p).get("started"))
            swap = [{"op": "replace", "path": "/spec/containers/0/image", "value": "gcr.io/google-containers/pause:latest"}]
            await client.patch("pods", "flip", swap, "default", patch_type="json")
            # two pull failures: the second back-off (20 s) is under way
            await wait_for(lambda: events_for(client, "flip"),
                           lambda evs: sum(e.get("count", 1) for e in evs
                                               if e["message"].startswith("Back-off pulling image")) >= 2,
                           timeout=60)
            back = [{"op": "replace", "path": "/spec/containers/0/image", "value": "busybox"}]
            await client.patch("pods", "flip", back, "default", patch_type="json")
            pod = await wait_for(pod_getter(client, "flip"),
                                 lambda p: "running" in container_status(p).get("state", {})
                                 and container_status(p).get("image") == "busybox", timeout=10)
            assert pod["spec"]["containers"][0]["image"] == "busybox"
    run(body())


def test_missing_config_gives_createcontainerconfigerror_and_failedmount():
    async def body():
        async with node_cluster() as (client, _):
            await client.create("configmaps", {"metadata": {"name": "c1", "namespace": "default"}, "data": {"a": "1"}})
            await client.create("pods", pod_manifest("cfgerr", [{
                "name": "c", "image": "busybox", "command": ["sleep", "30"],
                "env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "c1", "key": "k"}}}]}]))
            await client.create("pods", pod_manifest("mount", [{
                "name": "c", "image": "busybox", "command": ["sleep", "30"],
                "volumeMounts": [{"name": "v", "mountPath": "/cfg"}]}],
                volumes=[{"name": "v", "configMap": {"name": "later"}}]))
            pod = await wait_for(pod_getter(client, "cfgerr"),
                                 lambda p: "CreateContainerConfigError" in str(container_status(p)))
            assert container_status(pod)["state"]["waiting"]["message"] == "couldn't find key k in ConfigMap default/c1"
            pod = await wait_for(pod_getter(client, "mount"), lambda p: bool(container_status(p)))
            assert container_status(pod)["state"]["waiting"]["reason"] == "ContainerCreating"
            await wait_for(lambda: events_for(client, "mount"), lambda evs: any(
                e["reason"] == "FailedMount" and
                e["message"] == 'MountVolume.SetUp failed for volume "v" : configmap "later" not found' for e in evs))
            await client.create("configmaps", {"metadata": {"name": "later", "namespace": "default"}, "data": {"f": "v"}})
            await wait_for(pod_getter(client, "mount"), lambda p: p["status"].get("phase") == "Running", timeout=10)
    run(body())


def test_memory_limit_gives_oomkilled():
    async def body():
        async with node_cluster() as (client, nodes):
            hog = "x = []\nwhile True: x.append(bytearray(10 * 2**20))"
            await client.create("pods", pod_manifest("hog", [{
                "name": "hog", "image": "python:3.11", "command": ["python3", "-c", hog],
                "resources": {"limits": {"memory": "60Mi"}}}], restartPolicy="Never"))
            pod = await wait_for(pod_getter(client, "hog"), lambda p: p["status"].get("phase") == "Failed", timeout=30)
            terminated = container_status(pod)["state"]["terminated"]
            assert terminated["reason"] == "OOMKilled", (nodes.backend.name, terminated)
            assert terminated["exitCode"] == 137
    run(body())


def test_userspace_backend_oom_and_cpu_throttling():
    async def body():
        async with node_cluster(backend="userspace") as (client, nodes):
            assert nodes.backend.name == "userspace"
            await client.create("pods", pod_manifest("spin", [{
                "name": "spin", "image": "busybox", "command": ["sh", "-c", "while :; do :; done"],
                "resources": {"limits": {"cpu": "200m"}}}]))
            hog = "x = []\nwhile True: x.append(bytearray(10 * 2**20))"
            await client.create("pods", pod_manifest("hog", [{
                "name": "hog", "image": "python:3.11", "command": ["python3", "-c", hog],
                "resources": {"limits": {"memory": "60Mi"}}}], restartPolicy="Never"))
            pod = await wait_for(pod_getter(client, "hog"), lambda p: p["status"].get("phase") == "Failed", timeout=30)
            assert container_status(pod)["state"]["terminated"]["reason"] == "OOMKilled"
            await wait_for(pod_getter(client, "spin"), lambda p: p["status"].get("phase") == "Running")
            await asyncio.sleep(2.0)
            cpu_ns, _ = nodes.runtime.pod_usage("default", "spin")["spin"]
            stats = [s for s in nodes.container_stats() if s["pod"] == "spin"][0]
            assert stats["nr_throttled"] > 0
            assert cpu_ns < 0.5e9, cpu_ns  # about 0.2 CPU, far from a full core
    run(body())


def test_cgroup_cpu_quota_throttles():
    async def body():
        async with node_cluster() as (client, nodes):
            if nodes.backend.name == "userspace":
                pytest.skip("cgroups need root")
            await client.create("pods", pod_manifest("spin", [{
                "name": "spin", "image": "busybox", "command": ["sh", "-c", "while :; do :; done"],
                "resources": {"requests": {"cpu": "50m"}, "limits": {"cpu": "100m"}}}]))
            await wait_for(pod_getter(client, "spin"), lambda p: p["status"].get("phase") == "Running")
            group = nodes.agents["node-1"].find("default", "spin").runners[0].group
            if nodes.backend.name == "cgroup-v1":
                assert (group.dirs["cpu"] / "cpu.cfs_quota_us").read_text().strip() == "10000"
                assert (group.dirs["cpu"] / "cpu.shares").read_text().strip() == "51"
            nodes.runtime.pod_usage("default", "spin")
            await asyncio.sleep(1.5)
            cpu_ns, _ = nodes.runtime.pod_usage("default", "spin")["spin"]
            stats = [s for s in nodes.container_stats() if s["pod"] == "spin"][0]
            assert stats["nr_throttled"] > 0
            assert cpu_ns < 0.3e9, cpu_ns
    run(body())


def test_init_containers_run_in_order_then_sidecar_and_main():
    async def body():
        async with node_cluster() as (client, nodes):
            inits = [{"name": "first", "image": "busybox", "command": ["sh", "-c", "echo 1 >> /shared/order"],
                      "volumeMounts": [{"name": "shared", "mountPath": "/shared"}]},
                     {"name": "second", "image": "busybox", "command": ["sh", "-c", "echo 2 >> /shared/order"],
                      "volumeMounts": [{"name": "shared", "mountPath": "/shared"}]},
                     {"name": "side", "image": "busybox", "restartPolicy": "Always",
                      "command": ["sh", "-c", "echo side >> /shared/order; sleep 60"],
                      "volumeMounts": [{"name": "shared", "mountPath": "/shared"}]}]
            main = {"name": "main", "image": "busybox", "command": ["sh", "-c", "echo main >> /shared/order; sleep 60"],
                    "volumeMounts": [{"name": "shared", "mountPath": "/shared"}]}
            await client.create("pods", pod_manifest("init", [main], initContainers=inits,
                                                     volumes=[{"name": "shared", "emptyDir": {}}]))
            pod = await wait_for(pod_getter(client, "init"), lambda p: condition(p, "Ready").get("status") == "True")
            assert [s["state"].get("terminated", {}).get("reason") for s in pod["status"]["initContainerStatuses"][:2]] == ["Completed", "Completed"]
            assert "running" in pod["status"]["initContainerStatuses"][2]["state"]
            proc = await nodes.runtime.exec("default", "init", "main", ["cat", "/shared/order"])
            assert (await proc.stdout.read()).decode().split() == ["1", "2", "side", "main"]
            await proc.wait()
    run(body())


def test_liveness_failure_restarts_container():
    async def body():
        async with node_cluster() as (client, _):
            await client.create("pods", pod_manifest("live", [{
                "name": "c", "image": "busybox", "command": ["sleep", "60"],
                "livenessProbe": {"exec": {"command": ["sh", "-c", "echo sick; exit 1"]},
                                  "periodSeconds": 1, "failureThreshold": 2}}]))
            pod = await wait_for(pod_getter(client, "live"), lambda p: container_status(p).get("restartCount", 0) >= 1)
            assert container_status(pod)["lastState"]["terminated"]["exitCode"] == 143  # killed by SIGTERM
            messages = [e["message"] for e in await events_for(client, "live")]
            assert "Liveness probe failed: sick" in messages
            assert "Container c failed liveness probe, will be restarted" in messages
    run(body())


def test_graceful_delete_sigterm_then_sigkill():
    async def body():
        async with node_cluster() as (client, nodes):
            stubborn = "trap 'echo got TERM' TERM; while :; do sleep 0.1; done"
            await client.create("pods", pod_manifest("stubborn", [{"name": "c", "image": "busybox",
                                                                   "command": ["sh", "-c", stubborn]}],
                                                     terminationGracePeriodSeconds=1))
            pod = await wait_for(pod_getter(client, "stubborn"), lambda p: p["status"].get("phase") == "Running")
            await asyncio.sleep(0.3)
            started = time.monotonic()
            await client.delete("pods", "stubborn", "default")
            async def gone():
                try:
                    await client.get("pods", "stubborn", "default")
                    return {"gone": False}
                except Exception as exc:  # noqa: BLE001
                    return {"gone": getattr(exc, "code", None) == 404}
            await wait_for(gone, lambda r: r["gone"], timeout=10)
            elapsed = time.monotonic() - started
            assert elapsed >= 0.9, elapsed  # the grace period was given (the wait above bounds a hang)
            assert not nodes.agents["node-1"].workers
            assert pod["metadata"]["uid"]
    run(body())


@pytest.mark.parametrize("mount_ns", [None, False], ids=["exact-paths-if-root", "path-rewrite"])
def test_postgres_and_memcached_pods_serve_real_clients(mount_ns):
    psycopg = pytest.importorskip("psycopg")
    pymemcache = pytest.importorskip("pymemcache.client.base")

    async def body():
        async with node_cluster(mount_ns=mount_ns) as (client, nodes):
            if nodes.catalog.resolve("postgres:15") is None:
                pytest.skip("PostgreSQL is not installed")
            await client.create("configmaps", {"metadata": {"name": "init", "namespace": "default"},
                                               "data": {"schema.sql": "CREATE TABLE t (v int); INSERT INTO t VALUES (42);"}})
            await client.create("persistentvolumes", {"metadata": {"name": "pv1"}, "spec": {
                "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/unused"}}})
            await client.create("persistentvolumeclaims", {"metadata": {"name": "data", "namespace": "default"}, "spec": {
                "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "volumeName": "pv1"}})
            pg = {"name": "db", "image": "docker.io/library/postgres:16-alpine",
                  # PGPORT: a port of its own, so a stray server elsewhere on 0.0.0.0:5432 cannot interfere
                  "env": [{"name": "POSTGRES_PASSWORD", "value": "pw"}, {"name": "POSTGRES_DB", "value": "app"},
                          {"name": "PGPORT", "value": "5433"}],
                  "ports": [{"containerPort": 5433}],
                  "volumeMounts": [{"name": "data", "mountPath": "/var/lib/postgresql/data"},
                                   {"name": "init", "mountPath": "/docker-entrypoint-initdb.d"}],
                  "readinessProbe": {"exec": {"command": ["pg_isready", "-h", "localhost", "-U", "postgres"]},
                                     "periodSeconds": 1}}
            await client.create("pods", pod_manifest("pg", [pg], volumes=[
                {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
                {"name": "init", "configMap": {"name": "init"}}]))
            await client.create("pods", pod_manifest("mc", [{"name": "mc", "image": "memcached:1.6", "args": ["-m", "32", "-p", "11211"],
                                                             "readinessProbe": {"tcpSocket": {"port": 11211}, "periodSeconds": 1}}]))
            mc = await wait_for(pod_getter(client, "mc"), lambda p: condition(p, "Ready").get("status") == "True")
            cache = pymemcache.Client((mc["status"]["podIP"], 11211), connect_timeout=2, timeout=2)
            cache.set("k", b"v")
            assert cache.get("k") == b"v"
            cache.close()
            pod = await wait_for(pod_getter(client, "pg"), lambda p: condition(p, "Ready").get("status") == "True", timeout=60)
            ip = pod["status"]["podIP"]

            def query() -> int:
                with psycopg.connect(host=ip, port=5433, user="postgres", password="pw", dbname="app", connect_timeout=5) as conn:
                    return conn.execute("select v from t").fetchone()[0]
            assert await asyncio.to_thread(query) == 42
            proc = await nodes.runtime.exec("default", "pg", "db", ["psql", "-U", "postgres", "-d", "app", "-tAc", "select count(*) from t"])
            assert (await proc.stdout.read()).strip() == b"1"
            assert await proc.wait() == 0
            assert (nodes.settings.state_dir / "volumes" / "pv1" / "PG_VERSION").exists()
    run(body())
