"""Service-level measurements of a live app, for validation runs only.

The helpers here grade a rate or a latency measured on the machine the test runs on. That belongs in
validation runs (``tools/validate-sample.sh``, tests marked ``validation``), never in the landing
suite: on a shared 2-core machine they measure the machine as much as the app (docs/ci.md). The
suite's own rule (``tests/test_suite_rules.py``) fails any test module that imports this one without
being marked ``validation``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..conductor.hostload import CpuPressureLog
from ..oracles.mitigation import STARVED_PATIENCE_S, STARVED_STALL


def wait_for_service_level(predicate: Callable[[], Any], timeout: float, interval: float = 5.0, *,
                           window_s: float, starved_patience: float = STARVED_PATIENCE_S,
                           pressure: CpuPressureLog | None = None,
                           sleep: Callable[[float], None] = time.sleep) -> Any:
    """:func:`wait_for` for a predicate that grades the app's service level over the trailing
    ``window_s`` seconds (success rate, latency).

    On the embedded cluster the app shares the host's CPUs with everything else the machine runs
    (in CI: the other test worker's clusters). When ``timeout`` passes while the host was starved
    for CPU over the last window (PSI stall >= ``STARVED_STALL``), the window measured the host,
    not the app: keep polling for at most ``starved_patience`` more, as the functional SLO oracle
    does (docs/workload-generator.md §6). A host that was not starved, or has no PSI, gets no extra
    time, and the predicate must still pass on its own. (``pressure`` and ``sleep``: for tests; the
    deadline runs on ``pressure.clock``.)
    """
    pressure = pressure or CpuPressureLog()
    pressure.mark()
    deadline = pressure.clock() + timeout
    extended = False
    while True:
        last = predicate()
        if last:
            return last
        now = pressure.clock()
        if now >= deadline:
            stall = pressure.stall_fraction(now - window_s)
            if extended or stall is None or stall < STARVED_STALL:
                return last
            print(f"service level not met while the host was starved for CPU (stall {stall}): "
                  f"polling for up to {starved_patience:.0f} s more")
            deadline, extended = now + starved_patience, True
        pressure.mark()  # a reading per poll, so the stall over the trailing window is known
        sleep(interval)


def measure_service_level(measure: Callable[[], Any], passes: Callable[[Any], bool], *, attempts: int = 3,
                          pressure: CpuPressureLog | None = None) -> list[Any]:
    """Run a bounded measurement of the app's service level (``measure()``, e.g. a fixed count of
    workload requests, returning its stats) until ``passes(stats)``; returns every measurement.

    A measurement that fails while the host was starved for CPU over its whole span (PSI stall >=
    ``STARVED_STALL``) measured the host, not the app, and is taken again, at most ``attempts``
    times in all, as the functional SLO oracle re-measures its window. One that fails on a host that
    was not starved, or has no PSI, is final. The caller asserts on the last one: the bar is
    unchanged.
    """
    pressure = pressure or CpuPressureLog()
    taken: list[Any] = []
    for _ in range(attempts):
        pressure.mark()
        started = pressure.clock()
        stats = measure()
        taken.append(stats)
        if passes(stats):
            break
        stall = pressure.stall_fraction(started)
        if stall is None or stall < STARVED_STALL:
            break
        print(f"service level measured while the host was starved for CPU (stall {stall}): measuring again")
    return taken


__all__ = ["measure_service_level", "wait_for_service_level"]
