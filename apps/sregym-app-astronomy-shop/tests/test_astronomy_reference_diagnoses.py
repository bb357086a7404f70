"""The reference agent's diagnosis of the problems aliased to upstream ids in issue #40 passes the
offline judge (judge-rules) on every checklist question: the problem's own faults, targets and params,
the ground truth built before injection (a recording kubectl), the text the reference agent submits."""

from __future__ import annotations

import pytest

from sregym_core.testing.contracts import assert_reference_passes_problem

describe_truth = pytest.importorskip("sregym_agent_baselines.agents").describe_truth

PROBLEMS = ("astronomy-flag-load-generator-flood-homepage",)


@pytest.mark.parametrize("problem_id", PROBLEMS)
def test_the_reference_diagnosis_passes_every_question(problem_id):
    assert_reference_passes_problem(problem_id, describe_truth)
