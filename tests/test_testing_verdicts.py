"""sregym_core.testing.verdicts: the landing suite's reading of a recorded mitigation verdict."""

from __future__ import annotations

import pytest

from sregym_core.testing.verdicts import assert_fix_took, fix_problems


def leaf(name, passed=True, **evidence):
    return {"name": name, "passed": passed, "evidence": evidence, "children": []}


def all_of(*children):
    return {"name": "all", "passed": all(c["passed"] for c in children), "evidence": {}, "children": list(children)}


def slo(passed, count=40, content_errors=0, reason="success rate 0.900 < 0.99"):
    return leaf("functional_slo", passed, stats={"count": count, "content_errors": content_errors},
                max_content_error_rate=0.01, **({} if passed else {"reason": reason}))


def test_a_fix_that_passed_everything_took():
    assert fix_problems(all_of(leaf("baseline_preserved"), leaf("fault_invariant"), slo(True),
                               leaf("workload_healthy"))) == []


def test_a_service_level_miss_on_the_machine_is_left_to_validation_runs():
    # the short-circuit stopped before workload_healthy: the state checks that ran passed
    assert fix_problems(all_of(leaf("baseline_preserved"), leaf("fault_invariant"), slo(False))) == []


def test_wrong_content_a_state_check_or_an_error_is_not_a_fix():
    assert fix_problems(all_of(leaf("baseline_preserved"), leaf("fault_invariant"),
                               slo(False, content_errors=30, reason="30 of 40 answers had wrong content")))
    assert fix_problems(all_of(leaf("baseline_preserved"), leaf("fault_invariant", False, reason="still there")))
    broken = {**slo(False), "error": "the workload generator did not answer"}
    assert fix_problems(all_of(leaf("baseline_preserved"), leaf("fault_invariant"), broken))
    assert fix_problems(all_of(leaf("baseline_preserved"), leaf("fault_invariant"), slo(True),
                               leaf("workload_healthy", False, reason="0/1 ready")))


def test_the_state_checks_must_have_run():
    assert fix_problems(all_of(slo(True))) == ["baseline_preserved did not run", "fault_invariant did not run"]
    assert fix_problems(None) == ["no mitigation verdict was recorded"]
    with pytest.raises(AssertionError, match="fault_invariant"):
        assert_fix_took({"mitigation": all_of(leaf("baseline_preserved"), leaf("fault_invariant", False))})
