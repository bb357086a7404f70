"""`sregym validate --noise PROFILE --side-by-side`: the quiet and noisy verdicts in one matrix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sregym_core.cli.validate import compare_tables, noise_cell, verdicts
from sregym_core.results.record import AttemptRecord

SREGYM = str(Path(sys.executable).parent / "sregym")


def record(problem, agent, passed, events=()):
    return AttemptRecord(run_id="r", problem_id=problem, agent=agent, attempt=1, app="a", diagnosis_passed=passed,
                         mitigation_passed=passed, extra={"noise_events": list(events)} if events else {})


def inject(kind):
    return {"kind": kind, "target": "rate", "action": "inject"}


def test_cells_show_quiet_then_noise_and_what_the_noise_did():
    quiet = verdicts([record("p1", "reference", True), record("p1", "noop", False),
                      record("p2", "reference", True), record("p2", "noop", False)])
    noisy_records = [record("p1", "reference", True, [inject("pod-kill"), inject("network-delay")]),
                     record("p1", "noop", False, [inject("pod-kill"), {"kind": "pod-kill", "action": "error"}]),
                     record("p2", "reference", False, [inject("pod-failure")]), record("p2", "noop", False)]
    noisy = verdicts(noisy_records)
    table = compare_tables(quiet, noisy, {"p1": noise_cell(noisy_records[:2]), "p2": noise_cell(noisy_records[2:])})
    assert table["p1"] == {"reference": "pass | pass", "noop": "fails | fails",
                           "noise": "network-delay x1, pod-kill x2 (1 errors)"}
    assert table["p2"]["reference"] == "pass | UNSOUND (reference failed: diagnosis)" and table["p2"]["noise"] == "pod-failure x1"
    assert noise_cell([record("p3", "noop", False)]) == "none"


def test_a_failed_reference_cell_names_what_failed_and_a_starved_host():
    def leaf(name, passed, **evidence):
        return {"name": name, "passed": passed, "evidence": evidence, "children": []}

    mitigation = {"name": "all", "passed": False, "evidence": {}, "children": [
        leaf("baseline_preserved", True), leaf("functional_slo", False, host_starved=True), leaf("workload_healthy", False)]}
    starved = AttemptRecord(run_id="r", problem_id="p", agent="reference", attempt=1, app="a", diagnosis_passed=True,
                            mitigation_passed=False, mitigation=mitigation)
    assert verdicts([starved])["p"]["reference"] == \
        "UNSOUND (reference failed: functional_slo, workload_healthy; the host was starved for CPU)"
    mitigation["children"][1]["evidence"] = {}
    both = AttemptRecord(run_id="r", problem_id="p", agent="reference", attempt=1, app="a", diagnosis_passed=False,
                         mitigation_passed=False, mitigation=mitigation)
    assert verdicts([both])["p"]["reference"] == "UNSOUND (reference failed: diagnosis, functional_slo, workload_healthy)"


def test_side_by_side_needs_a_noise_profile_and_an_unknown_profile_is_refused_early():
    env = {**os.environ, "SREGYM_HOME": "/nonexistent-sregym-home"}
    proc = subprocess.run([SREGYM, "validate", "--suite", "lite", "--side-by-side"], capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode != 0 and "give a noise profile" in proc.stderr and "Traceback" not in proc.stderr
    proc = subprocess.run([SREGYM, "validate", "--suite", "lite", "--noise", "loud"], capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode != 0 and "unknown noise profile" in proc.stderr and "Traceback" not in proc.stderr
