"""Attempt records, their JSON Schema, and the durable JSONL/CSV writer with --resume keys."""

from __future__ import annotations

import asyncio
import csv
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sregym_core.errors import ConfigError
from sregym_core.oracles import CHECKLIST, ChecklistAnswer, all_of, baseline_preserved, functional_slo
from sregym_core.oracles.judge import make_verdict
from sregym_core.results import (
    CSV_COLUMNS,
    RESULT_SCHEMA,
    AttemptRecord,
    ResultsWriter,
    read_records,
    validate_record_dict,
)
from sregym_core.results.schema import schema_json
from sregym_core.types import GroundTruth

REPO = Path(__file__).resolve().parents[1]
TRUTH = GroundTruth(
    fault="scale-zero", layer="k8s", components=("rate",), namespace="hotel", resource_kind="Deployment",
    mechanism="replicas scaled to zero",
)


class _Ctx:
    baseline_workloads = [{"kind": "Deployment", "metadata": {"name": "rate", "namespace": "hotel", "uid": "1"}, "spec": {"replicas": 1}}]
    fault_instances = []

    def __init__(self, replicas):
        self.replicas = replicas

    async def list_workloads(self):
        return [{"kind": "Deployment", "metadata": {"name": "rate", "namespace": "hotel", "uid": "1"}, "spec": {"replicas": self.replicas}}]

    async def workload_stats(self, window_s):
        return {"success_rate": 0.4 if self.replicas == 0 else 1.0, "count": 50}


def make_record(problem="hotel-scale-zero-rate", agent="reference", attempt=1, fixed=True, **overrides):
    # a verdict as a judge plugin returns it (the core ships no judge)
    answers = [ChecklistAnswer(id=q.id, dimension=q.dimension, question=q.question, answer=fixed) for q in CHECKLIST]
    diagnosis = make_verdict(
        judge="judge-rules", answers=answers, threshold=0.7,
        submission="The rate deployment was scaled to zero replicas so rate has no endpoints" if fixed else "no idea",
        truth=(TRUTH,), app_components=("rate", "geo"), app_namespace="hotel",
    )
    mitigation = asyncio.run(all_of(baseline_preserved(), functional_slo()).evaluate(_Ctx(1 if fixed else 0)))
    fields = dict(
        run_id="run-1", problem_id=problem, agent=agent, attempt=attempt, app="hotel-reservation",
        diagnosis_passed=diagnosis.passed, diagnosis=diagnosis, mitigation_passed=mitigation.passed, mitigation=mitigation,
        time_to_diagnose_s=12.5, time_to_mitigate_s=40, steps=7, prompt_tokens=1200, completion_tokens=300, cost_usd=0.01,
        finished_at="2026-11-22T08:00:00.000Z",
    )
    fields.update(overrides)
    return AttemptRecord(**fields)


def test_record_computes_success_and_round_trips():
    good, bad = make_record(), make_record(fixed=False)
    assert good.success and good.diagnosis_passed and good.mitigation_passed
    assert not bad.success and bad.mitigation_passed is False
    data = json.loads(json.dumps(good.to_dict()))
    validate_record_dict(data)
    assert AttemptRecord.from_dict(data) == good
    assert good.key == ("hotel-scale-zero-rate", "reference", "", 1)
    assert AttemptRecord(run_id="r", problem_id="p", agent="a", attempt=1, diagnosis_passed=True, mitigation_passed=True, success=False).success is False


def test_record_rejects_bad_status_and_attempt():
    with pytest.raises(ValueError):
        AttemptRecord(run_id="r", problem_id="p", agent="a", attempt=1, agent_status="exploded")
    with pytest.raises(ValueError):
        AttemptRecord(run_id="r", problem_id="p", agent="a", attempt=0)


def test_schema_file_matches_the_code():
    assert (REPO / "schemas" / "result.schema.json").read_text() == schema_json()
    assert RESULT_SCHEMA["properties"]["agent_status"]["enum"] == ["ok", "crashed", "timeout", "garbage"]


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"attempt": 0}, "record['attempt']"),
        ({"agent_status": "meh"}, "record['agent_status']"),
        ({"started_at": "yesterday"}, "record['started_at']"),
        ({"timeouts": [""]}, "record['timeouts'][0]"),
        ({"surprise": 1}, "record"),
        ({"diagnosis": {"judge": "x"}}, "record['diagnosis']"),
        ({"diagnosis": {"passed": "yes"}}, "record['diagnosis']"),
    ],
)
def test_schema_rejects_bad_records_with_paths(change, path):
    data = make_record().to_dict()
    data.update(change)
    with pytest.raises(ConfigError) as info:
        validate_record_dict(data)
    assert path in [p for p, _ in info.value.errors]


def test_writer_appends_jsonl_and_csv_and_reads_back(tmp_path):
    writer = ResultsWriter(tmp_path / "out")
    records = [make_record(attempt=1), make_record(attempt=2, fixed=False, agent_status="timeout", timeouts=("mitigation",))]
    for record in records:
        writer.append(record)
    assert writer.records() == records
    lines = (tmp_path / "out" / "results.jsonl").read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[1])["agent_status"] == "timeout"
    with open(tmp_path / "out" / "results.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == list(CSV_COLUMNS)
    assert rows[0]["success"] == "True" and rows[1]["success"] == "False"
    assert rows[1]["timeouts"] == "mitigation"
    assert "baseline_preserved: Deployment hotel/rate replicas 1 -> 0" in rows[1]["mitigation_failures"]
    assert float(rows[0]["diagnosis_composite"]) == 1.0


def test_conductor_shapes_are_accepted():
    data = make_record(timeouts=("agent",), diagnosis={"passed": False, "error": "no diagnosis was submitted"}).to_dict()
    validate_record_dict(data)


def test_writer_refuses_invalid_record_and_writes_nothing(tmp_path):
    writer = ResultsWriter(tmp_path)
    bad = make_record(started_at="not a time")
    with pytest.raises(ConfigError) as info:
        writer.append(bad)
    assert not (tmp_path / "results.jsonl").exists() and not (tmp_path / "results.csv").exists()
    kept = (tmp_path / "results.rejected.jsonl").read_text().splitlines()
    assert json.loads(kept[0])["started_at"] == "not a time"
    assert any("results.rejected.jsonl" in h for h in info.value.hints)


def test_completed_keys_for_resume_skip_deploy_failures(tmp_path):
    writer = ResultsWriter(tmp_path)
    writer.append(make_record(attempt=1))
    writer.append(make_record(attempt=2, deploy_failed=True, deploy_attempts=3, error="pods not ready after 180 s",
                              diagnosis=None, diagnosis_passed=None, mitigation=None, mitigation_passed=None))
    writer.append(make_record(agent="noop", attempt=1, fixed=False))
    assert ResultsWriter(tmp_path).completed_keys() == {("hotel-scale-zero-rate", "reference", "", 1), ("hotel-scale-zero-rate", "noop", "", 1)}
    assert len(writer.completed_keys(include_deploy_failures=True)) == 3


def test_torn_last_line_is_skipped_and_not_glued(tmp_path):
    writer = ResultsWriter(tmp_path)
    writer.append(make_record(attempt=1))
    with open(tmp_path / "results.jsonl", "a") as handle:
        handle.write('{"run_id": "run-1", "problem_id": "hotel-sc')  # crash mid-write
    writer.append(make_record(attempt=2))
    assert [r.attempt for r in read_records(tmp_path)] == [1, 2]
    assert read_records(tmp_path / "missing") == []


def test_records_survive_a_killed_process(tmp_path):
    script = textwrap.dedent(
        f"""
        import os, signal
        from sregym_core.results import AttemptRecord, ResultsWriter
        writer = ResultsWriter({str(tmp_path)!r})
        for n in (1, 2, 3):
            writer.append(AttemptRecord(run_id="r", problem_id="p", agent="noop", attempt=n, agent_status="crashed"))
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, timeout=60)
    assert proc.returncode == -9
    assert ResultsWriter(tmp_path).completed_keys() == {("p", "noop", "", 1), ("p", "noop", "", 2), ("p", "noop", "", 3)}


def test_trajectory_path_is_safe_and_relative(tmp_path):
    writer = ResultsWriter(tmp_path)
    path = writer.trajectory_path("hotel/../etc", "react agent", 2, "run:1")
    assert path.parent.parent == tmp_path / "trajectories"
    assert ".." not in path.name and " " not in path.name
    assert writer.relative(path) == "trajectories/run_1/hotel___etc__react_agent__2.json"


def test_summary_says_when_diagnoses_were_graded_by_different_judges(tmp_path):
    from sregym_core.results.summary import judges_note, summary_table

    same = [make_record(), make_record(attempt=2)]
    assert judges_note(same) is None
    writer = ResultsWriter(tmp_path)
    for record in same:
        writer.append(record)
    assert "different judges" not in summary_table(tmp_path)
    llm = make_record(attempt=3)
    llm = AttemptRecord(**{**{f: getattr(llm, f) for f in ("run_id", "problem_id", "agent", "attempt", "app")},
                           "diagnosis_passed": False, "diagnosis": {"judge": "judge-llm-gated", "passed": False, "error": "x"}})
    writer.append(llm)
    note = judges_note([*same, llm])
    assert note and "judge-llm-gated" in note and "judge-rules" in note
    assert note in summary_table(tmp_path)


def test_one_agent_with_two_models_shares_a_results_directory(tmp_path):
    """The model is part of an attempt's identity: --resume of one model's run does not skip the
    other's attempts, and summaries keep both."""
    from sregym_core.results.summary import latest_per_key
    from sregym_core.results.writer import ResultsWriter

    writer = ResultsWriter(tmp_path)
    for model in ("model-a", "model-b", None):
        writer.append(make_record(agent="react", model=model))
    keys = writer.completed_keys()
    assert keys == {("hotel-scale-zero-rate", "react", "model-a", 1), ("hotel-scale-zero-rate", "react", "model-b", 1),
                    ("hotel-scale-zero-rate", "react", "", 1)}
    assert len(latest_per_key(writer.records())) == 3
