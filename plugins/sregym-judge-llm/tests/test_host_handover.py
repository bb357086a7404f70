"""judge-llm-gated finds judge-rules in the plugin host its registration hook was handed, never in a
process-wide host (sregym_core.catalog; issue #39)."""

from __future__ import annotations

import warnings

from sregym_judge_llm import plugin

from sregym_core import hookimpl
from sregym_core.oracles.judge import JudgeVerdict
from sregym_core.plugins import new_plugin_host
from sregym_core.types import GroundTruth, OracleSpec

TRUTH = GroundTruth(fault="wrong-image", layer="k8s", components=("geo",), namespace="hotel",
                    resource_kind="Deployment", mechanism="image tag that does not exist")


class StandInRules:
    """A judge-rules stand-in whose hard gates always fail (so no model is ever called)."""

    def __init__(self, seen: list, **options):
        self.seen, self.options = seen, options

    def judge(self, submission, truth, *, app_components, app_namespace):
        self.seen.append((submission, self.options))
        return JudgeVerdict(judge="judge-rules", passed=False, composite=0.0, dimensions={}, answers=(),
                            inputs={"gates": {"passed": False, "failed": ["stand-in"]}})


def test_the_gated_judge_uses_the_judge_rules_of_the_host_it_was_registered_with():
    seen: list = []

    class Rules:
        @hookimpl
        def sregym_oracles(self):
            return [OracleSpec(name="judge-rules", kind="judge", factory=lambda **o: StandInRules(seen, **o))]

    host = new_plugin_host(builtins=False, entry_points=False)
    host.register(plugin, name="judge-llm")
    host.register(Rules(), name="judge-rules")
    gated = host.get_oracles()["judge-llm-gated"].factory(model="openai/never-called", threshold=0.6)
    assert gated.host is host
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # no reaching for the deprecated global
        verdict = gated.judge("geo runs a bad image", TRUTH, app_components=("geo",), app_namespace="hotel")
    assert seen == [("geo runs a bad image", {"threshold": 0.6, "rubric": "sregym"})]
    assert verdict.judge == "judge-llm-gated" and not verdict.passed
    assert verdict.inputs["gated_by"] == "judge-rules"
