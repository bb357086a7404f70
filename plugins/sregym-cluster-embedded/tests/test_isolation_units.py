"""Pod isolation pieces without a cluster (identity, path containment, the degraded-mode warning),
plus one cluster started with isolation off to show what ``sregym cluster status`` says then."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sregym_cluster_embedded.node import isolation, kubelet
from sregym_cluster_embedded.node.errors import ContainerConfigError
from sregym_cluster_embedded.node.isolation import NODE_DEFAULT, RUNTIME_DEFAULT, _mask


def pod(security: dict | None = None, container_security: dict | None = None) -> tuple[dict, dict]:
    container = {"name": "c", "image": "busybox"}
    if container_security:
        container["securityContext"] = container_security
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
            "spec": {"securityContext": security or {}, "containers": [container]}}, container


def test_default_identity_is_non_root_with_the_reduced_default_capabilities() -> None:
    p, c = pod()
    ident = isolation.identity(p, c, None)
    assert (ident.uid, ident.gid) == (65534, 65534)
    assert ident.caps == _mask(NODE_DEFAULT)
    assert not ident.caps & _mask(["NET_RAW", "MKNOD", "SYS_ADMIN"])


def test_image_user_and_security_context_precedence() -> None:
    p, c = pod()
    assert isolation.identity(p, c, 0).uid == 0  # an image whose USER is root (postgres)
    p, c = pod({"runAsUser": 1000, "runAsGroup": 2000, "fsGroup": 3000, "supplementalGroups": [4000]},
               {"runAsUser": 1001})
    ident = isolation.identity(p, c, 0)
    assert (ident.uid, ident.gid, ident.groups) == (1001, 2000, (4000, 3000))


def test_run_as_non_root_refuses_root() -> None:
    p, c = pod({"runAsNonRoot": True}, {"runAsUser": 0})
    with pytest.raises(ContainerConfigError, match="runAsNonRoot and image will run as root"):
        isolation.identity(p, c, None)
    p, c = pod({"runAsNonRoot": True})
    with pytest.raises(ContainerConfigError):
        isolation.identity(p, c, 0)  # the image's root user counts too
    assert isolation.identity(*pod({"runAsNonRoot": True}), None).uid == 65534


def test_capabilities_add_only_from_the_runtime_default_set() -> None:
    p, c = pod(container_security={"capabilities": {"add": ["SYS_ADMIN", "CAP_NET_RAW", "SYS_PTRACE"],
                                                   "drop": ["CHOWN"]}})
    caps = isolation.identity(p, c, None).caps
    assert caps & _mask(["NET_RAW"]) and not caps & _mask(["SYS_ADMIN", "SYS_PTRACE", "CHOWN"])
    assert caps & ~_mask(RUNTIME_DEFAULT) == 0
    p, c = pod(container_security={"capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}})
    assert isolation.identity(p, c, None).caps == _mask(["NET_BIND_SERVICE"])


def test_privileged_gets_host_capabilities_only_in_the_benchmarks_own_namespaces() -> None:
    # an app pod asking for privileged gets nothing more (Pod Security refuses it first anyway)
    p, c = pod(container_security={"privileged": True, "runAsUser": 0})
    assert isolation.identity(p, c, None).caps == _mask(NODE_DEFAULT)
    # the fault loader DaemonSet in a hidden namespace: the node agent's own capabilities (never
    # more: a capability the host lacks would fail the container's capset)
    own = isolation.identity(p, c, None, benchmark_own=True).caps
    cap_eff = int(next(line for line in Path("/proc/self/status").read_text().splitlines()
                       if line.startswith("CapEff:")).split()[1], 16)
    assert own == cap_eff & _mask(isolation.CAPABILITIES)
    if os.geteuid() == 0:
        assert own & _mask(["SYS_ADMIN", "BPF", "NET_ADMIN"]) == _mask(["SYS_ADMIN", "BPF", "NET_ADMIN"])
    # a hidden-namespace pod that does not ask for privileged gets the default set
    p, c = pod(container_security={"runAsUser": 0})
    assert isolation.identity(p, c, None, benchmark_own=True).caps == _mask(NODE_DEFAULT)


def test_mount_targets_never_follow_a_symlink_out_of_the_container(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "data").mkdir(parents=True)
    os.symlink("/etc", root / "data" / "evil")
    os.symlink("../../../../..", root / "data" / "up")
    assert isolation.contained(str(root), "/data/evil/passwd") == f"{root}/etc/passwd"
    assert isolation.contained(str(root), "/data/up/etc") == f"{root}/etc"
    assert isolation.contained(str(root), "/../../x") == f"{root}/x"


def test_unreadable_etc_files_are_masked() -> None:
    masked = {path for path, _ in isolation.etc_masks()}
    for path in ("/etc/shadow", "/etc/gshadow"):
        if os.path.exists(path) and not os.stat(path).st_mode & 0o004:
            assert path in masked
    assert "/etc/passwd" not in masked and "/etc/hosts" not in masked
    assert "$" not in isolation.locked_accounts("shadow")


def test_not_root_means_a_warning_that_names_what_is_not_enforced(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    monkeypatch.setattr(kubelet.os, "geteuid", lambda: 1000)
    planner, warning = kubelet._isolation(tmp_path, None)
    assert planner is None
    assert "NOT isolated" in warning and "not root" in warning and "see the host's filesystem" in warning
    monkeypatch.setenv("SREGYM_POD_ISOLATION", "0")
    assert "turned off" in kubelet._isolation(tmp_path, None)[1]


@pytest.mark.slow
def test_cluster_status_and_node_event_say_pods_are_not_isolated(tmp_path: Path) -> None:
    env = dict(os.environ, SREGYM_HOME=str(tmp_path / "home"), SREGYM_POD_ISOLATION="0")
    cli = [str(Path(sys.executable).parent / "sregym")]
    subprocess.run([*cli, "cluster", "up", "--name", "degraded", "--nodes", "1"], env=env, check=True, capture_output=True,
                   timeout=120)
    try:
        deadline = time.monotonic() + 30
        while True:  # the node agents start (and probe isolation) once the API is up
            status = subprocess.run([*cli, "cluster", "status", "--name", "degraded"], env=env, capture_output=True,
                                    text=True, timeout=60)
            if "warning" in status.stdout or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert "warning: cluster 'degraded': pods are NOT isolated" in status.stdout
        info = json.loads(subprocess.run([*cli, "cluster", "status", "--name", "degraded", "--json"], env=env,
                                         capture_output=True, text=True, timeout=60).stdout)
        assert "turned off" in info[0]["isolation_warning"]
        kubeconfig = tmp_path / "home" / "clusters" / "degraded" / "kubeconfig"
        events = subprocess.run([str(Path(sys.executable).parent / "kubectl"), f"--kubeconfig={kubeconfig}",
                                 "get", "events", "-A", "-o", "json"], env={"HOME": str(tmp_path)},
                                capture_output=True, text=True, timeout=60)
        reasons = [e["reason"] for e in json.loads(events.stdout)["items"]]
        assert "PodIsolationUnavailable" in reasons
    finally:
        subprocess.run([*cli, "cluster", "down", "--name", "degraded"], env=env, capture_output=True, timeout=120)


# A relay that has unshared a PID namespace but not forked the container's PID 1 yet, as podinit
# is for a moment after its start; then it forks a child that sleeps.
_SLOW_RELAY = """
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x20000000) != 0:
    sys.exit(3)
print("unshared", flush=True)
time.sleep(0.7)
if os.fork() == 0:
    libc.prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL: dies with the relay
    time.sleep(30)
    os._exit(0)
os.wait()
"""


@pytest.mark.skipif(os.geteuid() != 0 or not isolation.available(), reason="needs root and PID namespaces")
def test_exec_waits_for_the_container_pid_1_before_joining_its_namespaces() -> None:
    import asyncio
    relay = subprocess.Popen([sys.executable, "-c", _SLOW_RELAY], stdout=subprocess.PIPE, text=True)
    try:
        assert relay.stdout.readline().strip() == "unshared"
        with pytest.raises(FileNotFoundError):  # the window a postStart hook used to fall into
            isolation.open_namespaces(relay.pid)
        started = time.monotonic()
        fds = asyncio.run(isolation.open_namespaces_once_ready(relay.pid, lambda: relay.poll() is None))
        assert len(fds) == len(isolation.NAMESPACES)
        for fd, _ in fds:
            os.close(fd)
    finally:
        relay.kill()
        relay.wait()


def test_exec_into_a_relay_that_is_gone_fails_at_once() -> None:
    import asyncio
    relay = subprocess.Popen(["true"])
    relay.wait()
    started = time.monotonic()
    with pytest.raises(FileNotFoundError):
        asyncio.run(isolation.open_namespaces_once_ready(relay.pid, lambda: relay.poll() is None, wait=300.0))
    assert time.monotonic() - started < 150  # suite-rules: outer-bound (a dead relay is not waited for: 300 s)
