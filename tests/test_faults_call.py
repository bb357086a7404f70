"""call_fault: sync and async fault callables, and retries of temporary failures."""

from __future__ import annotations

import asyncio

import pytest

from sregym_core.errors import PermanentFaultError, TemporaryFaultError
from sregym_core.faults import FaultContext, call_fault


def _ctx(tmp_path, fake_app):
    return FaultContext(kubeconfig=tmp_path / "kubeconfig", namespace="ns", app=fake_app)


def test_temporary_failures_are_retried_until_success(tmp_path, fake_app):
    calls = []

    def flaky(ctx, target, params):
        calls.append(params["n"])
        if len(calls) < 3:
            raise TemporaryFaultError("no ready pod yet", delay=0.01)
        return "done"

    assert asyncio.run(call_fault(flaky, _ctx(tmp_path, fake_app), None, {"n": 1})) == "done"
    assert len(calls) == 3


def test_temporary_failure_gives_up_after_the_retry_budget(tmp_path, fake_app):
    calls = []

    async def never(ctx, target, params):
        calls.append(1)
        raise TemporaryFaultError("still not ready", delay=0.05)

    with pytest.raises(TemporaryFaultError):
        asyncio.run(call_fault(never, _ctx(tmp_path, fake_app), None, {}, retry_for=0.2))
    assert 2 <= len(calls) <= 6


def test_permanent_failures_are_not_retried(tmp_path, fake_app):
    calls = []

    def broken(ctx, target, params):
        calls.append(1)
        raise PermanentFaultError("no such table")

    with pytest.raises(PermanentFaultError):
        asyncio.run(call_fault(broken, _ctx(tmp_path, fake_app), None, {}))
    assert calls == [1]
