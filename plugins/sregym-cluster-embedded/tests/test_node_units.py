"""Pure pieces of the node agent: quantities, image references, ENTRYPOINT/CMD, path mapping,
env expansion, service variables, CRI logs with rotation, atomic volume projection."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
from sregym_cluster_embedded.node.envs import expand, service_env
from sregym_cluster_embedded.node.images import (
    ImageCatalog,
    Recipe,
    container_argv,
    default_catalog,
    normalize_reference,
)
from sregym_cluster_embedded.node.logs import LogWriter, parse_rfc3339, read_log, rfc3339_nano
from sregym_cluster_embedded.node.pathmap import PathMap
from sregym_cluster_embedded.node.volumes import _atomic_write
from sregym_core.quantity import QuantityError, cpu_millis, memory_bytes


def test_quantities():
    assert cpu_millis("500m") == 500
    assert cpu_millis("1.5") == 1500
    assert cpu_millis(2) == 2000
    assert memory_bytes("64Mi") == 64 * 2**20
    assert memory_bytes("1G") == 10**9
    assert memory_bytes("129e6") == 129_000_000
    assert cpu_millis(None) is None
    with pytest.raises(QuantityError):
        memory_bytes("12 apples")


@pytest.mark.parametrize("ref, expected", [
    ("postgres", "postgres:latest"),
    ("postgres:15", "postgres:15"),
    ("docker.io/library/postgres:16-alpine", "postgres:16-alpine"),
    ("docker.io/valkey/valkey:8", "valkey/valkey:8"),
    ("ghcr.io/acme/app:v1", "ghcr.io/acme/app:v1"),
    ("redis@sha256:abc", "redis:latest"),
    ("localhost:5000/app", "localhost:5000/app:latest"),
])
def test_normalize_reference(ref, expected):
    assert normalize_reference(ref) == expected


def test_catalog_matching_and_override():
    catalog = default_catalog()
    assert catalog.resolve("busybox:1.36") is not None
    assert catalog.resolve("docker.io/library/postgres:16-alpine") is not None
    assert catalog.resolve("valkey/valkey:8") is not None
    assert catalog.resolve("python:3.11-slim") is not None
    assert catalog.resolve("nosuchimage:1") is None
    custom = ImageCatalog()
    first, second = Recipe.make(cmd=["a"]), Recipe.make(cmd=["b"])
    custom.register("acme/app", first)
    custom.load([lambda: [("acme/app:v2", second)]])
    assert custom.resolve("acme/app:v1") is first
    assert custom.resolve("acme/app:v2") is second  # later registrations win


def test_entrypoint_cmd_semantics():
    recipe = Recipe.make(entrypoint=["ep"], cmd=["default"])
    assert container_argv(recipe, None, None) == ["ep", "default"]
    assert container_argv(recipe, None, ["x"]) == ["ep", "x"]
    assert container_argv(recipe, ["cmd"], None) == ["cmd"]  # command drops CMD too
    assert container_argv(recipe, ["cmd"], ["y"]) == ["cmd", "y"]


def test_pathmap_rewrites_paths_at_boundaries():
    pm = PathMap({"/etc/app": "/real/cfg", "/data": "/real/data"})
    assert pm.host("/etc/app/x.conf") == "/real/cfg/x.conf"
    assert pm.host("/etc/application") == "/etc/application"
    assert pm.rewrite("--config=/etc/app/x.conf") == "--config=/real/cfg/x.conf"
    assert pm.rewrite("cat /etc/app/a && ls /data") == "cat /real/cfg/a && ls /real/data"
    assert pm.rewrite("/database") == "/database"
    assert pm.rewrite("PATH=/bin:/data/bin") == "PATH=/bin:/real/data/bin"


def test_env_expansion():
    env = {"A": "1", "B": "two"}
    assert expand("$(A)-$(B)", env) == "1-two"
    assert expand("$(MISSING)", env) == "$(MISSING)"
    assert expand("$$(A)", env) == "$(A)"


def test_service_env_variables():
    svc = {"metadata": {"name": "my-db"}, "spec": {"clusterIP": "127.43.0.9",
                                                   "ports": [{"name": "pg", "port": 5432, "protocol": "TCP"}]}}
    headless = {"metadata": {"name": "h"}, "spec": {"clusterIP": "None", "ports": [{"port": 1}]}}
    env = service_env([svc, headless])
    assert env["MY_DB_SERVICE_HOST"] == "127.43.0.9"
    assert env["MY_DB_SERVICE_PORT"] == "5432"
    assert env["MY_DB_SERVICE_PORT_PG"] == "5432"
    assert env["MY_DB_PORT"] == "tcp://127.43.0.9:5432"
    assert env["MY_DB_PORT_5432_TCP_ADDR"] == "127.43.0.9"
    assert not any(k.startswith("H_") for k in env)


def test_timestamps_roundtrip():
    stamp = rfc3339_nano(1_700_000_000.123456789)
    assert stamp.startswith("2023-11-14T22:13:20.123456")
    assert stamp.endswith("Z") and len(stamp.split(".")[1]) == 10
    assert abs(parse_rfc3339(stamp) - 1_700_000_000.123456789) < 1e-5


def _collect(gen) -> bytes:
    async def run():
        out = b""
        async for chunk in gen:
            out += chunk
        return out
    return asyncio.run(run())


def test_logs_rotation_tail_and_partial_lines(tmp_path: Path):
    path = tmp_path / "c" / "0.log"
    writer = LogWriter(path, max_bytes=400)
    for i in range(20):
        writer.write_line("stdout", b"line %d" % i)
    writer.write_line("stderr", b"half", partial=True)
    writer.write_line("stderr", b"-done")
    writer.close()
    assert Path(str(path) + ".1").exists()
    assert path.stat().st_size < 400
    text = _collect(read_log(path))
    lines = text.decode().splitlines()
    assert lines[-1] == "half-done"
    assert lines[-2] == "line 19"
    assert _collect(read_log(path, tail_lines=2)).decode().splitlines() == ["line 19", "half-done"]
    stamped = _collect(read_log(path, tail_lines=1, timestamps=True)).decode()
    assert stamped.split(" ", 1)[1] == "half-done\n" and stamped[:4].isdigit()
    assert len(_collect(read_log(path, limit_bytes=10))) == 10


def test_atomic_projection_swaps_data_dir(tmp_path: Path):
    target = tmp_path / "vol"
    _atomic_write(target, {"a.conf": (b"one", 0o644), "b": (b"x", 0o600)})
    assert (target / "a.conf").read_text() == "one"
    assert os.readlink(target / "a.conf") == "..data/a.conf"
    assert oct((target / "b").stat().st_mode & 0o777) == "0o600"
    first = os.readlink(target / "..data")
    _atomic_write(target, {"a.conf": (b"two", 0o644)})
    assert (target / "a.conf").read_text() == "two"
    assert not (target / "b").exists()
    assert not (target / first).exists()


def test_malformed_probe_fails_instead_of_raising():
    from sregym_cluster_embedded.node.probes import run_probe

    async def never(command, timeout):
        raise AssertionError("no exec expected")

    async def body():
        ok, message = await run_probe({"httpGet": {"port": "nope"}}, {"ports": []}, "127.0.0.1", never)
        assert not ok and "unable to find port" in message
        ok, message = await run_probe({"tcpSocket": {"port": 1, "host": "10.0.0.1"}}, {}, "127.0.0.1", never)
        assert not ok and "network is unreachable" in message  # never dials outside 127/8
        ok, message = await run_probe({}, {}, "127.0.0.1", never)
        assert not ok
    asyncio.run(body())


def test_a_grpc_probe_without_grpcio_names_the_extra(monkeypatch):
    from sregym_core.errors import ClusterError
    from sregym_cluster_embedded.node.probes import run_probe

    monkeypatch.setitem(sys.modules, "grpc", None)  # `import grpc` now raises ImportError
    probe = {"grpc": {"port": 9000}, "timeoutSeconds": 1}

    async def no_exec(command, timeout):
        raise AssertionError("a grpc probe never execs")

    with pytest.raises(ClusterError) as info:
        asyncio.run(run_probe(probe, {}, "127.0.0.1", no_exec))
    assert str(info.value) == "a grpc probe needs grpcio, which is not installed"
    assert info.value.hints == ("pip install 'sregym-cluster-embedded[grpc]'",)


def test_a_local_image_runs_from_its_package_and_editable_dependencies():
    from sregym_cluster_embedded.plugin_images import package_dirs

    import sregym_noop

    dirs = package_dirs(["python", "-m", "sregym_noop.plugin"])
    assert dirs[0] == str(Path(sregym_noop.__file__).parent.resolve())
    assert package_dirs(["python", "-c", "print()"]) == []


def test_a_local_image_whose_package_is_missing_is_a_plugin_error():
    from sregym_core.errors import PluginError
    from sregym_cluster_embedded.plugin_images import package_dirs

    with pytest.raises(PluginError, match=r"`python -m sregym_no_such_pkg\.serve`, but no package 'sregym_no_such_pkg'"):
        package_dirs(["python", "-m", "sregym_no_such_pkg.serve"])


def test_the_start_timeout_comes_from_the_environment(monkeypatch) -> None:
    from sregym_cluster_embedded import cluster

    monkeypatch.delenv("SREGYM_CLUSTER_START_TIMEOUT", raising=False)
    assert cluster.start_timeout() == 180.0
    monkeypatch.setenv("SREGYM_CLUSTER_START_TIMEOUT", "42")
    assert cluster.start_timeout() == 42.0
    monkeypatch.setenv("SREGYM_CLUSTER_START_TIMEOUT", "soon")
    assert cluster.start_timeout() == 180.0


def test_a_cluster_that_cannot_start_in_time_fails_with_its_log(monkeypatch, tmp_path) -> None:
    import pytest as _pytest

    from sregym_cluster_embedded import cluster
    from sregym_core.errors import ClusterError

    monkeypatch.setenv("SREGYM_HOME", str(tmp_path))
    # A deadline that has passed before the daemon can answer, whatever the machine's speed (a 0.2 s
    # wait was not: an idle machine started a cluster within it, and the test left it running).
    try:
        with _pytest.raises(ClusterError, match=r"did not start \(never reported ready\)"):
            cluster.up("tooslow", 0, timeout=0.0)
        assert not cluster.status("tooslow").running
    finally:
        cluster.down("tooslow")


def test_a_subpath_is_resolved_inside_its_volume_or_refused(tmp_path):
    """Red-team round 22, finding 1: a subPath naming the pod's own symlink out of the volume (``/``, the state dir)
    is refused as the kubelet refuses it; one inside (through a symlink that stays inside) is the resolved path;
    a missing one is made inside; absolute paths and ``..`` never."""
    import os

    from sregym_cluster_embedded.node.errors import ContainerConfigError
    from sregym_cluster_embedded.node.pod import subpath_source

    volume = tmp_path / "e"
    (volume / "inside" / "deeper").mkdir(parents=True)
    os.symlink("/", volume / "root")
    os.symlink(str(tmp_path), volume / "up")
    os.symlink("inside", volume / "alias")
    assert subpath_source(volume, "alias/deeper", "e", "c") == volume / "inside" / "deeper"
    assert subpath_source(volume, "new/dir", "e", "c") == volume / "new" / "dir" and (volume / "new" / "dir").is_dir()
    for sub in ("root", "root/etc", "up", "../e", "/etc", "inside/../../x"):
        with pytest.raises(ContainerConfigError, match='failed to prepare subPath for volumeMount "e" of container "c"'):
            subpath_source(volume, sub, "e", "c")


def test_a_volume_is_opened_without_following_a_symlink(tmp_path):
    """What the child binds: the path checked in the parent, opened a component at a time; a component swapped for a
    symlink after the check fails the start (CVE-2021-25741) instead of binding what the symlink names."""
    import errno
    import os

    from sregym_cluster_embedded.node.mountns import safe_source

    (tmp_path / "vol" / "dir").mkdir(parents=True)
    fd = safe_source(str(tmp_path / "vol" / "dir"))
    try:
        assert os.path.samestat(os.fstat(fd), os.stat(tmp_path / "vol" / "dir"))
    finally:
        os.close(fd)
    os.rename(tmp_path / "vol" / "dir", tmp_path / "vol" / "was")
    os.symlink("/", tmp_path / "vol" / "dir")
    with pytest.raises(OSError) as refused:
        safe_source(str(tmp_path / "vol" / "dir"))
    assert refused.value.errno == errno.ELOOP
