"""The Ray executor's driver loop, on a stand-in for ray (the live test runs real Ray): a worker lost
mid-item has its item rerun elsewhere, records and trajectories land once in the one results
directory (written by the host's builtin results plugin, the driver hands it every record),
--resume skips what is recorded, and a missing ray package is a clear error."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import attrs
import pytest
from sregym_core.conductor.session import ItemOutcome, RecordedAttempt
from sregym_core import hookimpl
from sregym_core.errors import SregymError
from sregym_core.plugins import new_plugin_host
from sregym_core.results.record import AttemptRecord, attempt_key
from sregym_core.results.writer import read_records
from sregym_executor_ray import executor
from sregym_executor_ray.ledger import WorkLedger


class ActorDied(Exception):
    pass


class TaskFailed(Exception):
    pass


class Ref:
    def __init__(self, call):
        self.call = call


class FakeRay:
    """Runs each remote call when the driver waits for it, in submission order."""

    exceptions = types.SimpleNamespace(RayActorError=ActorDied, RayTaskError=TaskFailed)

    def __init__(self):
        self.killed = []

    def wait(self, refs, num_returns=1, timeout=None):
        return refs[:num_returns], refs[num_returns:]

    def get(self, ref):
        return ref.call()

    def kill(self, actor):
        self.killed.append(actor.number)


@attrs.frozen
class Item:
    problem: types.SimpleNamespace
    agent: str
    number: int


class FakeActor:
    """A worker whose ``run`` answers with one record, or dies on the items listed in ``dies_on``."""

    def __init__(self, number, dies_on=(), fails_open=False):
        self.number, self.dies_on, self.fails_open, self.ran = number, set(dies_on), fails_open, []
        outer = self

        class _Method:
            def __init__(self, fn):
                self.fn = fn

            def remote(self, *args):
                return Ref(lambda: self.fn(*args))

        self.open = _Method(outer._open)
        self.run = _Method(outer._run)

    def _open(self):
        if self.fails_open:
            raise TaskFailed("cluster did not come up")
        return {"pid": 1000 + self.number, "lines": ["cluster: bringing up x"]}

    def _run(self, item, done):
        key = (item.problem.id, item.agent, item.number)
        if key in self.dies_on:
            self.dies_on.discard(key)
            raise ActorDied("The actor died unexpectedly before finishing this task.")
        self.ran.append(key)
        record = AttemptRecord(run_id="r1", problem_id=item.problem.id, agent=item.agent, attempt=item.number,
                               app="app", diagnosis_passed=True, mitigation_passed=item.agent == "reference",
                               trajectory_path=f"trajectories/r1/{item.problem.id}__{item.agent}__1.json",
                               extra={"environment": self.number})
        return ItemOutcome((RecordedAttempt(record, '{"steps": []}'),),
                           (f"{item.problem.id} × {item.agent} #{item.number}: running",))


class Finished:
    """A plugin beside the builtin results writer: the keys it was handed, and where."""

    def __init__(self):
        self.finished = []

    @hookimpl
    def sregym_attempt_finished(self, record, results_dir):
        self.finished.append((record.key, results_dir))


def setup(tmp_path, done=()):
    problems = [types.SimpleNamespace(id=pid, app="app", upstream_id=None) for pid in ("p1", "p2")]
    items = [Item(p, agent, 1) for p in problems for agent in ("reference", "noop")]
    ledger = WorkLedger([attempt_key(i.problem.id, i.agent, i.number) for i in items], [i.problem.id for i in items],
                        done=done, max_tries=2)
    plan = types.SimpleNamespace(results_dir=tmp_path)
    lines: list[str] = []
    host = new_plugin_host(entry_points=False)  # the builtins: the results writer among them
    merge = executor._Merge(host, plan, items, "r1", lines.append)
    merge.finished = Finished()
    host.register(merge.finished, name="finished")
    host.run_started(str(tmp_path), "r1")
    return items, ledger, merge, lines


def test_a_worker_lost_mid_item_has_the_item_rerun_on_another(tmp_path):
    items, ledger, merge, lines = setup(tmp_path)
    ray = FakeRay()
    actors = {1: FakeActor(1, dies_on={("p1", "reference", 1)}), 2: FakeActor(2)}
    executor._drive(ray, actors, ledger, items, [], merge, lines.append)
    keys = [r.key for r in read_records(tmp_path)]
    assert sorted(keys) == sorted(attempt_key(i.problem.id, i.agent, 1) for i in items)  # every item exactly once
    assert len(keys) == len(set(keys))
    assert ray.killed == [1] and 1 not in actors  # the dead worker is retired
    assert ("p1", "reference", 1) in actors[2].ran
    assert any("[ray worker 1] lost while running p1 × reference #1" in line for line in lines)
    assert any(line.startswith("[ray worker 2] p1 × reference #1: running") for line in lines)
    # the trajectories came back with the records, into the one results directory
    for record in read_records(tmp_path):
        assert (tmp_path / record.trajectory_path).read_text() == '{"steps": []}'
    assert sorted(merge.finished.finished) == sorted((key, str(tmp_path)) for key in keys)
    # upstream's layout of the run, by the same plugin
    assert len(list(tmp_path.glob("*/reference_ALL_results.csv"))) == 1
    assert len(list(tmp_path.glob("*/*/*/run_1/trajectory.json"))) == 4


def test_an_item_that_kills_every_worker_it_meets_is_recorded_failed_once(tmp_path):
    items, ledger, merge, lines = setup(tmp_path)
    poison = ("p2", "noop", 1)
    actors = {n: FakeActor(n, dies_on={poison}) for n in (1, 2, 3)}
    executor._drive(FakeRay(), actors, ledger, items, [], merge, lines.append)
    records = {r.key: r for r in read_records(tmp_path)}
    assert len(records) == 4 and len(read_records(tmp_path)) == 4
    poison = attempt_key(*poison)
    assert records[poison].mitigation_passed is False
    assert "lost 2 times" in records[poison].error
    # the failed item is handed to the other plugins too, like every record written
    assert sorted(key for key, _ in merge.finished.finished) == sorted(records)


def test_resume_runs_only_what_is_not_recorded(tmp_path):
    done = {attempt_key("p1", "reference", 1), attempt_key("p2", "noop", 1)}
    items, ledger, merge, lines = setup(tmp_path, done=done)
    actors = {1: FakeActor(1), 2: FakeActor(2)}
    executor._drive(FakeRay(), actors, ledger, items, sorted(done), merge, lines.append)
    ran = actors[1].ran + actors[2].ran
    assert sorted(ran) == [("p1", "noop", 1), ("p2", "reference", 1)]


def test_a_worker_that_cannot_start_leaves_its_share_to_the_others(tmp_path):
    items, ledger, merge, lines = setup(tmp_path)
    actors = {1: FakeActor(1, fails_open=True), 2: FakeActor(2)}
    executor._drive(FakeRay(), actors, ledger, items, [], merge, lines.append)
    assert len(read_records(tmp_path)) == 4
    assert any("[ray worker 1] failed to start" in line for line in lines)


def test_when_every_worker_is_gone_the_run_stops_with_a_hint(tmp_path):
    items, ledger, merge, lines = setup(tmp_path)
    actors = {1: FakeActor(1, fails_open=True)}
    with pytest.raises(SregymError) as caught:
        executor._drive(FakeRay(), actors, ledger, items, [], merge, lines.append)
    assert "every Ray worker failed; 4 work item(s)" in str(caught.value)
    assert any("--resume" in hint for hint in caught.value.hints)


def test_without_ray_installed_the_error_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(executor.RayMissing) as caught:
        executor.import_ray()
    assert "needs the ray package" in str(caught.value)
    assert any("pip install" in hint for hint in caught.value.hints)


def test_the_core_does_not_import_the_plugin_or_ray():
    core = Path(__import__("sregym_core").__file__).parent
    for path in core.rglob("*.py"):
        text = path.read_text()
        assert "sregym_executor_ray" not in text, path
        assert "import ray" not in text, path
