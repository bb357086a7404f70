"""Issue 14's "passing without fixing", live: the hacks that passed mitigation now fail it.

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

from sregym_core.testing.verdicts import assert_fix_took

pytestmark = [pytest.mark.slow, pytest.mark.heavy]

SREGYM = str(Path(sys.executable).parent / "sregym")
#: CI proves the hacks on wrong-image; scale-zero joins with --matrix (the same oracles decide both)
PROBLEMS = ("hotel-wrong-image-geo", pytest.param("hotel-scale-zero-rate", marks=pytest.mark.matrix))
AGENTS = ("reference", "stub-replace", "stub-frontend", "different-broken-value")


def _failed_leaves(verdict: dict) -> list[str]:
    if verdict["passed"]:
        return []
    below = [leaf for child in verdict.get("children", []) for leaf in _failed_leaves(child)]
    return below or [verdict["name"]]


@pytest.mark.parametrize("problem", PROBLEMS)
def test_stubs_and_different_broken_values_fail_and_the_reference_passes(shared_cluster, tmp_path, problem):
    results = tmp_path / "hackers"
    args = [SREGYM, "run", "--cluster", shared_cluster.name, "--results", str(results), "--problem", problem]
    args += [flag for agent in AGENTS for flag in ("--agent", agent)]
    proc = subprocess.run(args, env=shared_cluster.environ, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr[-4000:]}"
    records = [json.loads(line) for line in (results / "results.jsonl").read_text().splitlines()]
    by = {(r["problem_id"], r["agent"]): r for r in records}
    assert_fix_took(by[(problem, "reference")])
    for agent in AGENTS[1:]:
        record = by[(problem, agent)]
        assert not record["mitigation_passed"], f"{agent} passed {problem}"
    # the stub answers well-formed but empty results: only the content check sees it
    stub = by[(problem, "stub-replace")]["mitigation"]
    assert _failed_leaves(stub) == ["functional_slo"], stub
    assert "wrong content" in json.dumps(stub)
    # a stubbed frontend is an untouched workload whose pod template changed
    front = by[(problem, "stub-frontend")]["mitigation"]
    assert _failed_leaves(front) == ["baseline_preserved"] and "template_changed" in json.dumps(front)
    # the different broken value is not the injected one: only the system's health gives it away
    different = by[(problem, "different-broken-value")]["mitigation"]
    fault_invariant = next(c for c in different["children"] if c["name"] == "fault_invariant")
    assert fault_invariant["passed"], different
