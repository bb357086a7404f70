"""The reference agent's diagnosis of the problems aliased to upstream ids in issue #40 passes the
offline judge (judge-rules) on every checklist question: the problem's own faults, targets and params,
the ground truth built before injection (a recording kubectl), the text the reference agent submits."""

from __future__ import annotations

import pytest

from sregym_core.plugins import get_plugin_host
from sregym_core.testing.contracts import _offline_judge
from sregym_core.testing.recording import RecordingFaultContext
from sregym_core.types import Target
from sregym_core.validation import validate

describe_truth = pytest.importorskip("sregym_agent_baselines.agents").describe_truth

PROBLEMS = ("astronomy-flag-load-generator-flood-homepage",)


@pytest.mark.parametrize("problem_id", PROBLEMS)
def test_the_reference_diagnosis_passes_every_question(problem_id):
    judge = _offline_judge()
    if judge is None:
        pytest.skip("the judge-rules plugin is not installed")
    host = get_plugin_host()
    problem = host.get_problems()[problem_id]
    app, faults = host.get_apps()[problem.app], host.get_faults()
    truths = []
    for instance in problem.faults:
        spec = faults[instance.fault]
        target = Target(app=app, component=app.component(instance.target), namespace=app.namespace)
        params = validate(dict(instance.params), dict(spec.params_schema), what=instance.fault, fill_defaults=True)
        ctx = RecordingFaultContext(kubeconfig="/nonexistent", namespace=app.namespace, app=app).child()
        truths.append(spec.impl.ground_truth(ctx, target, params))
    verdict = judge.judge(describe_truth(tuple(truths)), tuple(truths),
                          app_components=tuple(c.name for c in app.components), app_namespace=app.namespace)
    assert verdict.passed and all(a.answer for a in verdict.answers), \
        [f"{a.id}: {a.evidence}" for a in verdict.answers if not a.answer]
