"""Results in upstream SREGym's shapes: the CSV columns and directory layout, ATIF v1.7 trajectories."""

from __future__ import annotations

import ast
import csv
import json

from sregym_core.conductor.runner import RunPlan, _with_trajectory
from sregym_core.results.record import AttemptRecord
from sregym_core.results.upstream_csv import UpstreamLayout, upstream_row
from sregym_core.results.writer import ResultsWriter

DIAGNOSIS = {"judge": "judge-rules", "passed": True, "composite": 0.78, "dimensions": {"localization": 1.0},
             "answers": [{"id": "loc_component", "dimension": "localization", "answer": True, "evidence": "names geo"}],
             "inputs": {"submission": "geo has a bad image"}}
MITIGATION = {"name": "all", "passed": False, "children": [
    {"name": "fault_invariant", "passed": False, "evidence": {"reason": "the fault is still present"}},
    {"name": "baseline_preserved", "passed": True}]}


def record(**changes) -> AttemptRecord:
    base = dict(run_id="r1", problem_id="hotel-wrong-image-geo", agent="react", attempt=1, model="gpt-x",
                diagnosis_passed=True, diagnosis=DIAGNOSIS, mitigation_passed=False, mitigation=MITIGATION,
                time_to_diagnose_s=3.0, diagnosis_graded_s=4.5, time_to_mitigate_s=20.0, mitigation_graded_s=61.25,
                agent_timeout_s=1800, timeouts=())
    base.update(changes)
    return AttemptRecord(**base)


def read(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def test_upstream_row_columns_and_values():
    row = upstream_row(record())
    assert row["problem_id"] == "hotel-wrong-image-geo"  # run by our id: keyed by it
    assert row["Diagnosis.judgment"] == row["Diagnosis.success"] == "True"
    assert row["Diagnosis.accuracy"] == 78.0 and row["Diagnosis.composite_score"] == 0.78
    assert ast.literal_eval(row["Diagnosis.dimensions"]) == {"D1": {"name": "Fault Localization", "score": 1.0}}
    assert ast.literal_eval(row["Diagnosis.checklist"]) == [
        {"id": "loc_component", "answer": "Yes", "evidence": "names geo", "confidence": "High"}]
    assert row["Diagnosis.submission"] == "geo has a bad image"
    assert row["TTL"] == 4.5 and row["TTM"] == 61.25  # end of injection to the end of grading
    assert row["Mitigation.success"] == "False"
    assert row["Mitigation.reason"] == "fault_invariant: the fault is still present"
    assert row["timed_out"] == "False" and row["agent_timeout_seconds"] == 1800 and row["deploy_failed"] == "False"
    assert ast.literal_eval(row["Mitigation.oracles"])["children"][0]["evidence"] == {"reason": "the fault is still present"}
    only = upstream_row(record(stages=("mitigation",), diagnosis=None, diagnosis_passed=None, timeouts=("agent",)))
    assert not any(k.startswith("Diagnosis.") for k in only) and "TTL" not in only and only["timed_out"] == "True"


def test_directory_layout_and_sorted_union_of_columns(tmp_path):
    layout = UpstreamLayout(tmp_path, started=0)
    trajectory = tmp_path / "t.json"
    trajectory.write_text("{}")
    run_dir = layout.append(record(), trajectory)
    layout.append(record(attempt=2, stages=("mitigation",), diagnosis=None, diagnosis_passed=None))
    layout.append(record(problem_id="hotel-scale-zero-rate"))
    root = layout.root
    assert run_dir == root / "react" / "hotel-wrong-image-geo" / "run_1"
    assert (run_dir / "trajectory.json").read_text() == "{}"
    assert len(read(run_dir / "hotel-wrong-image-geo_results.csv")) == 1
    per_problem = read(root / "react" / "hotel-wrong-image-geo" / "hotel-wrong-image-geo_react_results.csv")
    assert [r["attempt"] for r in per_problem] == ["1", "2"]
    everything = read(root / "react_ALL_results.csv")
    assert len(everything) == 3
    columns = list(everything[0])
    assert columns == sorted(columns) and "Diagnosis.judgment" in columns and "TTM" in columns
    assert per_problem[1]["Diagnosis.judgment"] == ""  # a mitigation-only attempt has no diagnosis cells


def test_trajectory_is_atif_1_7_with_observations_and_model(tmp_path):
    steps = [{"action": "llm", "message": "looking", "model": "gpt-x",
              "tool_calls": [{"id": "c1", "name": "exec_kubectl_cmd_safely", "arguments": {"cmd": "kubectl get pods"}}],
              "observations": [{"tool_call_id": "c1", "content": "geo-1 ImagePullBackOff"}]},
             {"action": "kubectl", "message": "get pods", "observation": "NAME READY"}]
    writer = ResultsWriter(tmp_path)
    out = _with_trajectory(writer, record(extra={"trajectory": steps}), "react", RunPlan(problems=[], agents=[]))
    document = json.loads((tmp_path / out.trajectory_path).read_text())
    assert document["schema_version"] == "ATIF-v1.7" and document["trajectory_id"]
    assert document["agent"]["model_name"] == "gpt-x"
    first, second = document["steps"]
    assert first["model_name"] == "gpt-x"
    assert first["observation"]["results"] == [{"source_call_id": "c1", "content": "geo-1 ImagePullBackOff"}]
    assert second["observation"]["results"][0]["content"] == "NAME READY"
    assert "trajectory" not in out.extra


def test_ambient_events_are_system_steps_of_the_trajectory_in_time_order(tmp_path):
    """Noise injects/reverts go into the trajectory (never shown to the agent, which is done by
    then) between the agent's steps by time; pause/resume markers stay in the record only."""
    steps = [{"action": "kubectl", "message": "get pods", "timestamp": 1_800_000_000.0},
             {"action": "kubectl", "message": "describe pod geo", "timestamp": 1_800_000_020.0}]
    events = [{"at": "2027-01-15T08:00:10.000Z", "kind": "pod-failure", "target": "rate", "action": "inject",
               "offset_s": 0.0, "planned_at_s": 0.0, "pinned": False, "detail": "pod rate-1 of rate failing"},
              {"at": "2027-01-15T08:00:15.000Z", "kind": "-", "target": "-", "action": "pause", "detail": "grading"},
              {"at": "2027-01-15T08:00:30.000Z", "kind": "pod-failure", "target": "rate", "action": "revert",
               "offset_s": 20.0, "planned_at_s": 0.0, "pinned": False, "detail": "expired"}]
    # 1_800_000_000 is 2027-01-15T08:00:00Z: inject lands between the two agent steps, revert after both
    out = _with_trajectory(ResultsWriter(tmp_path), record(extra={"trajectory": steps, "noise_events": events}),
                           "react", RunPlan(problems=[], agents=[]))
    document = json.loads((tmp_path / out.trajectory_path).read_text())
    kinds = [(s["source"], s["message"][:30]) for s in document["steps"]]
    assert [k[0] for k in kinds] == ["agent", "system", "agent", "system"]
    inject, revert = document["steps"][1], document["steps"][3]
    assert inject["extra"]["ambient_event"]["action"] == "inject" and inject["timestamp"] == events[0]["at"]
    assert "pod-failure inject on rate" in inject["message"] and revert["extra"]["ambient_event"]["action"] == "revert"
    assert out.extra["noise_events"] == events  # and still in the attempt record


UPSTREAM_RUBRIC = {"judge": "judge-llm", "passed": False, "composite": 0.556667,
                   "dimensions": {"D1": 1.0, "D2": 0.333333, "D3": 0.333333},
                   "answers": [{"id": "D1-Q1", "dimension": "D1", "answer": True, "evidence": "geo", "confidence": 0.9},
                               {"id": "D2-Q1", "dimension": "D2", "answer": False, "evidence": "", "confidence": 0.6},
                               {"id": "D3-Q3", "dimension": "D3", "answer": False, "evidence": "x", "confidence": 0.2}],
                   "inputs": {"submission": "it's \"geo\"\nreally"}, "error": None}


def test_every_dict_cell_reads_back_with_literal_eval_in_both_rubrics(tmp_path):
    """Upstream's readers ``ast.literal_eval`` dict cells: JSON's true/null/NaN would not parse."""
    odd = {**MITIGATION, "evidence": {"ratio": float("nan"), "ok": True, "missing": None, "big": float("inf")}}
    layout = UpstreamLayout(tmp_path, started=0)
    layout.append(record(diagnosis=UPSTREAM_RUBRIC, diagnosis_passed=False, mitigation=odd,
                         upstream_id="misconfig_app_hotel_res"))
    layout.append(record(attempt=2))
    for row in read(layout.root / "react_ALL_results.csv"):
        for column in ("Diagnosis.dimensions", "Diagnosis.checklist", "Mitigation.oracles"):
            assert isinstance(ast.literal_eval(row[column]), dict | list), column
    row = read(layout.root / "react_ALL_results.csv")[0]
    assert ast.literal_eval(row["Diagnosis.dimensions"]) == {
        "D1": {"name": "Fault Localization", "score": 1.0}, "D2": {"name": "Fault Characterization", "score": 0.33},
        "D3": {"name": "Scope Precision", "score": 0.33}}
    assert [(a["answer"], a["confidence"]) for a in ast.literal_eval(row["Diagnosis.checklist"])] == [
        ("Yes", "High"), ("No", "Medium"), ("No", "Low")]
    assert row["Diagnosis.composite_score"] == "0.56" and row["Diagnosis.judgment"] == "False"
    assert ast.literal_eval(row["Mitigation.oracles"])["evidence"] == {"ratio": "nan", "ok": True, "missing": None,
                                                                       "big": "inf"}
    assert row["Diagnosis.submission"] == 'it\'s "geo"\nreally'


def test_run_by_upstream_id_keys_upstream_files_by_it_and_ours_keeps_both(tmp_path):
    layout = UpstreamLayout(tmp_path / "upstream", started=0)
    run_dir = layout.append(record(upstream_id="wrong_bin_usage"))
    assert run_dir == layout.root / "react" / "wrong_bin_usage" / "run_1"
    assert read(run_dir / "wrong_bin_usage_results.csv")[0]["problem_id"] == "wrong_bin_usage"
    assert (layout.root / "react" / "wrong_bin_usage" / "wrong_bin_usage_react_results.csv").is_file()
    writer = ResultsWriter(tmp_path / "ours")
    writer.append(record(upstream_id="wrong_bin_usage"))
    writer.append(record(attempt=2))
    first, second = (json.loads(line) for line in writer.jsonl_path.read_text().splitlines())
    assert (first["problem_id"], first["upstream_id"]) == ("hotel-wrong-image-geo", "wrong_bin_usage")
    assert second["upstream_id"] is None and first["diagnosis"]["answers"][0]["answer"] is True  # ours stays typed
    rows = read(writer.csv_path)
    assert [(r["problem_id"], r["upstream_id"]) for r in rows] == [("hotel-wrong-image-geo", "wrong_bin_usage"),
                                                                   ("hotel-wrong-image-geo", "")]


def test_trajectory_steps_carry_their_own_times_and_the_upstream_id(tmp_path):
    """Each step is stamped when the agent logged it (epoch or ISO), not when the file was written."""
    steps = [{"action": "kubectl", "message": "get pods", "timestamp": 1_700_000_000.25},
             {"action": "kubectl", "message": "describe", "timestamp": "2023-11-14T22:13:27.500Z"},
             {"action": "submit", "message": "diagnosis"}]
    out = _with_trajectory(ResultsWriter(tmp_path), record(upstream_id="wrong_bin_usage", extra={"trajectory": steps}),
                           "react", RunPlan(problems=[], agents=[]))
    document = json.loads((tmp_path / out.trajectory_path).read_text())
    stamps = [s["timestamp"] for s in document["steps"]]
    assert stamps[:2] == ["2023-11-14T22:13:20.250Z", "2023-11-14T22:13:27.500Z"]
    assert stamps[2] > stamps[1]  # no time of its own: when it was written, later
    assert document["extra"] == {"problem_id": "hotel-wrong-image-geo", "upstream_id": "wrong_bin_usage"}
    assert document["session_id"] == "r1/wrong_bin_usage/react/1"


def test_a_diagnosis_a_spreadsheet_would_run_is_written_as_text(tmp_path):
    """Red-team round 9: a diagnosis beginning ``=HYPERLINK(...)`` went into the CSVs as it was, a formula
    in any spreadsheet that opens them. Both CSV layouts write it with a leading apostrophe (shown as text);
    the JSONL record keeps the text as the agent sent it, and numbers stay numbers."""
    from sregym_core.results import ResultsWriter
    from sregym_core.results.record import spreadsheet_safe

    formula = '=HYPERLINK("http://127.0.0.1/x","geo has a bad image")'
    attempt = record(diagnosis={**DIAGNOSIS, "inputs": {"submission": formula}}, error="-1+2 went wrong")
    layout = UpstreamLayout(tmp_path / "upstream", started=0)
    run_dir = layout.append(attempt)
    row = read(run_dir / "hotel-wrong-image-geo_results.csv")[0]
    assert row["Diagnosis.submission"] == "'" + formula
    writer = ResultsWriter(tmp_path / "ours")
    writer.append(attempt)
    ours = read(tmp_path / "ours" / "results.csv")[0]
    assert ours["error"] == "'-1+2 went wrong"
    assert json.loads((tmp_path / "ours" / "results.jsonl").read_text())["error"] == "-1+2 went wrong"
    assert [spreadsheet_safe(v) for v in ("-0.5", -3, "+1e3", "geo", "@sum")] == ["-0.5", -3, "+1e3", "geo", "'@sum"]
