"""An environment leaves an app once no waiting item needs it (runner.retire_finished_apps): a
distributed worker, which sees one item at a time, hosts one app at a time.

The environment here is a stand-in that records what is removed: the live proof is the lite suite on
Ray (docs/scale.md), whose workers deploy and remove real apps."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from sregym_core.conductor.runner import WorkItem, retire_finished_apps
from sregym_core.errors import ClusterError
from sregym_core.results.record import attempt_key

APPS = ("hotel-reservation", "social-network", "train-ticket")


class _Env:
    def __init__(self, names, fail=()):
        self.names, self.fail, self.removed = list(names), set(fail), []

    @property
    def deployed_names(self):
        return tuple(self.names)

    async def remove_app(self, app):
        if app.name in self.fail:
            raise ClusterError(f"namespace {app.name} still terminating")
        self.names.remove(app.name)
        self.removed.append(app.name)


def _state(items, claimed, done=()):
    apps = {n: SimpleNamespace(name=n) for n in APPS}
    return SimpleNamespace(host=SimpleNamespace(get_apps=lambda: apps), items=items, claimed=set(claimed),
                           done=set(done), plan=SimpleNamespace(settings=SimpleNamespace(agent_config={})))


def _item(app, n=1):
    return WorkItem(SimpleNamespace(id=f"{app}-problem-{n}", app=app), "reference", 1)


def _retire(state, env, keep):
    said = []
    asyncio.run(retire_finished_apps(state, env, keep, said.append))
    return said


def test_an_app_no_waiting_item_needs_is_removed_before_another_apps_item():
    items = [_item("hotel-reservation"), _item("social-network"), _item("train-ticket"), _item("train-ticket", 2)]
    env = _Env(["hotel-reservation", "social-network"])
    said = _retire(_state(items, claimed={0, 1, 2}), env, "train-ticket")
    assert env.removed == ["hotel-reservation", "social-network"] and env.names == []
    assert said == ["removing hotel-reservation: no work left for it in this run",
                    "removing social-network: no work left for it in this run"]


def test_an_app_still_waiting_for_work_stays_unless_that_work_is_already_recorded():
    items = [_item("hotel-reservation"), _item("train-ticket"), _item("hotel-reservation", 2)]
    env = _Env(["hotel-reservation"])
    assert _retire(_state(items, claimed={0, 1}), env, "train-ticket") == [] and env.names == ["hotel-reservation"]
    done = {attempt_key("hotel-reservation-problem-2", "reference", 1, None)}  # --resume: nothing to run
    _retire(_state(items, claimed={0, 1}, done=done), env, "train-ticket")
    assert env.removed == ["hotel-reservation"]


def test_a_distributed_worker_hosts_one_app_at_a_time():
    # a worker's state holds only the item it runs
    env = _Env(["hotel-reservation", "train-ticket"])
    _retire(_state([_item("train-ticket")], claimed={0}), env, "train-ticket")
    assert env.names == ["train-ticket"]


def test_a_failed_removal_is_said_not_raised():
    env = _Env(["hotel-reservation"], fail={"hotel-reservation"})
    said = _retire(_state([_item("train-ticket")], claimed={0}), env, "train-ticket")
    assert env.names == ["hotel-reservation"]
    assert said[-1] == "hotel-reservation could not be removed: namespace hotel-reservation still terminating"
