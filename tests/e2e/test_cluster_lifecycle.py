"""Cluster lifecycle through the CLI, as a script driving a benchmark does it: runs back to back on
one cluster name, two commands on the same name at once, and what ``--keep-cluster`` promises.

The cheapest real run: Hotel Reservation with the ``noop`` fault and the ``noop`` agent, no
observability stack. The module uses its own cluster (a temporary SREGYM_HOME) and checks that
nothing keeps running afterwards.
"""

from __future__ import annotations

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


def test_runs_back_to_back_share_the_kept_cluster(cli, tmp_path):
    code, _ = cli.status()
    assert code == 3, "the module starts without a cluster"
    _ran(cli(*cli.run(tmp_path / "first")), tmp_path / "first")
    # --keep-cluster (the default): the cluster the run brought up outlives it, answering
    code, first = cli.status()
    assert code == 0 and first["state"] == "running" and first["answering"], first
    deployments = cli.deployments()
    assert "geo" in deployments, "hotel-reservation is deployed"
    _ran(cli(*cli.run(tmp_path / "second")), tmp_path / "second")  # no pause
    code, second = cli.status()
    assert code == 0 and second["pid"] == first["pid"] and second["url"] == first["url"]
    assert cli.deployments() == deployments, "the second run reused the deployed app"


def test_two_commands_on_one_cluster_at_once(cli, tmp_path):
    # two commands that change the apps: the second one fails at once, naming the first
    first = cli.start(*cli.run(tmp_path / "a"))
    apps_lock = cli.home / "clusters" / NAME / "apps.lock"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and apps_lock.read_text().split()[:1] != [str(first.pid)]:
        assert first.poll() is None, first.communicate()[1][-3000:]
        time.sleep(0.1)
    second = cli("deploy", "hotel-reservation", "--cluster", NAME, "--no-observability",
                 "--workdir", str(tmp_path / "work"), timeout=120)
    assert second.returncode == 1
    assert f"cluster '{NAME}' is in use by another command" in second.stderr and str(first.pid) in second.stderr
    assert "Traceback" not in second.stderr
    _, err = first.communicate(timeout=600)
    assert first.returncode == 0, err[-3000:]
    assert not _record(tmp_path / "a")["deploy_failed"]


def test_no_keep_cluster_stops_it_and_the_next_run_starts_afresh(cli, tmp_path):
    code, running = cli.status()
    assert code == 0
    _ran(cli(*cli.run(tmp_path / "last", "--no-keep-cluster")), tmp_path / "last")
    code, after = cli.status()
    assert code == 3 and after["state"] == "stopped" and not after["answering"]
    assert _gone(running["pid"])
    # from a stopped cluster, two `up` at once start one daemon between them
    ups = [cli.start("cluster", "up", "--name", NAME, "--nodes", "0", "--json") for _ in range(2)]
    outputs = [p.communicate(timeout=300) for p in ups]
    assert [p.returncode for p in ups] == [0, 0], outputs
    infos = [json.loads(out) for out, _ in outputs]
    assert infos[0]["pid"] == infos[1]["pid"], infos
    assert _daemons(cli.home) == [infos[0]["pid"]]


def _gone(pid: int) -> bool:
    """No such process, or only its zombie (its parent exited and nobody reaped it yet)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _daemons(home: Path) -> list[int]:
    """PIDs of cluster daemons serving under ``home``."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        try:
            if ("serve" in (proc.info["cmdline"] or []) and proc.status() != psutil.STATUS_ZOMBIE
                    and proc.environ().get("SREGYM_HOME") == str(home)):
                found.append(proc.info["pid"])
        except psutil.Error:
            continue
    return found
