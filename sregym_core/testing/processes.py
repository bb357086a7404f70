"""Checking that processes a test started are gone, without being fooled by PID reuse.

A PID alone is not an identity: on a machine with ``kernel.pid_max`` at 32768 a long test session
recycles PIDs, so "PID 26769 still exists" an hour later may name some other program. A
:class:`psutil.Process` remembers its creation time and ``is_running()`` compares it, so a
snapshot taken when the processes were started names exactly them.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable

import psutil


def snapshot(pids: Iterable[int]) -> list[psutil.Process]:
    """The processes behind ``pids`` now (PIDs already gone are left out)."""
    out = []
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            out.append(psutil.Process(pid))
    return out


def survivors(procs: Iterable[psutil.Process], grace: float = 0.2) -> list[int]:
    """PIDs of ``procs`` still running (zombies count as gone), after waiting up to ``grace`` s."""
    procs = list(procs)
    deadline = time.monotonic() + grace
    while True:
        alive = [p.pid for p in procs if _running(p)]
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.05)


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
