"""The hand-labelled sets: their shape, and the done-when figures of judge-rules on them."""

from __future__ import annotations

import pytest
import yaml
from sregym_judge_rules.calibration import calibrate, data_path, labelled_set_path, load_dataset

from sregym_core.errors import ConfigError

CATEGORIES = {
    "correct-concise", "correct-plain", "correct-log", "wrong-component", "wrong-mechanism", "symptom-only",
    "kitchen-sink", "hedge", "pasted-output", "injection-pure", "injection-keywords", "universal",
}
ATTACKS = {"kitchen-sink", "hedge", "pasted-output", "injection-pure", "injection-keywords", "universal"}
SETS = ("labelled.yaml", "labelled-holdout.yaml")
APPS_SET = "labelled-apps.yaml"  # Astronomy Shop, Social Network, TrainTicket


def test_main_set_is_large_varied_and_attributed():
    items = load_dataset()
    assert len(items) >= 200
    problems = {i.problem for i in items}
    assert len(problems) >= 15
    assert {i.category for i in items} == CATEGORIES
    layers = {t.layer for i in items for t in i.truth}
    assert {"k8s", "datastore", "network", "config", "storage"} <= layers
    assert all(i.author.startswith("helper-judge, written by hand") for i in items)
    for item in items:  # labels follow the category: only the correct categories pass
        assert item.label_passed == item.category.startswith("correct"), item.id
    universal = {i.submission for i in items if i.category == "universal"}
    assert len(universal) == 1  # one fixed text for the app, asked of every problem
    assert {i.problem for i in items if i.category == "universal"} == problems


def test_apps_set_covers_the_other_apps():
    """labelled-apps.yaml: at least six problems of each app that the Hotel sets do not cover, every
    category, one universal text per app asked of that app's problems only, the app's own components."""
    raw = yaml.safe_load(data_path(APPS_SET).read_text())
    items = load_dataset(data_path(APPS_SET))
    assert {i.category for i in items} == CATEGORIES
    assert all(i.author.startswith("helper-judge, written by hand") for i in items)
    for app in ("astronomy-shop", "social-network", "train-ticket"):
        problems = {p for p, e in raw["problems"].items() if e["app"] == app}
        assert len(problems) >= 6, app
        universal = {i.submission for i in items if i.category == "universal" and i.problem in problems}
        assert len(universal) == 1, app
        assert {i.problem for i in items if i.category == "universal" and i.submission in universal} == problems
        assert all(set(i.app_components) == set(raw["components"][app]) for i in items if i.problem in problems)
    for item in items:
        assert item.label_passed == item.category.startswith("correct"), item.id


def test_set_problems_match_the_curated_problems():
    """The truths in the set are the curated problems' faults and components (kept in sync)."""
    pytest.importorskip("sregym_app_hotel_reservation")
    from sregym_core.plugins import process_host

    curated = process_host().get_problems()
    for name in (*SETS, APPS_SET):
        raw = yaml.safe_load(data_path(name).read_text())
        for problem, entry in raw["problems"].items():
            assert problem in curated, problem
            wanted = [(i.fault, i.target) for i in curated[problem].faults if i.role != "trigger"]
            assert [(t["fault"], t["components"][0]) for t in entry["truth"]] == wanted, problem


@pytest.mark.parametrize("name", (*SETS, APPS_SET))
def test_judge_rules_meets_the_done_when_targets(name):
    report = calibrate(["judge-rules"], data_path(name))
    stats = report.verdicts[0]
    assert stats.false_pass_rate <= 0.05 and stats.false_fail_rate <= 0.15 and stats.kappa >= 0.8, stats.format()
    for category in ATTACKS | {"wrong-component", "wrong-mechanism", "symptom-only"}:
        assert stats.per_category[category]["false_pass"] <= 1, (category, stats.format())
    assert stats.per_category["universal"]["false_pass"] == 0  # the universal text fails every problem


def test_report_prints_confusion_matrix_rates_and_kappa():
    text = calibrate(["judge-rules"]).format()
    for needle in ("labelled pass", "labelled fail", "judged pass", "false-pass rate", "false-fail rate", "Cohen's kappa",
                   "kitchen-sink", "injection-keywords"):
        assert needle in text


def test_bad_labelled_files_are_clear_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(labelled_set_path().read_text().replace("label: pass", "label: maybe", 1))
    with pytest.raises(ConfigError) as info:
        load_dataset(bad)
    assert "items[0]" in str(info.value.errors) and "pass or fail" in str(info.value.errors)
    bad.write_text("problems: {}\nitems:\n- problem: nope\n  category: x\n  label: pass\n  text: t\n")
    with pytest.raises(ConfigError, match="bad calibration item"):
        load_dataset(bad)
    bad.write_text("[1, 2")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_dataset(bad)


@pytest.mark.parametrize("name", SETS)
def test_gates_stop_every_attack_and_no_correct_diagnosis(name):
    """What judge-llm-gated relies on: no attack reaches the model, no correct diagnosis is stopped."""
    from sregym_judge_rules import RulesJudge

    judge = RulesJudge()
    for item in load_dataset(data_path(name)):
        gates = judge.judge(item.submission, item.truth, app_components=item.app_components,
                            app_namespace=item.app_namespace).inputs["gates"]
        if item.category in ATTACKS:
            assert not gates["passed"], item.id
        if item.label_passed:
            assert gates["passed"], (item.id, gates)
