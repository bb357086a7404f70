"""The plugin's registration, and `sregym judge calibrate` (judge-rules' command) with judge-llm."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from judge_llm_stub import rules_backed_reply
from sregym_judge_llm import plugin
from sregym_judge_rules.calibration import default_dataset_path
from sregym_judge_rules.cli import judge_group

HOLDOUT = str(default_dataset_path().with_name("calibration-holdout.jsonl"))


def test_plugin_registers_judges():
    specs = plugin.sregym_oracles(host=None)
    assert [(s.name, s.kind) for s in specs] == [("judge-llm", "judge"), ("judge-llm-gated", "judge")]


def test_plugin_loads_through_its_entry_point():
    from sregym_core.plugins import new_plugin_host

    host = new_plugin_host(builtins=True, entry_points=True)
    oracles = host.get_oracles()
    assert oracles["judge-llm"].kind == "judge" and oracles["judge-rules"].kind == "judge"


def test_calibrate_llm_without_model_is_a_clear_error():
    result = CliRunner().invoke(judge_group, ["calibrate", "--judge", "judge-llm", "--dataset", HOLDOUT],
                                env={"JUDGE_MODEL": "", "JUDGE_MODEL_ID": ""})
    assert result.exit_code != 0 and "judge-llm needs a model" in result.output


@pytest.mark.slow
def test_calibrate_llm_against_rules_via_stub_server(stub_llm):
    stub_llm.script = [rules_backed_reply]
    result = CliRunner().invoke(
        judge_group,
        ["calibrate", "--judge", "judge-llm", "--judge", "judge-rules", "--dataset", HOLDOUT,
         "--judge-model", "openai/stub-judge", "--judge-api-base", stub_llm.url, "--json"],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert len(stub_llm.requests) == 20
    between = data["between_judges"][0]
    assert between["raters"] == ["judge-llm", "judge-rules"] and between["overall"]["agreement"] == 1.0
