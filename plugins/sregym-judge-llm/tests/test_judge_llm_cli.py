"""`sregym judge calibrate` and the plugin's registration."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from sregym_judge_llm import plugin
from sregym_judge_llm.calibration import default_dataset_path

from conftest import rules_backed_reply

HOLDOUT = str(default_dataset_path().with_name("calibration-holdout.jsonl"))


def test_plugin_registers_judge_and_command():
    (spec,) = plugin.sregym_oracles()
    assert (spec.name, spec.kind) == ("judge-llm", "judge")
    root = click.Group("sregym")
    plugin.sregym_register_commands(cli=root)
    assert "calibrate" in root.commands["judge"].commands


def test_plugin_loads_through_its_entry_point():
    from sregym_core.plugins import new_plugin_host

    host = new_plugin_host(builtins=True, entry_points=True)
    oracles = host.get_oracles()
    assert oracles["judge-llm"].kind == "judge" and oracles["judge-rules"].kind == "judge"


def test_calibrate_command_prints_agreement():
    from sregym_judge_llm.cli import judge_group

    result = CliRunner().invoke(judge_group, ["calibrate", "--dataset", HOLDOUT])
    assert result.exit_code == 0, result.output
    assert "judge-rules vs labels:" in result.output and "all questions" in result.output
    as_json = CliRunner().invoke(judge_group, ["calibrate", "--dataset", HOLDOUT, "--json"])
    data = json.loads(as_json.stdout)
    assert data["items"] == 20 and data["vs_labels"][0]["raters"] == ["judge-rules", "labels"]


def test_calibrate_command_errors_are_clear(tmp_path):
    from sregym_judge_llm.cli import judge_group

    result = CliRunner().invoke(judge_group, ["calibrate", "--dataset", str(tmp_path / "missing.jsonl")])
    assert result.exit_code != 0 and "does not exist" in result.output
    result = CliRunner().invoke(judge_group, ["calibrate", "--judge", "judge-llm", "--dataset", HOLDOUT], env={"JUDGE_MODEL": ""})
    assert result.exit_code != 0 and "judge-llm needs a model" in result.output


def test_sregym_judge_calibrate_end_to_end():
    sregym = Path(sys.executable).with_name("sregym")
    proc = subprocess.run([str(sregym), "judge", "calibrate"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "SREGYM_DISABLE_PLUGINS": ""})
    assert proc.returncode == 0, proc.stderr
    assert "judge-rules vs labels:" in proc.stdout and "(63 diagnoses" in proc.stdout


@pytest.mark.slow
def test_calibrate_llm_against_rules_via_stub_server(stub_llm):
    from sregym_judge_llm.cli import judge_group

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
