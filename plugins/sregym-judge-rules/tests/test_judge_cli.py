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


def _blind_set(tmp_path, rows) -> str:
    path = tmp_path / "blind.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return str(path)


BLIND_ROWS = [
    {"id": "b1", "problem_id": "hotel-wrong-image-geo", "voice": "terse", "category": "correct", "label": "pass",
     "diagnosis": "geo's image was set to a tag that does not exist, so geo is in ImagePullBackOff and search fails.",
     "why": "names geo and the missing tag"},
    {"id": "b2", "problem_id": "hotel-wrong-image-geo", "voice": "terse", "category": "wrong-component", "label": "fail",
     "diagnosis": "rate's image was set to a tag that does not exist, so rate is in ImagePullBackOff.", "why": "rate"},
    # labelled pass but a bare symptom: the judge fails it, so the set has one false fail to report
    {"id": "b3", "problem_id": "astronomy-scale-zero-currency", "voice": "chat", "category": "correct", "label": "pass",
     "diagnosis": "currency is broken.", "why": "mislabelled on purpose"},
]


def test_calibrate_blind_set_prints_aggregates_only(tmp_path):
    path = _blind_set(tmp_path, BLIND_ROWS)
    result = CliRunner().invoke(judge_group, ["calibrate", "--set", path])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "(3 diagnoses" in out and "false-fail rate 50.0%" in out and "false-pass rate 0.0%" in out
    assert "astronomy-shop" in out and "hotel-reservation" in out and "chat" in out  # per app, per voice
    assert "b3" not in out  # which items missed stays hidden on a held-out set
    shown = CliRunner().invoke(judge_group, ["calibrate", "--set", path, "--show-items"])
    assert "b3" in shown.output
    data = json.loads(CliRunner().invoke(judge_group, ["calibrate", "--set", path, "--json"]).stdout)
    (stats,) = data["verdicts"]
    assert stats["false_fail_rate"] == 0.5 and stats["confusion"]["false_fail"] == 1
    assert stats["per_app"]["astronomy-shop"] == {"items": 1, "labelled_pass": 1, "false_pass": 0, "false_fail": 1}
    assert stats["per_category"]["wrong-component"]["false_pass"] == 0 and data["disagreements"] == {}


def test_calibrate_blind_set_errors_are_clear(tmp_path):
    bad = _blind_set(tmp_path, [{**BLIND_ROWS[0], "label": "maybe"}])
    result = CliRunner().invoke(judge_group, ["calibrate", "--set", bad])
    assert result.exit_code != 0 and "label must be pass or fail" in result.output and "Traceback" not in result.output
    unknown = _blind_set(tmp_path, [{**BLIND_ROWS[0], "problem_id": "no-such-problem"}])
    result = CliRunner().invoke(judge_group, ["calibrate", "--set", unknown])
    assert result.exit_code != 0 and "unknown problem 'no-such-problem'" in result.output
    both = CliRunner().invoke(judge_group, ["calibrate", "--set", bad, "--dataset", bad])
    assert both.exit_code != 0 and "not both" in both.output
