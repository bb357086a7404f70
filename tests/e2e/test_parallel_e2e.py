"""End to end: ``sregym run --parallel 2`` runs two environments side by side, as a user runs it.

The shared cluster is environment 1 (its app already deployed); the command brings up a second
cluster ``<shared>-2`` beside it and deploys the app there. Each environment serves its own agent
API/MCP ports; the records land in one results directory, each naming its environment; the verdicts
are the serial run's (the reference's fix takes, noop and restart-all fail). The second cluster is
stopped afterwards. Soundness under ``validate --parallel`` is a validation run's (docs/ci.md): it
grades the reference's service level, which this landing test does not.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sregym_core.testing.verdicts import assert_fix_took

pytestmark = pytest.mark.slow

SREGYM = str(Path(sys.executable).parent / "sregym")


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


if not (_installed("sregym_cluster_embedded") and _installed("sregym_app_hotel_reservation")
        and _installed("sregym_agent_baselines") and _installed("sregym_fault_k8s")):
    pytest.skip("needs the embedded cluster, hotel-reservation, the baseline agents and the k8s faults",
                allow_module_level=True)


def test_validate_parallel_two_environments(shared_cluster, tmp_path):
    second = f"{shared_cluster.name}-2"
    results = tmp_path / "results"
    started = time.monotonic()
    try:
        done = subprocess.run([SREGYM, "run", "--problem", "hotel-scale-zero-rate",
                               "--agent", "reference", "--agent", "noop", "--agent", "restart-all", "--parallel", "2",
                               "--cluster", shared_cluster.name, "--results", str(results)],
                              env=shared_cluster.environ, capture_output=True, text=True, timeout=900)
    finally:
        subprocess.run([SREGYM, "cluster", "down", "--name", second], env=shared_cluster.environ,
                       capture_output=True, timeout=180)
    wall = time.monotonic() - started
    print(f"\n--parallel 2 run: {wall:.1f} s")
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    # each environment its own agent surface, on its own ports
    apis = dict(re.findall(r"\[env (\d)\] agent API: http://127\.0\.0\.1:(\d+)", done.stderr))
    assert set(apis) == {"1", "2"} and len(set(apis.values())) == 2, done.stderr[-3000:]
    assert f"cluster: bringing up {second}" in done.stderr
    records = [json.loads(line) for line in (results / "results.jsonl").read_text().splitlines()]
    assert sorted(r["agent"] for r in records) == ["noop", "reference", "restart-all"]  # each item once
    assert {r["extra"]["environment"] for r in records} <= {1, 2}
    by_agent = {r["agent"]: r for r in records}
    assert_fix_took(by_agent["reference"])
    assert by_agent["noop"]["mitigation_passed"] is False and by_agent["restart-all"]["mitigation_passed"] is False
    # the second cluster is gone; the shared one still serves
    status = subprocess.run([SREGYM, "cluster", "status"], env=shared_cluster.environ, capture_output=True,
                            text=True, timeout=60)
    assert not re.search(rf"^{re.escape(second)}\s+running", status.stdout, re.M), status.stdout
