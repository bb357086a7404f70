"""Cluster lifecycle through the CLI, as a script driving a benchmark does it: runs back to back on
one cluster name, a second command on the same name while a run holds it, and what ``--keep-cluster``
and ``--no-keep-cluster`` promise. One module-long story in two runs (each run costs a deploy check
and a reset; the landing check's live lane runs it).

The cheapest real run: Hotel Reservation with the ``noop`` fault and the ``noop`` agent, no
observability stack. The module uses its own cluster (a temporary SREGYM_HOME) and checks that
nothing keeps running afterwards.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.heavy, pytest.mark.apps]

SREGYM = str(Path(sys.executable).parent / "sregym")
NAME = "lifecycle"


def _installed() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) for m in ("sregym_cluster_embedded", "sregym_app_hotel_reservation",
                                                      "sregym_agent_baselines", "sregym_noop"))


if not _installed():
    pytest.skip("needs the embedded cluster, hotel-reservation, the baseline agents and the noop plugin",
                allow_module_level=True)


class Cli:
    def __init__(self, home: Path) -> None:
        self.home = home
        self.environ = {**os.environ, "SREGYM_HOME": str(home)}

    def start(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen([SREGYM, *args], env=self.environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)

    def __call__(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run([SREGYM, *args], env=self.environ, capture_output=True, text=True, timeout=timeout)

    def run(self, results: Path, *extra: str) -> list[str]:
        return ["run", "--app", "hotel-reservation", "--fault", "noop", "--target", "geo", "--agent", "noop",
                "--no-observability", "--cluster", NAME, "--results", str(results), *extra]

    def status(self) -> tuple[int, dict]:
        proc = self("cluster", "status", "--name", NAME, "--json", timeout=60)
        return proc.returncode, json.loads(proc.stdout)[0]

    def deployments(self) -> dict[str, str]:
        """Hotel Reservation's Deployments by name, with their uids (new ones after a redeploy)."""
        kubeconfig = self.home / "clusters" / NAME / "kubeconfig"
        out = subprocess.run([str(Path(sys.executable).parent / "kubectl"), f"--kubeconfig={kubeconfig}", "get",
                              "deployments", "-n", "hotel-reservation", "-o", "json"], capture_output=True, text=True,
                             timeout=60, check=True, env={**self.environ, "HOME": str(self.home)})
        return {p["metadata"]["name"]: p["metadata"]["uid"] for p in json.loads(out.stdout)["items"]}


@pytest.fixture(scope="module")
def cli(tmp_path_factory):
    home = tmp_path_factory.mktemp("sregym-lifecycle")
    before = {p.pid for p in psutil.process_iter()}
    try:
        yield Cli(home)
    finally:
        subprocess.run([SREGYM, "cluster", "down", "--name", NAME, "--forget"], env={**os.environ, "SREGYM_HOME": str(home)},
                       capture_output=True, timeout=120)
    time.sleep(1.0)
    leftovers = [p for p in psutil.process_iter(["pid", "cmdline"])
                 if p.pid not in before and str(home) in " ".join(p.info["cmdline"] or [])]
    assert not leftovers, f"processes left behind: {[p.info['cmdline'][:3] for p in leftovers]}"


def _record(results: Path) -> dict:
    lines = (results / "results.jsonl").read_text().splitlines()
    assert len(lines) == 1
    return json.loads(lines[0])


def _ran(proc: subprocess.CompletedProcess, results: Path) -> None:
    assert proc.returncode == 0, proc.stderr[-3000:]
    record = _record(results)
    assert not record["deploy_failed"] and record["agent_status"] == "ok", record


def test_runs_back_to_back_share_the_kept_cluster_and_no_keep_cluster_stops_it(cli, tmp_path):
    code, _ = cli.status()
    assert code == 3, "the module starts without a cluster"
    _ran(cli(*cli.run(tmp_path / "first")), tmp_path / "first")
    # --keep-cluster (the default): the cluster the run brought up outlives it, answering
    code, first = cli.status()
    assert code == 0 and first["state"] == "running" and first["answering"], first
    deployments = cli.deployments()
    assert "geo" in deployments, "hotel-reservation is deployed"
    # the second run, at once, with --no-keep-cluster: while it holds the cluster, a command that
    # changes the apps fails at once, naming it
    second = cli.start(*cli.run(tmp_path / "second", "--no-keep-cluster"))
    apps_lock = cli.home / "clusters" / NAME / "apps.lock"
    deadline = time.monotonic() + 120  # suite-rules: outer-bound (the run takes the lock within a second or two)
    while time.monotonic() < deadline and apps_lock.read_text().split()[:1] != [str(second.pid)]:
        assert second.poll() is None, second.communicate()[1][-3000:]
        time.sleep(0.1)
    other = cli("deploy", "hotel-reservation", "--cluster", NAME, "--no-observability",
                "--workdir", str(tmp_path / "work"), timeout=120)
    assert other.returncode == 1
    assert f"cluster '{NAME}' is in use by another command" in other.stderr and str(second.pid) in other.stderr
    assert "Traceback" not in other.stderr
    # it reuses the deployed app (a redeploy would give its Deployments new uids while it runs)
    seen = []
    while second.poll() is None:
        with contextlib.suppress(subprocess.SubprocessError):  # the cluster stops as the run ends
            seen.append(cli.deployments())
        time.sleep(1.0)
    _, err = second.communicate(timeout=600)
    assert second.returncode == 0, err[-3000:]
    record = _record(tmp_path / "second")
    assert not record["deploy_failed"] and record["agent_status"] == "ok", record
    assert seen and all(s == deployments for s in seen), "the second run reused the deployed app"
    # --no-keep-cluster: the cluster stopped with the run
    code, after = cli.status()
    assert code == 3 and after["state"] == "stopped" and not after["answering"]
    assert _gone(first["pid"])
    # from a stopped cluster, two `up` at once start one daemon between them
    ups = [cli.start("cluster", "up", "--name", NAME, "--nodes", "0", "--json") for _ in range(2)]
    outputs = [p.communicate(timeout=300) for p in ups]
    assert [p.returncode for p in ups] == [0, 0], outputs
    infos = [json.loads(out) for out, _ in outputs]
    assert infos[0]["pid"] == infos[1]["pid"], infos
    # the loser of the race may have spawned a daemon that finds the name taken and exits: it goes
    deadline = time.monotonic() + 60  # suite-rules: outer-bound (it exits as soon as it sees the lock)
    daemons = _daemons(cli.home)
    while time.monotonic() < deadline and daemons != [infos[0]["pid"]]:
        time.sleep(0.5)
        daemons = _daemons(cli.home)
    assert daemons == [infos[0]["pid"]]


def _gone(pid: int) -> bool:
    """No such process, or only its zombie (its parent exited and nobody reaped it yet)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _daemons(home: Path) -> list[int]:
    """PIDs of cluster daemons serving under ``home``.

    A daemon's child between fork and exec carries the daemon's command line and environment (it
    starts node processes all the time): a match whose parent also matches is that, not a daemon.
    """
    found: dict[int, int] = {}
    for proc in psutil.process_iter(["pid", "ppid", "cmdline"]):
        try:
            if ("serve" in (proc.info["cmdline"] or []) and proc.status() != psutil.STATUS_ZOMBIE
                    and proc.environ().get("SREGYM_HOME") == str(home)):
                found[proc.info["pid"]] = proc.info["ppid"]
        except psutil.Error:
            continue
    return sorted(pid for pid, parent in found.items() if parent not in found)
