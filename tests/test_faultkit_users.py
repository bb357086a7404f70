"""faultkit.users.wait_users_succeed: the window, the thresholds, a flaky generator, the time-out."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from sregym_core.faultkit import users


class Generator:
    """Stands in for the workload generator's stats endpoint: answers in turn, an exception is raised."""

    def __init__(self, *answers):
        self.answers, self.windows = list(answers), []

    def stats(self, window_s):
        self.windows.append(window_s)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_waits_through_failures_and_an_unreachable_generator_until_a_good_window():
    gen = Generator({"count": 30, "success_rate": 0.5}, ConnectionError("generator restarting"),
                    {"count": 3, "success_rate": 1.0}, {"count": 30, "success_rate": 0.995})
    assert users.wait_users_succeed(None, window_s=15.0, timeout_s=10.0, interval_s=0.0, client=gen)
    assert gen.windows == [15.0] * 4  # too few requests (3 < 10) is not yet a good window


def test_times_out_while_users_keep_failing():
    gen = Generator({"count": 30, "success_rate": 0.9})
    assert not users.wait_users_succeed(None, timeout_s=0.05, interval_s=0.01, client=gen)


def test_an_app_without_a_workload_generator_has_nobody_to_wait_for():
    ctx = SimpleNamespace(app=SimpleNamespace(workload=None))
    assert users.workload_client(ctx) is None
    assert users.wait_users_succeed(ctx, timeout_s=0.0)


def _app_with_generator():
    from sregym_core.types import AppSpec, ComponentSpec, WorkloadSpec

    return AppSpec(name="shop", namespace="shop", components=(ComponentSpec(name="web"),),
                   workload=WorkloadSpec(name="users", namespace="shop-load", service="load", port=8089))


def test_the_users_are_watched_through_the_probe_the_engine_put_in_the_context(tmp_path):
    """The toolkit reads the users through ``ctx.users`` (a UsersProbe the engine fills), and a
    child context (one per fault instance) keeps it."""
    from sregym_core.faults import FaultContext, UsersProbe

    gen = Generator({"count": 2, "success_rate": 1.0}, {"count": 40, "success_rate": 1.0})
    gen.control = lambda **settings: settings
    assert isinstance(gen, UsersProbe)
    ctx = FaultContext(kubeconfig=tmp_path / "k", namespace="shop", app=_app_with_generator(), users=gen).child()
    assert users.workload_client(ctx) is gen
    assert users.wait_users_succeed(ctx, window_s=5.0, timeout_s=10.0, interval_s=0.0)
    assert gen.windows == [5.0, 5.0]


def test_a_context_without_a_probe_for_an_app_with_a_generator_is_a_clear_error(tmp_path):
    from sregym_core.errors import FaultError
    from sregym_core.faults import FaultContext

    ctx = FaultContext(kubeconfig=tmp_path / "k", namespace="shop", app=_app_with_generator())
    with pytest.raises(FaultError, match="no users probe") as info:
        users.workload_client(ctx)
    assert any("FaultContext.users" in hint for hint in info.value.hints)
