"""The runner's reset after an attempt: retried recoveries run between reconcile and readiness,
and an app that does not come back (or a fault that survives) means a redeploy, not a dead run."""

from __future__ import annotations

import asyncio
import types

from sregym_core.conductor.runner import reset_after_attempt as _reset
from sregym_core.errors import DeployError


class FakeEnv:
    """Records the order of what the runner asks of the environment."""

    def __init__(self, ready: bool = True) -> None:
        self.calls: list[str] = []
        self.ready = ready

    async def reset_app(self, name, *, after_reconcile=None, users_during_settle=False):
        self.calls.append("reconcile" + (" (users running for the settle)" if users_during_settle else ""))
        if after_reconcile is not None:
            await after_reconcile()
        self.calls.append("wait_ready")
        if not self.ready:
            raise DeployError(f"app {name!r} after reset did not become ready within 180 s")
        return ["restored deployment/user"]

    async def redeploy_app(self, app):
        self.calls.append("redeploy")
        return "fresh"

    def deployed_app(self, name):
        return "kept"


class FakeAttempt:
    def __init__(self, env: FakeEnv, sound: bool, unrecovered: tuple = ()) -> None:
        self.env, self.sound, self.unrecovered = env, sound, list(unrecovered)
        self.problem = types.SimpleNamespace(id="hotel-db-drop-user-user")

    async def settle(self):
        self.env.calls.append("settle")
        return self.sound


APP = types.SimpleNamespace(name="hotel-reservation")


def run(env, attempt):
    said: list[str] = []
    result = asyncio.run(_reset(env, APP, attempt, said.append))
    return result, said


def test_leftover_recoveries_run_before_readiness_is_required():
    env = FakeEnv()
    (deployed, actions), said = run(env, FakeAttempt(env, sound=True))
    assert env.calls == ["reconcile", "settle", "wait_ready"]
    assert deployed == "kept" and actions == ["restored deployment/user"] and not said


def test_a_surviving_fault_means_a_redeploy():
    env = FakeEnv()
    (deployed, _), said = run(env, FakeAttempt(env, sound=False))
    assert env.calls[-1] == "redeploy" and deployed == "fresh"
    assert "survived recovery" in said[0]


def test_an_app_that_does_not_come_back_is_redeployed_not_fatal():
    env = FakeEnv(ready=False)
    (deployed, actions), said = run(env, FakeAttempt(env, sound=True))
    assert env.calls == ["reconcile", "settle", "wait_ready", "redeploy"]
    assert deployed == "fresh" and actions == []
    assert "did not come back" in said[0]


def test_a_recovery_left_to_retry_keeps_the_users_running_through_the_settle():
    env = FakeEnv()
    run(env, FakeAttempt(env, sound=True, unrecovered=("f0",)))
    assert env.calls == ["reconcile (users running for the settle)", "settle", "wait_ready"]
