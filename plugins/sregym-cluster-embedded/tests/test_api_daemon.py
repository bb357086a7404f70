"""The per-cluster process: up/down/status/kubeconfig, clusters side by side, owner death, the CLI,
snapshots through the plugin handle. Every test checks that nothing is left running."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import yaml

from conftest import PINNED_KUBECTL

pytestmark = [pytest.mark.slow, pytest.mark.heavy]


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("SREGYM_HOME", str(tmp_path / "sregym"))
    yield tmp_path / "sregym"


def kubectl(kubeconfig: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(PINNED_KUBECTL), f"--kubeconfig={kubeconfig}",
                           f"--cache-dir={kubeconfig.parent / 'kube-cache'}", *args],
                          capture_output=True, text=True, timeout=60, env={"HOME": str(kubeconfig.parent)})
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def gone(pid: int, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def test_two_clusters_side_by_side(home: Path) -> None:
    from sregym_cluster_embedded import cluster

    a = cluster.up("alpha", 1)
    try:
        b = cluster.up("beta", 0)
        try:
            assert a.running and b.running and a.pid != b.pid and a.api_port != b.api_port
            assert a.pod_cidr_prefix != b.pod_cidr_prefix and a.service_cidr_prefix != b.service_cidr_prefix
            assert a.startup_seconds is not None and a.startup_seconds > 0  # its speed: bench_apiserver.py
            for info in (a, b):
                assert info.state_dir == home / "clusters" / info.name
                for f in ("pid", "port", "info.json", "kubeconfig", "agent-kubeconfig", "cluster.log",
                          "pki/ca.crt"):
                    assert (info.state_dir / f).exists(), f
                config = yaml.safe_load(info.kubeconfig.read_text())
                assert config["clusters"][0]["cluster"]["server"] == info.url
                assert config["clusters"][0]["cluster"]["certificate-authority-data"]
            # each kubeconfig talks to its own cluster
            kubectl(a.kubeconfig, "create", "configmap", "only-in-alpha")
            assert "only-in-alpha" in kubectl(a.kubeconfig, "get", "cm").stdout
            assert "only-in-alpha" not in kubectl(b.kubeconfig, "get", "cm").stdout
            svc = json.loads(kubectl(b.kubeconfig, "get", "svc", "kubernetes", "-o", "json").stdout)
            assert svc["spec"]["clusterIP"].startswith(b.service_cidr_prefix + ".")
            # the agent identity is restricted
            denied = kubectl(a.agent_kubeconfig, "get", "secrets", "-n", "kube-system", check=False)
            assert denied.returncode == 1 and "Forbidden" in denied.stderr
            assert cluster.up("beta", 0).pid == b.pid  # up is idempotent
            assert cluster.kubeconfig("alpha", agent=True) == a.agent_kubeconfig
        finally:
            assert cluster.down("beta")
    finally:
        assert cluster.down("alpha")
    for info in (a, b):
        assert info.pid is not None and gone(info.pid)
        assert not cluster.status(info.name).running
        assert not (info.state_dir / "pid").exists()
    assert cluster.down("alpha") is False


def test_daemon_stops_when_owner_dies(home: Path) -> None:
    from sregym_cluster_embedded import cluster

    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        info = cluster.up("owned", 0, owner_pid=owner.pid)
        assert info.running
    finally:
        owner.kill()
        owner.wait()
    assert info.pid is not None and gone(info.pid, timeout=15)
    assert not cluster.status("owned").running


def test_cli_commands(home: Path) -> None:
    env = dict(os.environ, SREGYM_HOME=str(home))

    def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "sregym_cluster_embedded", *args], capture_output=True,
                              text=True, timeout=timeout, env=env)

    try:  # `down` even when `up` times out: the daemon it started is a kept cluster and would stay
        up = cli("up", "--name", "clitest", "--nodes", "0", "--json", timeout=200)
        assert up.returncode == 0, up.stderr
        info = json.loads(up.stdout)
        assert info["running"] and info["url"].startswith("https://127.0.0.1:")
        status = cli("status", "--name", "clitest")
        assert status.returncode == 0 and "running" in status.stdout
        path = cli("kubeconfig", "--name", "clitest", "--agent").stdout.strip()
        assert path.endswith("clusters/clitest/agent-kubeconfig") and Path(path).exists()
        bad = cli("up", "--name", "Bad Name")
        assert bad.returncode == 1 and "invalid cluster name" in bad.stderr
    finally:
        down = cli("down", "--name", "clitest", "--forget")
    assert down.returncode == 0 and "stopped" in down.stdout
    assert gone(info["pid"])
    assert cli("status", "--name", "clitest").returncode == 3


def test_plugin_handle_snapshot_restore(home: Path) -> None:
    from sregym_cluster_embedded.plugin import EmbeddedCluster

    handle = EmbeddedCluster(name="snap", nodes=0, owned=False)
    handle.up()
    pid = handle.status().pid
    try:
        admin = handle.kubeconfig()
        kubectl(admin, "create", "configmap", "base", "--from-literal=v=1")
        handle.snapshot("baseline")
        kubectl(admin, "create", "configmap", "extra")
        kubectl(admin, "patch", "configmap", "base", "-p", '{"data":{"v":"2"}}')
        handle.restore("baseline")
        names = kubectl(admin, "get", "cm", "-o", "name").stdout.split()
        assert "configmap/base" in names and "configmap/extra" not in names
        assert kubectl(admin, "get", "cm", "base", "-o", "jsonpath={.data.v}").stdout == "1"
        # one identity per agent
        agent7 = handle.new_agent_kubeconfig("agent-7")
        who = kubectl(agent7, "auth", "whoami").stdout
        assert "agent-7" in who and "sregym:agents" in who
        assert kubectl(agent7, "get", "cm", check=False).returncode == 1
        assert kubectl(agent7, "get", "nodes").returncode == 0
    finally:
        handle.down()
    assert pid is not None and gone(pid)


def test_real_pods_exec_logs_and_cleanup(home: Path) -> None:
    """The whole process with its node agent: a busybox pod really runs; exec, logs and delete work;
    down leaves no pod process behind."""
    from sregym_cluster_embedded import cluster

    info = cluster.up("realpods", 1)
    marker = "4242.5"
    try:
        kc = info.kubeconfig
        assert kc is not None
        kubectl(kc, "run", "sleeper", "--image=busybox", "--", "sh", "-c", f"echo started; sleep {marker}")
        kubectl(kc, "wait", "--for=condition=Ready", "pod/sleeper", "--timeout=60s")
        assert kubectl(kc, "exec", "sleeper", "--", "echo", "inside").stdout == "inside\n"
        assert "started" in kubectl(kc, "logs", "sleeper").stdout
        assert any(marker in " ".join(p.info["cmdline"] or []) for p in psutil.process_iter(["cmdline"]))
        kubectl(kc, "delete", "pod", "sleeper", "--grace-period=1", "--wait=true")
        assert kubectl(kc, "get", "pods", "-o", "name").stdout.strip() == ""
        kubectl(kc, "run", "again", "--image=busybox", "--", "sleep", marker)
        kubectl(kc, "wait", "--for=condition=Ready", "pod/again", "--timeout=60s")
    finally:
        cluster.down("realpods")
    assert info.pid is not None and gone(info.pid)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(
            marker in " ".join(p.info["cmdline"] or []) for p in psutil.process_iter(["cmdline"])):
        time.sleep(0.1)
    assert not any(marker in " ".join(p.info["cmdline"] or []) for p in psutil.process_iter(["cmdline"]))


def test_up_never_hands_out_a_stopping_cluster(home: Path) -> None:
    """The owner of a cluster dies while another command asks for it: that command gets a cluster
    that answers and keeps answering (the old daemon, kept, or a fresh one once the old is gone)."""
    from sregym_cluster_embedded import cluster

    for delay in (0.0, 0.8, 1.6):
        owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        old = cluster.up("racy", 0, owner_pid=owner.pid)
        owner.kill()
        owner.wait()
        time.sleep(delay)
        try:  # a failed second start must not leave the kept cluster running
            info = cluster.up("racy", 0)
            assert cluster.answers(info)
            time.sleep(2.5)  # a daemon notices a gone owner within a second
            now = cluster.status("racy")
            assert now.running and now.pid == info.pid and cluster.answers(now)
        finally:
            cluster.down("racy")
        assert old.pid is not None and info.pid is not None and gone(old.pid) and gone(info.pid)


def test_handles_share_a_cluster_and_exclusive_ones_refuse_a_second(home: Path) -> None:
    from sregym_core.errors import ClusterError
    from sregym_cluster_embedded import cluster
    from sregym_cluster_embedded.plugin import EmbeddedCluster

    runner = EmbeddedCluster(name="shared", nodes=0, owned=True, exclusive=True)
    viewer = EmbeddedCluster(name="shared", nodes=0)
    runner.up()
    pid = cluster.status("shared").pid
    try:
        viewer.up()
        with pytest.raises(ClusterError, match=f"in use by another command.*pid {os.getpid()}"):
            EmbeddedCluster(name="shared", nodes=0, exclusive=True).up()
        runner.down()  # the viewer still uses it: it keeps running
        assert cluster.status("shared").running and cluster.status("shared").pid == pid
        again = EmbeddedCluster(name="shared", nodes=0, exclusive=True)
        again.up()  # the runner's claim on the apps went with its down
        again.down()
        assert cluster.status("shared").running
    finally:
        viewer.down()  # the last user: stopped
    assert pid is not None and gone(pid) and not cluster.status("shared").running
