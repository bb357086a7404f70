"""Cohen's kappa, the shipped labelled set, and calibration runs (offline with judge-rules)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from sregym_judge_rules import RulesJudge
from sregym_judge_rules.calibration import (
    calibrate,
    cohen_kappa,
    default_dataset_path,
    load_dataset,
)

from sregym_core.errors import ConfigError
from sregym_core.oracles.judge import QUESTION_IDS

PLUGIN = Path(__file__).resolve().parents[1]
HOLDOUT = default_dataset_path().with_name("calibration-holdout.jsonl")


def test_kappa_known_values():
    assert cohen_kappa([True, True, False, False], [True, False, False, False]) == 0.5
    assert cohen_kappa([True, False] * 5, [True, False] * 5) == 1.0
    assert cohen_kappa([True, False, True, False], [False, True, False, True]) == -1.0
    # textbook example: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no -> po 0.7, pe 0.5, kappa 0.4
    a = [True] * 25 + [False] * 25
    b = [True] * 20 + [False] * 5 + [True] * 10 + [False] * 15
    assert cohen_kappa(a, b) == 0.4
    assert cohen_kappa([True] * 4, [True] * 4) is None  # no variation: undefined
    assert cohen_kappa([], []) is None
    with pytest.raises(ValueError):
        cohen_kappa([True], [True, False])


def test_shipped_set_is_large_varied_and_consistent():
    items = load_dataset(default_dataset_path())
    assert len(items) >= 60
    categories = {i.category for i in items}
    assert {"correct", "wrong-component", "wrong-mechanism", "over-broad", "vague"} <= categories
    faults = {t.fault for i in items for t in i.truth}
    assert {"wrong-image", "db-revoke", "scale-zero", "selector-mismatch"} <= faults
    assert any("port" in f for f in faults)
    for item in items:
        assert item.app_namespace == "hotel-reservation" and len(item.app_components) == 17
        assert set(item.labels) == set(QUESTION_IDS)
        for truth in item.truth:
            assert set(truth.components) <= set(item.app_components)
        if item.category == "correct":
            assert item.label_passed, item.id
        if item.category in ("wrong-component", "wrong-mechanism", "over-broad", "vague", "injection"):
            assert not item.label_passed, item.id
    over_broad = [i for i in items if i.category == "over-broad"]
    assert all(not any(i.labels[q] for q in ("scope_no_unrelated", "scope_all_faults", "scope_priority")) for i in over_broad)


def test_shipped_files_are_what_the_builder_writes(tmp_path):
    spec = importlib.util.spec_from_file_location("build_calibration", PLUGIN / "tools" / "build_calibration.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(tmp_path)
    for name in ("calibration.jsonl", "calibration-holdout.jsonl"):
        assert (tmp_path / name).read_text() == (default_dataset_path().parent / name).read_text(), name


def test_calibrate_rules_offline_against_per_question_labels():
    report = calibrate(["judge-rules"], default_dataset_path())
    assert report.items >= 60 and not report.between_judges
    agreement = report.vs_labels[0]
    assert agreement.raters == ("judge-rules", "labels")
    # labelled by another author, per question, for the previous rules: the verdicts must still agree
    assert agreement.overall[0] >= 0.7 and agreement.verdict[0] >= 0.9
    text = report.format()
    assert "judge-rules vs labels:" in text and "pass/fail" in text and "scope_priority" in text


def test_calibrate_holdout_set():
    report = calibrate(["judge-rules"], HOLDOUT)
    assert report.items == 20
    assert report.vs_labels[0].overall[0] >= 0.7


def test_two_judges_are_compared_with_each_other():
    strict = RulesJudge(threshold=0.95)
    report = calibrate(["judge-rules", strict], HOLDOUT)
    names = [a.raters for a in report.between_judges]
    assert names == [("judge-rules#1", "judge-rules#2")]
    between = report.between_judges[0]
    assert all(kappa in (1.0, None) for kappa, _ in between.per_question.values())  # same answers
    assert between.verdict[1] < 1.0  # but a stricter threshold flips some verdicts
    assert json.loads(json.dumps(report.to_dict()))["between_judges"][0]["overall"]["agreement"] == 1.0


def test_bad_datasets_and_judges(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_dataset(tmp_path / "none.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "truth": [], "submission": "s", "labels": {"loc_component": true}}\n')
    with pytest.raises(ConfigError) as info:
        load_dataset(bad)
    assert "bad.jsonl:1" in str(info.value)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(ConfigError, match="empty"):
        load_dataset(empty)
    with pytest.raises(ConfigError, match="unknown judge"):
        calibrate(["judge-nonexistent"], HOLDOUT)
    with pytest.raises(ConfigError, match="at least one judge"):
        calibrate([], HOLDOUT)
