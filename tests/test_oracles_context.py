"""The OracleContext contract: what mitigation oracles may ask, and that the conductor provides it."""

from __future__ import annotations

import inspect

import pytest

from sregym_core.oracles.context import OracleContext

ASYNC_MEMBERS = ("list_workloads", "fault_present", "workload_stats", "replay_trigger", "sleep")
ATTRIBUTES = ("baseline_workloads", "fault_instances", "faulty_workloads")


def test_protocol_members():
    for name in ASYNC_MEMBERS:
        assert inspect.iscoroutinefunction(getattr(OracleContext, name)), name
    assert not inspect.iscoroutinefunction(OracleContext.now)
    # read-only members: properties of the protocol (a plain attribute of an implementation fits)
    assert all(isinstance(vars(OracleContext).get(name), property) for name in ATTRIBUTES)


def test_conductor_implements_the_protocol():
    attempt = pytest.importorskip("sregym_core.conductor.attempt")
    access = attempt.OracleAccess
    for name in ASYNC_MEMBERS:
        assert inspect.iscoroutinefunction(getattr(access, name)), f"OracleAccess.{name} must be async"
        assert list(inspect.signature(getattr(access, name)).parameters)[1:] == list(
            inspect.signature(getattr(OracleContext, name)).parameters
        )[1:], name
    assert callable(access.now) and not inspect.iscoroutinefunction(access.now)
    for name in ATTRIBUTES:
        assert hasattr(access, name), f"OracleAccess lacks {name}"


# ---- the SLO window opens after the app converged (unit test of the timing, fake cluster and workload)

class _Kube:
    """Answers pod listings: the geo pod turns Ready after ``ready_after`` listings."""

    def __init__(self, ready_after: int | None) -> None:
        self.ready_after, self.calls = ready_after, 0

    def list_items(self, path, kind):
        if kind != "Pod":
            return []
        self.calls += 1
        ready = self.ready_after is not None and self.calls > self.ready_after
        return [{"metadata": {"name": "geo-1"}, "status": {"phase": "Running",
                 "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}]


class _Workload:
    def __init__(self, max_request_s: float = 0.0) -> None:
        import types
        self.asked_at: list[float] = []
        self.spec = types.SimpleNamespace(max_request_s=max_request_s)

    async def astats(self, window_s):
        import time
        self.asked_at.append(time.monotonic())
        return {"count": 50, "success_rate": 1.0}


def _access(ready_after, *, settle_timeout=5.0, grace=0.2, max_request_s=0.0):
    import time
    import types

    from sregym_core.conductor.attempt import AttemptSettings, OracleAccess
    settings = AttemptSettings(settle_timeout=settle_timeout, reconnect_grace=grace)
    workload = _Workload(max_request_s)
    fake = types.SimpleNamespace(
        settings=settings, settled_at=None, settle_wait_s=None, mitigation_at=time.monotonic(),
        noise=types.SimpleNamespace(quiet_since=None), env=types.SimpleNamespace(kube=_Kube(ready_after)),
        deployed=types.SimpleNamespace(workload=workload, namespaces=("app",)))
    return OracleAccess(fake), fake, workload


def test_the_slo_window_opens_only_after_every_pod_is_ready_plus_the_reconnect_grace():
    import asyncio
    import time

    access, attempt, workload = _access(ready_after=3)
    started = time.monotonic()
    stats = asyncio.run(access.workload_stats(0.1))
    # three listings 0.5 s apart before Ready, then the grace, then the window itself
    assert attempt.settled_at is not None and attempt.settled_at - started >= 1.0 + 0.2
    assert workload.asked_at[0] >= attempt.settled_at + 0.1 - 0.01
    assert stats["settle_wait_s"] >= 1.0
    # measured once per attempt: a second sample (a Sustained oracle) does not wait again
    calls = attempt.env.kube.calls
    asyncio.run(access.workload_stats(0.1))
    assert attempt.env.kube.calls == calls


def test_an_app_that_never_converges_is_measured_after_the_settle_timeout():
    import asyncio

    access, attempt, workload = _access(ready_after=None, settle_timeout=1.0)
    stats = asyncio.run(access.workload_stats(0.1))
    # it gave up at the 1 s asked for: the bound is far above that (a loaded machine) and under the 15 s default
    assert 1.0 <= stats["settle_wait_s"] < 10.0 and workload.asked_at


def test_the_window_skips_requests_sent_before_it_opened():
    """Records are stamped when they finish: with requests that may take max_request_s, the window is
    read that much later, so a request sent before the app settled (slow because of the fault) is out."""
    import asyncio

    access, attempt, workload = _access(ready_after=0, grace=0.1, max_request_s=0.6)
    asyncio.run(access.workload_stats(0.2))
    assert workload.asked_at[0] >= attempt.settled_at + 0.6 + 0.2 - 0.01
    plain, plain_attempt, plain_workload = _access(ready_after=0, grace=0.1)
    asyncio.run(plain.workload_stats(0.2))
    assert plain_workload.asked_at[0] < plain_attempt.settled_at + 0.6 + 0.2 - 0.05
