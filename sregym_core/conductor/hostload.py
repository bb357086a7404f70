"""How starved for CPU this host was over a stretch of time, from Linux pressure stall information.

On the embedded cluster the app, its users (the workload generator) and the conductor all run on
this host. When something else saturates its CPUs (another benchmark, a test suite, a build), the
app answers slowly or not at all for reasons that have nothing to do with the agent's fix, and an
SLO window measured then says nothing about the fix. The functional SLO oracle asks this module
whether that was the case, and measures a fresh window when it was (see ``FunctionalSLO``).

``/proc/pressure/cpu`` (Linux >= 4.20, ``CONFIG_PSI``) has a cumulative counter: microseconds
during which at least one runnable task waited for a CPU (the ``some`` line). Its increase over a
stretch, divided by the stretch's length, is the share of that time the host was starved: about 0
on an idle machine, 0.1-0.4 while one embedded environment deploys, near 1 when many times more
tasks want to run than there are CPUs. Without PSI (older kernels, some containers) the stall is
unknown (``None``) and nothing is re-measured on its account.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import attrs

PSI_CPU = Path("/proc/pressure/cpu")


def read_cpu_stall_us(path: Path = PSI_CPU) -> int | None:
    """The ``some`` line's cumulative stall in microseconds, or ``None`` without PSI."""
    try:
        text = path.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == "some":
            for field in fields[1:]:
                key, _, value = field.partition("=")
                if key == "total" and value.isdigit():
                    return int(value)
    return None


@attrs.define
class CpuPressureLog:
    """Readings of the stall counter taken at moments the caller marks (the start and end of the
    waits around an SLO window), so the stall over any stretch between two marks can be computed
    without a sampling thread."""

    path: Path = PSI_CPU
    clock: Callable[[], float] = time.monotonic
    readings: list[tuple[float, int]] = attrs.field(factory=list)

    def mark(self) -> None:
        stall = read_cpu_stall_us(self.path)
        if stall is not None:
            self.readings.append((self.clock(), stall))
            del self.readings[:-64]  # an attempt marks a handful of times; keep it bounded anyway

    def stall_fraction(self, since: float) -> float | None:
        """The share of ``[since, now]`` during which the host was starved, from the latest reading
        at or before ``since`` (a little slack for the instants between a mark and ``since``; the
        earliest reading when none is that early) and a reading now; ``None`` without PSI or when
        the readings span less than a second."""
        self.mark()
        if len(self.readings) < 2:
            return None
        now, stall_now = self.readings[-1]
        start = self.readings[0]
        for at, stall in self.readings[:-1]:
            if at <= since + 0.5:
                start = (at, stall)
        if now - start[0] < 1.0:
            return None
        fraction = (stall_now - start[1]) / 1e6 / (now - start[0])
        return round(min(max(fraction, 0.0), 1.0), 3)
