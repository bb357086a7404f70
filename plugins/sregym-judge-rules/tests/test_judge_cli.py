"""`sregym judge calibrate` and the plugin's registration."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
from click.testing import CliRunner
from sregym_judge_rules import plugin
from sregym_judge_rules.calibration import default_dataset_path
from sregym_judge_rules.cli import judge_group

HOLDOUT = str(default_dataset_path().with_name("calibration-holdout.jsonl"))


def test_plugin_registers_judge_and_command():
    (spec,) = plugin.sregym_oracles()
    assert (spec.name, spec.kind) == ("judge-rules", "judge")
    root = click.Group("sregym")
    plugin.sregym_register_commands(cli=root)
    assert "calibrate" in root.commands["judge"].commands


def test_plugin_loads_through_its_entry_point():
    from sregym_core.plugins import new_plugin_host

    host = new_plugin_host(builtins=True, entry_points=True)
    assert host.get_oracles()["judge-rules"].kind == "judge"


def test_calibrate_command_prints_agreement():
    result = CliRunner().invoke(judge_group, ["calibrate", "--dataset", HOLDOUT])
    assert result.exit_code == 0, result.output
    assert "judge-rules vs labels:" in result.output and "all questions" in result.output
    as_json = CliRunner().invoke(judge_group, ["calibrate", "--dataset", HOLDOUT, "--json"])
    data = json.loads(as_json.stdout)
    assert data["items"] == 20 and data["vs_labels"][0]["raters"] == ["judge-rules", "labels"]


def test_calibrate_command_errors_are_clear(tmp_path):
    result = CliRunner().invoke(judge_group, ["calibrate", "--dataset", str(tmp_path / "missing.jsonl")])
    assert result.exit_code != 0 and "does not exist" in result.output


def test_sregym_judge_calibrate_end_to_end():
    sregym = Path(sys.executable).with_name("sregym")
    proc = subprocess.run([str(sregym), "judge", "calibrate"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "SREGYM_DISABLE_PLUGINS": ""})
    assert proc.returncode == 0, proc.stderr
    assert "judge-rules vs labels (pass/fail):" in proc.stdout and "(224 diagnoses" in proc.stdout
    assert "false-pass rate" in proc.stdout and "Cohen's kappa" in proc.stdout and "universal" in proc.stdout
