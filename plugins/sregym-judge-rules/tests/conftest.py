"""Fixtures of the judge's tests that grade texts on the curated problems' own ground truths."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sregym_judge_rules import RulesJudge
from sregym_judge_rules.calibration import curated_truths

from sregym_core.plugins import process_host
from sregym_core.oracles.judge import JudgeVerdict


@pytest.fixture(scope="session")
def curated() -> dict:
    """Per curated problem: (its app, its ground truths), derived as `sregym validate` derives them."""
    host = process_host()
    apps = host.get_apps()
    return {pid: (apps[app], truths)
            for pid, (app, _components, _namespace, truths) in curated_truths(host.get_problems(), host=host).items()}


@pytest.fixture(scope="session")
def judge_on(curated) -> Callable[[str, str], JudgeVerdict]:
    """``judge_on(problem_id, text)``: the rules judge's verdict on ``text`` for that curated problem, called as a
    run calls it."""
    def judge(problem_id: str, submission: str) -> JudgeVerdict:
        app, truths = curated[problem_id]
        return RulesJudge().judge(submission, truths, app_components=tuple(c.name for c in app.components),
                                  app_namespace=app.namespace)
    return judge


@pytest.fixture(scope="session")
def passes(judge_on) -> Callable[[str, str], bool]:
    """``passes(problem_id, text)``: whether the rules judge passes ``text`` for that curated problem."""
    return lambda problem_id, submission: judge_on(problem_id, submission).passed
