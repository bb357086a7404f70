"""Kills a cluster's pod processes when the cluster process dies without cleaning up.

Started by the NodeSet as a separate process in its own session. It reads registrations on stdin:
``pg <pgid>`` / ``unpg <pgid>`` (a container's or exec's process group) and ``cg <dir>`` (a
cgroup directory whose whole subtree belongs to the cluster). When stdin reaches EOF, because the
cluster process closed it or died (even by SIGKILL), every registered process group gets SIGKILL
and every process left in the registered cgroups too; then the cgroups are removed.
Standalone on purpose: no package imports, so it starts in a few milliseconds.
"""

from __future__ import annotations

import os
import signal
import sys
import time


def _cgroup_pids(root: str) -> set[int]:
    found: set[int] = set()
    for directory, _, files in os.walk(root):
        if "cgroup.procs" in files:
            try:
                with open(os.path.join(directory, "cgroup.procs")) as handle:
                    found |= {int(x) for x in handle.read().split()}
            except (OSError, ValueError):
                continue
    return found


def sweep(groups: set[int], cgroups: set[str]) -> None:
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass
    for _ in range(50):
        pids = set().union(*(_cgroup_pids(c) for c in cgroups)) if cgroups else set()
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.02)
    for root in cgroups:
        for directory, _, _ in sorted(os.walk(root), key=lambda item: -item[0].count("/")):
            try:
                os.rmdir(directory)
            except OSError:
                pass


def main() -> None:
    groups: set[int] = set()
    cgroups: set[str] = set()
    for line in sys.stdin:
        kind, _, value = line.strip().partition(" ")
        try:
            if kind == "pg":
                groups.add(int(value))
            elif kind == "unpg":
                groups.discard(int(value))
            elif kind == "cg":
                cgroups.add(value)
        except ValueError:
            continue
    sweep(groups, cgroups)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    main()
