"""Container paths: exact paths in a private mount namespace (root) and the rewrite fallback."""

from __future__ import annotations

import asyncio
import os

import pytest
from _fixtures_node import container_status, node_cluster, pod_getter, pod_manifest, read_all, wait_for

pytestmark = pytest.mark.slow

READER = "print(open('/etc/app/app.conf').read().strip(), flush=True)\nimport time; time.sleep(60)"


def run(coro):
    return asyncio.run(coro)


async def _configmap(client) -> None:
    await client.create("configmaps", {"metadata": {"name": "cfg", "namespace": "default"},
                                       "data": {"app.conf": "mode=exact"}})


def test_mount_namespace_gives_exact_paths_without_touching_the_host():
    async def body():
        async with node_cluster() as (client, nodes):
            if not nodes.mount_ns:
                pytest.skip("mount namespaces need root")
            await _configmap(client)
            await client.create("pods", pod_manifest("exact", [{
                "name": "c", "image": "python:3.11", "command": ["python", "-c", READER], "workingDir": "/srv/app",
                "securityContext": {"runAsUser": 0},  # root in the container: may write its /etc (own layer)
                "volumeMounts": [{"name": "cfg", "mountPath": "/etc/app"},
                                 {"name": "data", "mountPath": "/sregym-data/deep"}]}],
                volumes=[{"name": "cfg", "configMap": {"name": "cfg"}}, {"name": "data", "emptyDir": {}}]))
            pod = await wait_for(pod_getter(client, "exact"), lambda p: p["status"].get("phase") == "Running")
            await asyncio.sleep(0.5)
            assert (await read_all(nodes.runtime.read_log("default", "exact", "c"))).strip() == b"mode=exact"
            proc = await nodes.runtime.exec("default", "exact", "c", [
                "sh", "-c", "pwd; grep exact /etc/hosts; echo hi > /sregym-data/deep/f; cat /sregym-data/deep/f"])
            out = (await proc.stdout.read()).decode().split("\n")
            assert await proc.wait() == 0
            assert out[0] == "/srv/app"
            assert out[1] == f"{pod['status']['podIP']}\texact"
            assert out[2] == "hi"
            # the container's writes to host directories stay in its own layer
            proc = await nodes.runtime.exec("default", "exact", "c", [
                "sh", "-c", "echo mine > /etc/sregym-leak-test && cat /etc/sregym-leak-test"])
            assert (await proc.stdout.read()) == b"mine\n"
            assert await proc.wait() == 0
            for path in ("/etc/app", "/srv/app", "/sregym-data", "/etc/sregym-leak-test"):
                assert not os.path.exists(path), f"{path} leaked onto the host"
    run(body())


def test_rewrite_fallback_maps_arguments_and_env():
    async def body():
        async with node_cluster(mount_ns=False) as (client, nodes):
            assert nodes.mount_ns is False
            await _configmap(client)
            await client.create("pods", pod_manifest("rw", [{
                "name": "c", "image": "busybox",
                "command": ["sh", "-c", "cat /etc/app/app.conf; echo; echo $CONF; sleep 60"],
                "env": [{"name": "CONF", "value": "--config=/etc/app/app.conf"}],
                "volumeMounts": [{"name": "cfg", "mountPath": "/etc/app"}]}],
                volumes=[{"name": "cfg", "configMap": {"name": "cfg"}}]))
            await wait_for(pod_getter(client, "rw"), lambda p: p["status"].get("phase") == "Running")
            await asyncio.sleep(0.3)
            lines = (await read_all(nodes.runtime.read_log("default", "rw", "c"))).decode().splitlines()
            assert lines[0] == "mode=exact"
            assert lines[1].startswith("--config=" + str(nodes.settings.state_dir))
    run(body())


def test_volume_hiding_the_runtime_falls_back_to_rewriting():
    async def body():
        async with node_cluster() as (client, nodes):
            # /work holds this checkout's venv on CI-like machines; any mount over the
            # interpreter's directory must not break the container
            mount = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
            await client.create("pods", pod_manifest("hide", [{
                "name": "c", "image": "python:3.11", "command": ["python", "-c", "import time; time.sleep(60)"],
                "volumeMounts": [{"name": "d", "mountPath": mount}]}], volumes=[{"name": "d", "emptyDir": {}}]))
            pod = await wait_for(pod_getter(client, "hide"), lambda p: p["status"].get("phase") == "Running")
            assert "running" in container_status(pod)["state"]
    run(body())
