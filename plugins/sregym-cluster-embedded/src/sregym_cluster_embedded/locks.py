"""File locks that keep one cluster's lifecycle free of races.

Three ``flock`` files in the cluster's state directory; the kernel releases a lock when its holder
dies, so a crashed command never leaves a cluster locked.

* ``lifecycle.lock``, exclusive while a command starts or stops the daemon: two ``up`` never start
  two daemons, and an ``up`` never reads the state of a daemon that a ``down`` is stopping.
* ``users.lock``, shared by every process using the cluster (a ``sregym run``, an ``up`` in
  progress). Whoever stops a cluster because it is no longer needed (a daemon whose owner died, a
  ``--no-keep-cluster`` run) first takes it exclusively, without waiting: if that fails, someone
  still uses the cluster and it keeps running. While a stopper holds it, newcomers wait until the
  daemon is gone and then start a fresh one.
* ``apps.lock``, exclusive and never waited for: held by commands that change the apps on the
  cluster (``run``, ``validate``, ``deploy``). Two of them would revert each other's faults, so
  the second fails at once, naming the first.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import psutil
from sregym_core.errors import ClusterError

from .settings import cluster_dir

LIFECYCLE, USERS, APPS = "lifecycle.lock", "users.lock", "apps.lock"
POLL_S = 0.05


class FileLock:
    """One ``flock`` on ``path`` through its own open file (locks of two opens never share)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[str] | None = None

    @property
    def held(self) -> bool:
        return self._file is not None

    def acquire(self, *, shared: bool = False, timeout: float = 0.0) -> bool:
        """Take the lock, waiting up to ``timeout`` seconds (0: only try once). True if taken."""
        if self._file is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a+")  # noqa: SIM115 - kept open while the lock is held
        mode = (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle, mode)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    handle.close()
                    return False
                time.sleep(POLL_S)
        self._file = handle
        if not shared:  # who holds it, for the message another command shows
            handle.seek(0)
            handle.truncate()
            handle.write(f"{os.getpid()}\n")
            handle.flush()
        return True

    def release(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._file, fcntl.LOCK_UN)
            self._file.close()
            self._file = None

    def holder(self) -> str:
        """The process that last took the lock exclusively, as ``pid N (command line)``, if alive."""
        try:
            pid = int(self.path.read_text().split()[0])
            cmdline = " ".join(psutil.Process(pid).cmdline())
        except (FileNotFoundError, IndexError, ValueError, psutil.Error):
            return "another process"
        return f"pid {pid} ({cmdline[:120]})"


def lock(name: str, which: str) -> FileLock:
    return FileLock(cluster_dir(name) / which)


@contextlib.contextmanager
def holding(name: str, which: str, *, shared: bool = False, timeout: float, busy: str) -> Iterator[FileLock]:
    """Hold one of cluster ``name``'s locks for a block; ``ClusterError(busy)`` if not taken in time."""
    held = lock(name, which)
    if not held.acquire(shared=shared, timeout=timeout):
        raise ClusterError(f"{busy} (waited {timeout:.0f} s)",
                           hints=[f"`sregym cluster status --name {name}` shows its state",
                                  f"`sregym cluster down --name {name}` stops it"])
    try:
        yield held
    finally:
        held.release()
