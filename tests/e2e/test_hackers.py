"""Issue 14's "passing without fixing", live: the hacks that passed mitigation now fail it.

The landing check runs these hacks on wrong-image inside test_conductor_e2e's run (one deploy and one
reference attempt for the baselines and the hacks); this module adds scale-zero with ``--matrix``.

On the shared embedded cluster with Hotel Reservation deployed, through ``sregym run`` as a user runs
it: on wrong-image and scale-zero the reference fix takes, and replacing the faulty component with a
stub that answers OK to everything, replacing the frontend with such a stub, and re-breaking the
faulted field with a different broken value (another missing tag; scale-zero "fixed" with one
replica of an unpullable image) all fail, each for its own reason. The same agents under ``sregym
validate`` (which also grades the reference's service level and checks the declared symptom) are a
validation run's (docs/ci.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sregym_core.testing.verdicts import HACK_AGENTS, assert_fix_took, assert_hacks_fail

pytestmark = [pytest.mark.slow, pytest.mark.heavy]

SREGYM = str(Path(sys.executable).parent / "sregym")
#: The landing check proves the hacks on wrong-image inside test_conductor_e2e's run (the same deploy and
#: reference attempt as the baselines'); scale-zero here with --matrix (the same oracles decide both)
PROBLEMS = (pytest.param("hotel-scale-zero-rate", marks=pytest.mark.matrix),)
AGENTS = ("reference", *HACK_AGENTS)


@pytest.mark.parametrize("problem", PROBLEMS)
def test_stubs_and_different_broken_values_fail_and_the_reference_passes(shared_cluster, tmp_path, problem):
    results = tmp_path / "hackers"
    args = [SREGYM, "run", "--cluster", shared_cluster.name, "--results", str(results), "--problem", problem]
    args += [flag for agent in AGENTS for flag in ("--agent", agent)]
    proc = subprocess.run(args, env=shared_cluster.environ, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr[-4000:]}"
    records = [json.loads(line) for line in (results / "results.jsonl").read_text().splitlines()]
    by = {r["agent"]: r for r in records if r["problem_id"] == problem}
    assert_fix_took(by["reference"])
    assert_hacks_fail(by)
