"""Trajectories, summaries, the printable table and the HTML report."""

from __future__ import annotations

import io
import json

import pytest

from sregym_core.results import (
    ATIF_VERSION,
    AttemptRecord,
    Observation,
    ResultsWriter,
    ToolCall,
    TrajectoryWriter,
    format_summary,
    load_trajectory,
    summarize,
    summary_table,
)
from sregym_core.results.trajectory import MAX_OBSERVATION_CHARS


def record(problem, agent, attempt, *, diag, mit, ttd=None, ttm=None, **extra):
    return AttemptRecord(
        run_id="run-7", problem_id=problem, agent=agent, attempt=attempt, diagnosis_passed=diag, mitigation_passed=mit,
        time_to_diagnose_s=ttd, time_to_mitigate_s=ttm, **extra,
    )


@pytest.fixture
def results_dir(tmp_path):
    writer = ResultsWriter(tmp_path)
    for n, ttd, ttm in ((1, 10, 30), (2, 20, 50), (3, 30, 70)):
        writer.append(record("hotel-wrong-image-geo", "reference", n, diag=True, mit=True, ttd=ttd, ttm=ttm, prompt_tokens=100))
    writer.append(record("hotel-wrong-image-geo", "noop", 1, diag=False, mit=False, ttd=2, ttm=3))
    writer.append(record("hotel-wrong-image-geo", "noop", 2, diag=None, mit=None, agent_status="crashed", error="exit 1"))
    writer.append(record("hotel-scale-zero-rate", "reference", 1, diag=True, mit=False, ttd=8, ttm=20))
    writer.append(record("hotel-scale-zero-rate", "reference", 1, diag=True, mit=True, ttd=9, ttm=25))  # rerun: last wins
    writer.append(record("hotel-scale-zero-rate", "noop", 1, diag=False, mit=False, agent_status="timeout", timeouts=("diagnosis",)))
    writer.append(record("hotel-scale-zero-rate", "noop", 2, diag=None, mit=None, deploy_failed=True))
    return tmp_path


# ---------------------------------------------------------------- trajectories


def test_trajectory_writer_produces_atif_document(tmp_path):
    path = tmp_path / "t.json"
    traj = TrajectoryWriter(path, session_id="run-7/p/react/1", agent_name="react", agent_version="0.1", model_name="gpt-x")
    traj.add_step("system", "You are an SRE agent.")
    traj.add_step("user", "The hotel app is failing. Diagnose it.")
    step = traj.add_step(
        "agent", "Let me look at the pods.",
        tool_calls=[ToolCall(tool_call_id="call_1", function_name="exec_kubectl_cmd_safely", arguments={"cmd": "kubectl get pods"})],
        prompt_tokens=900, completion_tokens=40, cost_usd=0.002,
    )
    assert json.loads(path.read_text())["steps"][-1]["step_id"] == 3  # saved after every step
    traj.observe(step, [Observation(source_call_id="call_1", content="geo-1 0/1 ImagePullBackOff")])
    traj.add_step("agent", "Submitting.", tool_calls=[{"tool_call_id": "call_2", "function_name": "submit", "arguments": {"ans": "geo"}}],
                  observations=[{"source_call_id": "call_2", "content": "x" * (MAX_OBSERVATION_CHARS + 10)}],
                  prompt_tokens=1000, completion_tokens=60, cost_usd=0.003)
    traj.close(notes="submitted")
    doc = load_trajectory(path)
    assert doc["schema_version"] == ATIF_VERSION and doc["session_id"] == "run-7/p/react/1"
    assert doc["agent"] == {"name": "react", "version": "0.1", "model_name": "gpt-x"}
    assert [s["source"] for s in doc["steps"]] == ["system", "user", "agent", "agent"]
    assert doc["steps"][2]["tool_calls"][0]["arguments"] == {"cmd": "kubectl get pods"}
    assert doc["steps"][2]["observation"]["results"][0]["content"].endswith("ImagePullBackOff")
    assert doc["steps"][2]["model_name"] == "gpt-x"
    assert doc["steps"][3]["observation"]["results"][0]["content"].endswith("[... 10 characters cut]")
    assert doc["final_metrics"] == {"total_prompt_tokens": 1900, "total_completion_tokens": 100, "total_cost_usd": 0.005, "total_steps": 4}
    assert doc["notes"] == "submitted"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".traj-")]  # no temp files left


def test_trajectory_rejects_bad_source_and_bad_files(tmp_path):
    traj = TrajectoryWriter(tmp_path / "t.json", session_id="s", agent_name="a")
    with pytest.raises(ValueError, match="source"):
        traj.add_step("robot", "hi")
    (tmp_path / "x.json").write_text('{"steps": []}')
    with pytest.raises(ValueError, match="not an ATIF"):
        load_trajectory(tmp_path / "x.json")


# ---------------------------------------------------------------- summaries


def test_summarize_per_problem_and_agent(results_dir):
    rows = {(r.problem_id, r.agent): r for r in summarize(results_dir)}
    ref = rows[("hotel-wrong-image-geo", "reference")]
    assert (ref.attempts, ref.success_rate, ref.median_ttd_s, ref.median_ttm_s, ref.prompt_tokens) == (3, 1.0, 20, 50, 300)
    noop = rows[("hotel-wrong-image-geo", "noop")]
    assert (noop.attempts, noop.success_rate, noop.diagnosis_pass_rate, noop.crashed) == (2, 0.0, 0.0, 1)
    assert noop.median_ttd_s is None  # times count only for passing stages
    rerun = rows[("hotel-scale-zero-rate", "reference")]
    assert (rerun.attempts, rerun.mitigation_pass_rate, rerun.median_ttm_s) == (1, 1.0, 25)
    skipped = rows[("hotel-scale-zero-rate", "noop")]
    assert (skipped.attempts, skipped.timeouts, skipped.deploy_failures) == (1, 1, 1)
    total = rows[("*", "reference")]
    assert (total.attempts, total.success_rate, total.median_ttd_s) == (4, 1.0, 15.0)


def test_summary_table_text(results_dir):
    table = summary_table(results_dir)
    lines = table.splitlines()
    assert lines[0].split()[:6] == ["problem", "agent", "n", "success", "diagnosis", "mitigation"]
    ref_line = next(line for line in lines if line.startswith("hotel-wrong-image-geo") and "reference" in line)
    assert ref_line.split()[2:8] == ["3", "100%", "100%", "100%", "20.0", "50.0"]
    assert any(line.startswith("*") and "reference" in line for line in lines)
    assert format_summary([]) == "no results recorded"


def test_trajectory_accepts_common_tool_call_shapes(tmp_path):
    traj = TrajectoryWriter(tmp_path / "t.json", session_id="s", agent_name="a", autosave=False)
    traj.add_step(
        "agent", {"text": "structured message"},
        tool_calls=[
            {"id": "c1", "type": "function", "function": {"name": "get_logs", "arguments": '{"query": "geo"}'}},  # OpenAI
            {"name": "submit", "args": {"ans": "geo"}},  # ad hoc
            {"tool": "exec_kubectl_cmd_safely", "input": "kubectl get pods"},
        ],
        observations=["plain text result", {"tool_call_id": "c1", "output": {"lines": 3}}],
    )
    doc = traj.to_dict()["steps"][0]
    assert doc["message"] == '{"text": "structured message"}'
    assert [c["function_name"] for c in doc["tool_calls"]] == ["get_logs", "submit", "exec_kubectl_cmd_safely"]
    assert doc["tool_calls"][0]["arguments"] == {"query": "geo"} and doc["tool_calls"][0]["tool_call_id"] == "c1"
    assert doc["tool_calls"][1]["tool_call_id"] == "call_2"
    assert doc["tool_calls"][2]["arguments"] == {"raw": "kubectl get pods"}
    assert doc["observation"]["results"][1] == {"source_call_id": "c1", "content": '{"lines": 3}'}


def test_a_stage_not_selected_is_marked_not_run_in_the_summary_and_the_attempt_line():
    """`--stages mitigation`: the console must not print "diagnosis FAIL" / 0 % for a stage never run."""
    from sregym_core.conductor.runner import stage_verdicts
    from sregym_core.progress import RunProgress
    from sregym_core.results.summary import format_summary, summarize_records

    only = AttemptRecord(run_id="r", problem_id="hotel-a", agent="reference", attempt=1, stages=("mitigation",),
                         diagnosis_passed=None, mitigation_passed=True, success=True)
    both = AttemptRecord(run_id="r", problem_id="hotel-b", agent="reference", attempt=1, diagnosis_passed=False,
                         mitigation_passed=True)
    assert stage_verdicts(only) == "diagnosis not run, mitigation PASS"
    assert stage_verdicts(both) == "diagnosis FAIL, mitigation PASS"
    rows = {r.problem_id: r for r in summarize_records([only, both])}
    assert rows["hotel-a"].diagnosis_pass_rate is None and rows["hotel-a"].mitigation_pass_rate == 1.0
    assert rows["hotel-b"].diagnosis_pass_rate == 0.0
    assert rows["*"].diagnosis_pass_rate == 0.0  # of the one attempt that ran a diagnosis
    line = next(line for line in format_summary(list(rows.values())).splitlines() if line.startswith("hotel-a"))
    assert line.split()[3:6] == ["100%", "not", "run"]  # success, diagnosis (two words), then mitigation
    progress = RunProgress(2, per_problem=1, stream=io.StringIO(), interactive=False, tick=None)
    progress(f"hotel-a × reference #1: {stage_verdicts(only)} (ok)")
    progress(f"hotel-b × reference #1: {stage_verdicts(both)} (ok)")
    assert progress.passed == 1
