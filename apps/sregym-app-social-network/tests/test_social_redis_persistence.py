"""home-timeline-redis holds the only copy of the home timelines, so it keeps them on its PVC: a real
redis-server started with the manifest's own arguments, stopped as the kubelet stops it (SIGTERM) and
started again, still has them; with a password added to its arguments (a restart keeps that too) and
after the password is taken out again. The cache instances start empty after a restart."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pytest
from sregym_core.testing.localservers import free_port, redis_command, start_server, stop_server
from sregym_app_social_network.app import components
from sregym_app_social_network.config import PERSISTENT_REDIS, REDIS
from sregym_app_social_network.manifests import render
from sregym_app_social_network.stores import Redis

needs_redis = pytest.mark.skipif(shutil.which("redis-server") is None,
                                 reason="needs redis-server (tools/setup.sh installs it)")


def _docs() -> dict[tuple[str, str], dict]:
    return {(d["kind"], d["metadata"]["name"]): d for d in render()}


def _redis_args(name: str) -> list[str]:
    return list(_docs()[("Deployment", name)]["spec"]["template"]["spec"]["containers"][0]["args"])


def test_only_the_home_timelines_are_persisted_and_on_a_claim_of_their_own():
    assert PERSISTENT_REDIS == ("home-timeline",)  # social-graph and user-timeline are refilled from PostgreSQL
    docs = _docs()
    by_name = {c.name: c for c in components()}
    for r in REDIS:
        name = f"{r}-redis"
        deploy = docs[("Deployment", name)]
        pod = deploy["spec"]["template"]["spec"]
        args = pod["containers"][0]["args"]
        if r in PERSISTENT_REDIS:
            assert args[args.index("--appendonly") + 1] == "yes"
            assert args[args.index("--dir") + 1] == "/data"
            assert pod["containers"][0]["volumeMounts"] == [{"name": "data", "mountPath": "/data"}]
            assert pod["volumes"] == [{"name": "data", "persistentVolumeClaim": {"claimName": f"{name}-data"}}]
            assert docs[("PersistentVolumeClaim", f"{name}-data")]["spec"]["accessModes"] == ["ReadWriteOnce"]
            # no surge: a rollout never runs a second server on the same file beside a Ready one
            assert deploy["spec"]["strategy"]["rollingUpdate"]["maxSurge"] == 0
            assert by_name[name].pvcs == (f"{name}-data",) and by_name[name].has_role("stateful")
        else:
            assert args[args.index("--appendonly") + 1] == "no" and "volumes" not in pod
            assert ("PersistentVolumeClaim", f"{name}-data") not in docs
            assert by_name[name].pvcs == () and not by_name[name].has_role("stateful")
        assert by_name[name].has_role("cache:redis")  # still what Redis faults select


class Server:
    """One redis-server run from a container's args, its ``/data`` mapped to ``volume`` (as the node does)."""

    def __init__(self, args: list[str], volume: Path, port: int) -> None:
        self.proc = start_server(redis_command(port, *[str(volume) if a == "/data" else a for a in args[1:]]),
                                 port, cwd=volume)

    def stop(self) -> None:
        # the kubelet's SIGTERM: redis flushes its append-only file and exits
        assert stop_server(self.proc) == 0


def _timeline(port: int, reader: int, password: str | None = None) -> list[str]:
    """Reader's home timeline, newest first, as home-timeline-service reads it (a fresh connection)."""
    client = Redis("home-timeline-service", "home-timeline", f"127.0.0.1:{port}")
    if password:
        client.client.connection_pool.connection_kwargs["password"] = password
    try:
        return client.run("zrevrange", str(reader), 0, 9)
    finally:
        client.close()


def _anonymous_ping(port: int) -> str:
    """What the server answers a client that sends no password (redis-py would retry for seconds)."""
    with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
        sock.sendall(b"PING\r\n")
        return sock.recv(256).decode()


def _restart_cycle(args: list[str], volume: Path, password: str = "s3cr3t-rotation") -> list[list[str]]:
    """Write two readers' home timelines through the app's client, then restart the server three times:
    plain, with ``--requirepass`` appended (cache-auth's rollout), and with the original args again (the
    fix's rollout). Returns reader 7's timeline after the first restart, reader 8's as read with the
    password while it is required, and reader 7's after the fix."""
    port = free_port()
    seen = []
    server = Server(args, volume, port)
    try:
        client = Redis("home-timeline-service", "home-timeline", f"127.0.0.1:{port}")
        client.run("zadd_many", {"7": {"1001": 1000, "1002": 2000}, "8": {"1002": 2000}})
        client.run("zadd_many", {"7": {"1003": 3000}})
        client.close()
        server.stop()
        server = Server(args, volume, port)
        seen.append(_timeline(port, 7))
        server.stop()
        server = Server([*args, "--requirepass", password], volume, port)
        assert _anonymous_ping(port).startswith("-NOAUTH")  # the clients have no password
        seen.append(_timeline(port, 8, password))
        server.stop()
        server = Server(args, volume, port)
        seen.append(_timeline(port, 7))
    finally:
        server.stop()
    return seen


@needs_redis
def test_the_home_timelines_survive_the_restarts_of_a_password_rollout_and_its_fix(tmp_path):
    pytest.importorskip("redis")
    args = _redis_args("home-timeline-redis")
    newest_first = ["1003", "1002", "1001"]
    assert _restart_cycle(args, tmp_path) == [newest_first, ["1002"], newest_first]
    assert any(tmp_path.rglob("*.aof")), list(tmp_path.iterdir())  # the data is in the volume, not in memory


@needs_redis
def test_a_cache_instance_starts_empty_after_the_same_restarts(tmp_path):
    pytest.importorskip("redis")
    args = _redis_args("user-timeline-redis")  # refilled from user-timeline-postgres on a miss
    assert _restart_cycle(args, tmp_path) == [[], [], []]
    assert not any(tmp_path.iterdir())
