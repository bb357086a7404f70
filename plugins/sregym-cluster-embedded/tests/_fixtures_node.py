"""Helpers for node-agent tests: an in-process API core plus real node agents on a private
127/8 range and a traversable state dir; everything they start is killed and checked."""

from __future__ import annotations

import asyncio
import contextlib
import random
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from sregym_core.testing.processes import snapshot, survivors
from sregym_cluster_embedded.client import new_local_cluster
from sregym_cluster_embedded.node import start_nodes
from sregym_cluster_embedded.settings import ClusterSettings


def pod_manifest(name: str, containers: list[dict], **spec) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": spec.pop("nodeName", "node-1"), "containers": containers,
                     "terminationGracePeriodSeconds": spec.pop("terminationGracePeriodSeconds", 2), **spec}}


@contextlib.asynccontextmanager
async def node_cluster(nodes: int = 1, **options) -> AsyncIterator[tuple]:
    state = Path(tempfile.mkdtemp(prefix="sregym-node-", dir="/tmp"))
    state.chmod(0o755)  # the postgres user must be able to reach PGDATA when we run as root
    prefix = f"127.{random.randint(100, 250)}"
    settings = ClusterSettings(name=f"nodetest{random.randint(0, 10**6)}", state_dir=state, nodes=nodes,
                               pod_cidr_prefix=prefix, node_cpu="2", node_memory="4Gi")
    client = new_local_cluster(settings)
    node_set = await start_nodes(client, settings, **options)
    try:
        yield client, node_set
    finally:
        started = snapshot(set(node_set.pids))
        await node_set.stop()
        left = survivors(started, grace=0)
        shutil.rmtree(state, ignore_errors=True)
        assert not left, f"processes survived NodeSet.stop(): {left}"


async def wait_for(fetch: Callable, check: Callable[[dict], bool], timeout: float = 40.0, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            last = await fetch()
            if check(last):
                return last
        await asyncio.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s; last object: {last}")


def pod_getter(client, name: str, namespace: str = "default") -> Callable:
    return lambda: client.get("pods", name, namespace)


def container_status(pod: dict, name: str | None = None, init: bool = False) -> dict:
    statuses = pod.get("status", {}).get("initContainerStatuses" if init else "containerStatuses") or []
    for status in statuses:
        if name is None or status["name"] == name:
            return status
    return {}


def condition(pod: dict, kind: str) -> dict:
    return next((c for c in pod.get("status", {}).get("conditions") or [] if c["type"] == kind), {})


async def events_for(client, name: str) -> list[dict]:
    return [e for e in await client.list("events", "default") if e["involvedObject"].get("name") == name]


async def read_all(stream) -> bytes:
    out = b""
    async for chunk in stream:
        out += chunk
    return out
