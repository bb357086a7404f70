"""Live: ``sregym validate --executor ray --parallel 2`` on a real local Ray cluster, as a user runs it.

One run of one problem × (reference, noop) on two Ray workers, each with an embedded cluster of its
own; mid-run the test SIGKILLs the process of the first worker that takes an item. The run still
completes: the lost item is rerun on the other worker, every item is recorded exactly once, the
soundness matrix is the serial run's (run first, on the shared cluster), Ray listened on loopback
only, and nothing the run started is left running.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

# about 4.5 min on 2 cores (a serial validate, then two Ray workers each bringing up a cluster and
# deploying the app): over the CI budget for one test, so it runs with --matrix (SREGYM_MATRIX=1)
pytestmark = [pytest.mark.slow, pytest.mark.matrix]

pytest.importorskip("ray", reason="needs the ray package")
psutil = pytest.importorskip("psutil")
for module in ("sregym_cluster_embedded", "sregym_app_hotel_reservation", "sregym_agent_baselines",
               "sregym_fault_k8s"):
    pytest.importorskip(module, reason="needs the embedded cluster, hotel-reservation, baselines, k8s faults")

SREGYM = str(Path(sys.executable).parent / "sregym")
PROBLEM = "hotel-scale-zero-rate"
COMMAND = ["validate", "--problem", PROBLEM, "--agents", "reference,noop", "--no-symptom"]
RAY_PROCESS = re.compile(r"ray::|gcs_server|raylet|sregym-ray-|-ray-[12]\b")


def matrix_rows(stdout: str) -> list[str]:
    return [" ".join(line.split()) for line in stdout.splitlines() if line.startswith(PROBLEM)]


def listening_on(pids: set[int]) -> set[str]:
    addresses = set()
    for pid in pids:
        try:
            for conn in psutil.Process(pid).net_connections(kind="inet"):
                if conn.status == psutil.CONN_LISTEN:
                    addresses.add(conn.laddr.ip)
        except psutil.Error:
            pass
    return addresses


def test_validate_on_two_ray_workers_survives_a_killed_worker(embedded_cluster, tmp_path):
    environ = embedded_cluster.environ
    started = time.monotonic()
    serial = subprocess.run([SREGYM, *COMMAND, "--cluster", embedded_cluster.name, "--results", str(tmp_path / "serial")],
                            env=environ, capture_output=True, text=True, timeout=900)
    serial_wall = time.monotonic() - started
    assert serial.returncode == 0, (serial.stdout + serial.stderr)[-3000:]

    before = {p.pid for p in psutil.process_iter()}
    results = tmp_path / "ray"
    started = time.monotonic()
    run = subprocess.Popen([SREGYM, *COMMAND, "--executor", "ray", "--parallel", "2", "--cluster", "rayt",
                            "--results", str(results)], env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    stderr: list[str] = []
    pids: dict[str, int] = {}
    killed: dict[str, object] = {}
    ray_listens: set[str] = set()

    def read_progress() -> None:
        for line in run.stderr:
            stderr.append(line)
            if found := re.search(r"\[ray worker (\d)\] pid (\d+), cluster ready", line):
                pids[found[1]] = int(found[2])
            found = re.search(r"\[ray worker (\d)\] takes (\S+ × \S+ #\d)", line)
            if found and not killed:
                killed.update(worker=found[1], item=found[2])
                time.sleep(3)  # inside the item: the app deploying or the attempt running
                ray_listens.update(listening_on({p.pid for p in psutil.process_iter()
                                                 if p.pid not in before and RAY_PROCESS.search(" ".join(_cmdline(p)))}))
                os.kill(pids[found[1]], signal.SIGKILL)

    reader = threading.Thread(target=read_progress, daemon=True)
    reader.start()
    try:
        stdout = run.stdout.read()
        run.wait(timeout=1200)
    finally:
        if run.poll() is None:
            run.send_signal(signal.SIGINT)
            run.wait(timeout=120)
    reader.join(timeout=10)
    ray_wall = time.monotonic() - started
    print(f"\nserial validate: {serial_wall:.1f} s; --executor ray --parallel 2 with a worker killed: {ray_wall:.1f} s"
          f" (killed: {killed})")
    log = "".join(stderr)
    assert run.returncode == 0, (stdout + log)[-4000:]
    assert killed, log[-3000:]
    worker = killed["worker"]
    assert f"[ray worker {worker}] lost while running {killed['item']}" in log, log[-3000:]

    # every item recorded exactly once, the lost one by the other worker
    records = [json.loads(line) for line in (results / "results.jsonl").read_text().splitlines()]
    assert sorted(r["agent"] for r in records) == ["noop", "reference"], records
    lost_agent = killed["item"].split(" × ")[1].split(" #")[0]
    rerun = next(r for r in records if r["agent"] == lost_agent)
    assert rerun["extra"]["environment"] != int(worker)
    for record in records:  # the trajectories streamed back into the one results directory
        assert (results / record["trajectory_path"]).is_file()

    # the same soundness matrix as the serial run
    assert "all 1 problem(s) sound" in stdout
    assert matrix_rows(stdout) == matrix_rows(serial.stdout) != []

    # Ray bound loopback only, and everything the run started is gone
    assert ray_listens and all(ip.startswith("127.") or ip.startswith("::ffff:127.") for ip in ray_listens), ray_listens
    deadline = time.monotonic() + 60  # the killed worker's cluster stops once its daemon sees the owner gone
    while True:
        left = [" ".join(_cmdline(p))[:120] for p in psutil.process_iter()
                if p.pid not in before and RAY_PROCESS.search(" ".join(_cmdline(p)))]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert not left, left


def _cmdline(process) -> list[str]:
    try:
        return process.cmdline() or [process.name()]
    except psutil.Error:
        return []
