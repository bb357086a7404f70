"""faultkit.users.wait_users_succeed: the window, the thresholds, a flaky generator, the time-out."""

from __future__ import annotations

from types import SimpleNamespace

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
