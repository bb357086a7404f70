"""Shared by the network tests: connect from inside a pod's cgroup, listeners, a network on two fake nodes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from _fixtures_ctrl import FakeKubelet, settle
from sregym_cluster_embedded.client import new_local_cluster
from sregym_cluster_embedded.controllers import start_controllers
from sregym_cluster_embedded.network import start_network
from sregym_cluster_embedded.settings import ClusterSettings

#: run in a child that joined the cgroup: each target's connect() outcome, "open" or "errno N"
CONNECT = """
import json, socket, sys
out = {}
for owner, target in json.loads(sys.argv[1]).items():
    host, port = target.rsplit(":", 1)
    with socket.socket() as s:
        try:
            s.connect((host, int(port)))
            out[owner] = "open"
        except OSError as exc:
            out[owner] = f"errno {exc.errno}"
print(json.dumps(out))
"""


class Items:
    """What the guard reads from an informer's store: ``.list()`` of objects."""

    def __init__(self, items: list[dict]) -> None:
        self.items = items

    def list(self) -> list[dict]:
        return self.items


def connects_from(cgroup: Path, targets: dict[str, str]) -> dict[str, str]:
    """{name: "open" | "errno N"} for each ``host:port`` of ``targets``, connected from a process in ``cgroup``
    (the guard's cgroup programs judge a caller by the cgroup it runs in)."""
    procs = str(cgroup / "cgroup.procs")

    def join() -> None:
        with open(procs, "w") as handle:
            handle.write("0")
    result = subprocess.run([sys.executable, "-c", CONNECT, json.dumps(targets)], preexec_fn=join,
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@contextlib.contextmanager
def listening(addresses: dict[str, str]) -> Iterator[dict[str, str]]:
    """A listener on a free port of each address: yields {name: "ip:port"}, closes them afterwards."""
    listeners: list[socket.socket] = []
    try:
        targets = {}
        for owner, ip in addresses.items():
            listener = socket.socket()
            listeners.append(listener)
            listener.bind((ip, 0))
            listener.listen()
            targets[owner] = f"{ip}:{listener.getsockname()[1]}"
        yield targets
    finally:
        for listener in listeners:
            listener.close()


def release(guard) -> None:
    """Close a test's guard and remove its pod cgroups: the first close releases the programs, the
    second removes the guard's cgroup once its pods' are gone."""
    guard.close()
    for path in guard.cgroup.glob("pod-*"):
        path.rmdir()
    guard.close()


class Env:
    """A network on fake nodes: pods made with ``pod()`` answer their name on 8080 (``servers``)."""

    def __init__(self, client, kubelet, network):
        self.client, self.kubelet, self.network = client, kubelet, network
        self.servers: list[asyncio.base_events.Server] = []

    async def pod(self, name, labels, *, serve=True):
        await self.client.create("pods", {"metadata": {"name": name, "labels": labels}, "spec": {
            "containers": [{"name": "m", "image": "x", "ports": [{"name": "http", "containerPort": 8080}]}]}}, "default")

        async def has_ip():
            return (await self.client.get("pods", name, "default")).get("status", {}).get("podIP")
        await settle(has_ip)
        ip = (await self.client.get("pods", name, "default"))["status"]["podIP"]
        if serve:
            async def reply(reader, writer, who=name):
                writer.write(who.encode())
                await writer.drain()
                writer.close()
            self.servers.append(await asyncio.start_server(reply, ip, 8080))
        return ip


@contextlib.asynccontextmanager
async def two_node_network(tmp_path: Path, pod_prefix: str, service_prefix: str):
    """An :class:`Env` on two fake nodes with the scheduler, the endpoints controller and the network
    (service proxy) running; pod and Service addresses under their own prefixes, so tests beside it do
    not meet."""
    settings = ClusterSettings(state_dir=tmp_path, pod_cidr_prefix=pod_prefix, service_cidr_prefix=service_prefix)
    client = new_local_cluster(settings)
    kubelet = FakeKubelet(client, nodes=("node-1", "node-2"), ip_prefix=pod_prefix)
    await kubelet.start()
    ctrl = start_controllers(client, settings, only=["scheduler", "endpoints"])
    network = await start_network(client, settings)
    env = Env(client, kubelet, network)
    try:
        yield env
    finally:
        for server in env.servers:
            server.close()
        await network.stop()
        await ctrl.stop()
        await kubelet.stop()
