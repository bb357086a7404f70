"""The results are written by a builtin plugin on the lifecycle hooks (issue #39), as pytest's
junitxml is a plugin on pytest's: ``results-writer`` (``sregym_core/results/results_writer.py``).

Offline runs for real (``run_plan`` with the world of ``test_lifecycle_hooks``: the plugin host, the
agent surface on loopback, the attempt's stage machine, the reset; only the cluster is left out). A
plugin of the test's own is a second results sink; blocking the builtin by name stops its files; a
sink that raises is reported and costs the builtin none of its records; the Ray worker's session
and the RL environment hand their records to the host the same way.
"""

from __future__ import annotations

import asyncio
import csv
import json
from pathlib import Path

import pytest
from test_lifecycle_hooks import Cluster, NoClusterEnvironment, Recorder, World, no_cluster  # noqa: F401

from sregym_core import hookimpl
from sregym_core.agent_api.server import ServeSettings
from sregym_core.conductor import runner
from sregym_core.conductor.attempt import AttemptSettings
from sregym_core.errors import DeployError, PluginError
from sregym_core.results import CSV_COLUMNS, read_records
from sregym_core.types import AppSpec, ComponentSpec, FaultInstance, ProblemSpec

LOOPBACK = ServeSettings(bind_host="127.0.0.1", api_port=0, mcp_port=0, strict=True)
SETTINGS = AttemptSettings(stages=("mitigation",), mitigation_grace=0.0, settle_timeout=0.0)


class Sink:
    """A results sink of a plugin's own: every record of a run as one JSON line in ``<run id>.ndjson``.
    It also notes whether the builtin had already written the record when it was handed it."""

    def __init__(self) -> None:
        self.files: dict[str, Path] = {}
        self.on_disk_first: list[bool] = []
        self.finished: list[tuple[str, int]] = []

    @hookimpl
    def sregym_run_started(self, results_dir, run_id):
        self.files[results_dir] = Path(results_dir) / f"{run_id}.ndjson"

    @hookimpl
    def sregym_attempt_finished(self, record, results_dir):
        self.on_disk_first.append(record.key in {r.key for r in read_records(results_dir)})
        with open(self.files[results_dir], "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record.to_dict()) + "\n")

    @hookimpl
    def sregym_run_finished(self, results_dir, records):
        self.finished.append((results_dir, len(records)))

    def lines(self, results_dir: Path) -> list[dict]:
        return [json.loads(line) for line in self.files[str(results_dir)].read_text().splitlines()]


class BrokenSink:
    @hookimpl
    def sregym_attempt_finished(self, record, results_dir):
        raise RuntimeError("sink down")

    @hookimpl
    def sregym_run_finished(self, results_dir, records):
        raise RuntimeError("sink still down")


class BrokenDeploy(NoClusterEnvironment):
    """The no-cluster environment, where one app never comes up."""

    async def _deploy(self, app):
        if app.name == "broken-app":
            raise DeployError("pods not ready after 180 s")
        return await super()._deploy(app)


class BrokenWorld:
    @hookimpl
    def sregym_apps(self):
        return [AppSpec(name="broken-app", namespace="broken", description="Never comes up.",
                        components=(ComponentSpec(name="web", roles=("frontend",)),))]


def _problem(problem_id: str = "tiny-problem", app: str = "tiny-app") -> ProblemSpec:
    return ProblemSpec(id=problem_id, app=app, faults=[FaultInstance(id="f0", fault="timeline-fault", target="web")],
                       oracle={"always-passes": {}}, ground_truth=[], agent_timeout=30)


def _run(host, tmp_path: Path, problems, *, attempts: int = 1, resume: bool = False, say=None):
    plan = runner.RunPlan(problems=problems, agents=["submitter"], attempts=attempts, resume=resume,
                          results_dir=tmp_path / "results", settings=SETTINGS, observability=False, serve=LOOPBACK)
    return asyncio.run(runner.run_plan(host, Cluster(tmp_path / "kubeconfig"), plan, progress=say))


@pytest.fixture
def world(plugin_host_with_builtins, register_plugin, monkeypatch, no_cluster):  # noqa: F811
    monkeypatch.setattr(runner, "Environment", BrokenDeploy)
    register_plugin(World(Recorder()), name="world")
    register_plugin(BrokenWorld(), name="broken-world")
    return plugin_host_with_builtins


def _upstream_csvs(results: Path) -> list[str]:
    return sorted(str(p.relative_to(results)).split("/", 1)[1] for p in results.glob("*/**/*_results.csv"))


def test_a_sink_plugin_gets_every_record_while_the_builtin_writes_its_files(world, register_plugin, tmp_path):
    sink = Sink()
    register_plugin(sink, name="sink")
    records = _run(world, tmp_path, [_problem(), _problem("broken-problem", "broken-app")], attempts=2)
    results = tmp_path / "results"

    # the builtin: results.jsonl and results.csv, one row per record, same columns as ever
    written = read_records(results)
    assert [r.key for r in written] == [r.key for r in records] and len(written) == 4
    assert [r.deploy_failed for r in written] == [False, False, True, True]
    with open(results / "results.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert tuple(rows[0]) == CSV_COLUMNS and len(rows) == 4
    # ... and upstream's per-run layout, with the trajectory of each attempt that ran
    assert _upstream_csvs(results) == [
        "submitter/broken-problem/broken-problem_submitter_results.csv",
        "submitter/broken-problem/run_1/broken-problem_results.csv",
        "submitter/broken-problem/run_2/broken-problem_results.csv",
        "submitter/tiny-problem/run_1/tiny-problem_results.csv",
        "submitter/tiny-problem/run_2/tiny-problem_results.csv",
        "submitter/tiny-problem/tiny-problem_submitter_results.csv",
        "submitter_ALL_results.csv",
    ]
    assert len(list(results.glob("*/submitter/tiny-problem/run_*/trajectory.json"))) == 2

    # the test's sink: every record of the run, deploy failures included, each once on disk already
    assert [line["problem_id"] for line in sink.lines(results)] == [r.problem_id for r in records]
    assert [line["deploy_failed"] for line in sink.lines(results)] == [False, False, True, True]
    assert sink.on_disk_first == [True] * 4
    assert sink.finished == [(str(results), 4)]


def test_resume_reads_what_the_builtin_wrote(world, tmp_path):
    _run(world, tmp_path, [_problem(), _problem("broken-problem", "broken-app")])
    lines: list[str] = []
    again = _run(world, tmp_path, [_problem(), _problem("broken-problem", "broken-app")], resume=True, say=lines.append)
    # the attempt that ran is skipped; the deploy failure did not run, so it is tried (and recorded) again
    assert [(r.problem_id, r.deploy_failed) for r in again] == [("broken-problem", True)]
    assert "tiny-problem × submitter #1: already recorded, skipped (--resume)" in lines
    assert [r.problem_id for r in read_records(tmp_path / "results")] == ["tiny-problem", "broken-problem",
                                                                          "broken-problem"]


def test_blocking_the_builtin_by_name_stops_its_files(plugin_host, register_plugin, monkeypatch, no_cluster,  # noqa: F811
                                                      tmp_path):
    monkeypatch.setenv("SREGYM_DISABLE_PLUGINS", "results-writer")
    plugin_host.load_builtins()
    statuses = {info.name: info.status for info in plugin_host.plugin_infos()}
    assert statuses["results-writer"] == "blocked" and statuses["builtin"] == "builtin"
    register_plugin(World(Recorder()), name="world")
    sink = Sink()
    register_plugin(sink, name="sink")

    records = _run(plugin_host, tmp_path, [_problem()], attempts=2)
    results = tmp_path / "results"
    assert len(records) == 2 and [line["attempt"] for line in sink.lines(results)] == [1, 2]
    # nothing else writes the builtin's files: the runner only reads the directory
    assert not (results / "results.jsonl").exists() and not (results / "results.csv").exists()
    assert _upstream_csvs(results) == []
    assert sink.on_disk_first == [False, False]


def test_a_host_blocks_the_builtin_in_code_too(plugin_host_with_builtins):
    host = plugin_host_with_builtins
    assert host.pm.get_plugin("results-writer") is not None
    host.block("results-writer")
    assert host.pm.get_plugin("results-writer") is None and host.pm.is_blocked("results-writer")
    assert {i.name: i.status for i in host.plugin_infos()}["results-writer"] == "blocked"


def test_a_sink_that_raises_costs_the_builtin_no_record_and_is_reported(world, register_plugin, tmp_path, log_output):
    sink = Sink()
    register_plugin(sink, name="sink")
    register_plugin(BrokenSink(), name="broken-sink")  # registered last: pluggy calls it before the sink
    lines: list[str] = []

    records = _run(world, tmp_path, [_problem()], attempts=2, say=lines.append)

    assert len(records) == 2 and len(read_records(tmp_path / "results")) == 2  # the run went on, every record kept
    assert len(sink.lines(tmp_path / "results")) == 2 and sink.finished == [(str(tmp_path / "results"), 2)]
    failures = [(f.plugin, f.hook, f.error) for f in world.hook_failures]
    assert failures == [("broken-sink", "sregym_attempt_finished", "RuntimeError: sink down")] * 2 + [
        ("broken-sink", "sregym_run_finished", "RuntimeError: sink still down")]
    said = [line for line in lines if "failed in" in line]
    assert said[0] == ("plugin 'broken-sink' (broken-sink) failed in sregym_attempt_finished: RuntimeError: sink down "
                       "(the run goes on; the other plugins were still called)")
    assert len(said) == 3
    assert [e["plugin"] for e in log_output if e.get("event") == "plugin_hook_failed"] == ["broken-sink"] * 3


def test_a_builtin_that_raises_on_a_record_stops_the_caller(plugin_host, register_plugin):
    """The builtin writer refusing a record (or a full disk) is not reported and passed over:
    the record would be lost."""

    class Refuses:
        @hookimpl
        def sregym_attempt_finished(self, record, results_dir):
            raise OSError("No space left on device")

    register_plugin(Refuses(), name="refuses", builtin=True)
    with pytest.raises(OSError, match="No space left"):
        plugin_host.attempt_finished("record", results_dir="/nowhere")


def test_a_wrapper_on_a_notification_is_refused_with_a_hint(plugin_host, register_plugin):
    class Wraps:
        @hookimpl(wrapper=True)
        def sregym_attempt_finished(self, record, results_dir):
            return (yield)

    register_plugin(Wraps(), name="wraps")
    with pytest.raises(PluginError, match="wraps sregym_attempt_finished") as caught:
        plugin_host.attempt_finished("record", results_dir="/nowhere")
    assert any("plain @hookimpl" in hint for hint in caught.value.hints)


def test_a_remote_workers_session_records_nothing_and_hands_the_records_back(world, register_plugin, monkeypatch,
                                                                            tmp_path):
    """The driver (the Ray executor) hands the records to its own host; the worker's session
    neither writes nor announces them."""
    from sregym_core.conductor import session

    monkeypatch.setattr(session, "Environment", BrokenDeploy)
    recorder = Recorder()
    register_plugin(recorder, name="recorder")
    plan = runner.RunPlan(problems=[_problem()], agents=["submitter"], results_dir=tmp_path / "results",
                          settings=SETTINGS, observability=False, serve=LOOPBACK)
    worker = session.EnvironmentSession(world, Cluster(tmp_path / "kubeconfig"), plan, index=0, environments=1,
                                        scratch=tmp_path / "scratch", run_id="r1")

    async def one_item():
        await worker.open()
        try:
            return await worker.run(runner.WorkItem(plan.problems[0], "submitter", 1))
        finally:
            await worker.close()

    outcome = asyncio.run(one_item())
    (attempt,) = outcome.attempts
    assert attempt.record.problem_id == "tiny-problem" and json.loads(attempt.trajectory)["steps"] is not None
    assert [name for name, _ in recorder.calls if name in ("attempt_finished", "run_started")] == []
    assert not (tmp_path / "scratch" / "results.jsonl").exists() and not (tmp_path / "results").exists()
    assert _upstream_csvs(tmp_path / "scratch") == []


def test_rl_episodes_go_through_the_host_into_results_jsonl_and_csv(world, register_plugin, monkeypatch, tmp_path):
    """An RL environment made with a results directory hands each episode's record to the host: the
    builtin appends it to results.jsonl/results.csv (no run, so no upstream layout, as before)."""
    from sregym_core.conductor import environment
    from sregym_core.rl.env import POLICY_AGENT, SregymEnv

    monkeypatch.setattr(environment, "Environment", NoClusterEnvironment)
    sink = Sink()
    register_plugin(sink, name="sink")
    results = tmp_path / "results"
    sink.files[str(results)] = tmp_path / "sink.ndjson"  # no run announces it: the sink opens it itself
    env = SregymEnv([_problem()], host=world, cluster=Cluster(tmp_path / "kubeconfig"), owns_cluster=False,
                    workdir=tmp_path / "work", settings=SETTINGS, observability=False, results_dir=results)
    try:
        for _ in range(2):
            env.reset(options={"problem": "tiny-problem"})
            _observation, reward, terminated, _truncated, info = env.step("submit done")
            assert terminated and reward == 1.0, info
    finally:
        env.close()
    written = read_records(results)
    assert [(r.agent, r.attempt) for r in written] == [(POLICY_AGENT, 1), (POLICY_AGENT, 2)]
    assert len((results / "results.csv").read_text().splitlines()) == 3
    assert [line["attempt"] for line in sink.lines(results)] == [1, 2] and sink.on_disk_first == [True, True]
    assert _upstream_csvs(results) == []


def test_traced_notifications_name_each_plugin_called(plugin_host, register_plugin, monkeypatch, log_output):
    """SREGYM_TRACE_PLUGINS=1 logs these calls too, although they do not go through pluggy's hook caller."""
    monkeypatch.setenv("SREGYM_TRACE_PLUGINS", "1")
    register_plugin(Sink(), name="sink")
    plugin_host.run_started("/tmp/results", "run-1")
    assert [e["text"] for e in log_output if e.get("event") == "hook_trace"] == [
        "sregym_run_started [sink] ['results_dir', 'run_id']"]
