"""The order of a reset's steps around the app's users (unit test: the cluster, volumes and generator
are stand-ins recording what happens; the live behaviour is in tests/adversarial/test_grading_integrity.py).

The users pause before the volumes are checked (before the reconcile, so before restore()'s check)
and get their deployed run back only after the volumes are marked: what the app writes for them (a
booking) is no agent's leftover, and would otherwise make the late check put a volume back a second
time in every reset.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

import pytest

from sregym_core.conductor import environment as environment_module
from sregym_core.conductor.environment import DeployedApp, Environment


class _Volumes:
    def __init__(self, events: list[str], late: list[str]) -> None:
        self.events, self.late = events, late

    def restore(self) -> list[str]:
        self.events.append("restore")
        return []

    def restore_late_changes(self) -> list[str]:
        self.events.append("late_check")
        return self.late

    def mark(self) -> None:
        self.events.append("mark")


class _Workload:
    def __init__(self, events: list[str], pausable: bool = True) -> None:
        self.events, self.pausable, self.rate = events, pausable, 5.0

    async def acontrol(self, **settings):
        if not self.pausable:
            raise RuntimeError("404: no /control here")
        self.events.append(f"control rate={settings['rate']:g}")
        self.rate = settings["rate"]
        return {"rate": self.rate}

    async def arestart_deployed_run(self, *, forget=False):
        self.forget = forget
        self.events.append("restart_deployed_run")
        self.rate = 5.0
        return {"rate": self.rate}

    async def astats(self, window):
        return {"count": 10 if self.rate else 0, "success_rate": 1.0}


def _environment(events: list[str], workload: _Workload, late: list[str]) -> Environment:
    env = Environment(host=None, cluster=None, workdir=Path("."))
    app = SimpleNamespace(name="shop", namespace="shop", components=(), deploy_timeout=30.0)
    baseline = SimpleNamespace(reconcile=lambda: events.append("reconcile") or [], take=lambda: None)
    env._apps["shop"] = DeployedApp(app=app, namespaces=("shop",), baseline=baseline, agent_kubeconfig=None,
                                    workload=workload, deploy_seconds=1.0, volumes=_Volumes(events, late))
    return env


@pytest.fixture
def ready(monkeypatch):
    events: list[str] = []

    async def wait_ready(kube, namespaces, timeout, what="", cut_graces=False):
        events.append("ready")

    async def restart_entered_pods(self, namespaces, timeout):
        events.append("entered")  # pods someone ran commands in start afresh before readiness is waited for
        return []

    monkeypatch.setattr(environment_module, "wait_ready", wait_ready)
    monkeypatch.setattr(Environment, "kube", property(lambda self: None))
    monkeypatch.setattr(Environment, "_restart_entered_pods", restart_entered_pods)
    return events


def test_users_pause_before_the_volumes_are_checked_and_run_again_after_the_mark(ready):
    events = ready
    workload = _Workload(events)
    asyncio.run(_environment(events, workload, late=[]).reset_app("shop"))
    order = [e for e in events if e in ("control rate=0", "reconcile", "restore", "entered", "ready", "late_check",
                                        "mark", "restart_deployed_run")]
    assert order == ["control rate=0", "reconcile", "restore", "entered", "ready", "late_check", "mark",
                     "restart_deployed_run"], events
    assert workload.rate == 5.0  # the deployed run is back when the reset returns
    assert workload.forget  # the volumes were put back: the users forget what they wrote in the attempt


def test_a_late_write_is_put_back_and_the_app_waited_for_before_the_mark(ready):
    events = ready
    actions = asyncio.run(_environment(events, _Workload(events), late=["restored volume shop/db"]).reset_app("shop"))
    assert "restored volume shop/db" in actions
    after_check = events[events.index("late_check") + 1:]
    assert after_check[:2] == ["ready", "mark"], events


def test_a_generator_that_cannot_pause_leaves_the_reset_whole(ready):
    events = ready
    workload = _Workload(events, pausable=False)
    asyncio.run(_environment(events, workload, late=[]).reset_app("shop"))
    assert "mark" in events and "restart_deployed_run" in events and workload.rate == 5.0


def test_a_settle_that_retries_a_recovery_has_the_users_running(ready):
    """A recovery retried after the reconcile waits for the users to be served: they pause only after it."""
    events = ready
    workload = _Workload(events)
    seen: list[float] = []

    async def settle():
        seen.append(workload.rate)
        events.append("settle")

    asyncio.run(_environment(events, workload, late=[]).reset_app("shop", after_reconcile=settle,
                                                                  users_during_settle=True))
    assert seen == [5.0], events
    order = [e for e in events if e in ("control rate=0", "settle", "ready", "mark", "restart_deployed_run")]
    assert order == ["settle", "control rate=0", "ready", "mark", "restart_deployed_run"], events
    events.clear()
    seen.clear()
    asyncio.run(_environment(events, workload, late=[]).reset_app("shop", after_reconcile=settle))
    assert seen == [0.0], events  # nothing to retry: the users were paused before the reconcile
