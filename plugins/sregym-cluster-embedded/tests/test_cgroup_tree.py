"""The userspace limits' process-tree walk (node/cgroups.py) finds exactly what psutil finds.

It reads each thread's /proc children file instead of every process's parent, so it costs the
tree's size rather than the machine's process count (non-root nodes poll it for every container).
"""

from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest

from sregym_cluster_embedded.node import cgroups

pytestmark = pytest.mark.skipif(not cgroups._PROC_CHILDREN, reason="kernel without /proc/<pid>/task/<tid>/children")

# a shell with a sleeping child, a grandchild shell with two sleepers, and a thread that forks one
TREE = """
import os, subprocess, threading, time
subprocess.Popen(["sleep", "30"])
subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30 & wait"])
threading.Thread(target=lambda: subprocess.Popen(["sleep", "30"]).wait(), daemon=True).start()
time.sleep(30)
"""


def test_the_walk_finds_every_descendant_psutil_finds_including_those_forked_by_threads():
    root = subprocess.Popen([sys.executable, "-c", TREE])
    try:
        deadline = time.monotonic() + 30  # an outer bound: five processes start, however loaded the machine
        while len(psutil.Process(root.pid).children(recursive=True)) < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        expected = {p.pid for p in psutil.Process(root.pid).children(recursive=True)}
        assert len(expected) == 5
        assert set(cgroups._descendants(root.pid)) == expected
        assert {p.pid for p in cgroups._tree(root.pid)} == expected | {root.pid}
    finally:
        for proc in psutil.Process(root.pid).children(recursive=True):
            proc.kill()
        root.kill()
        root.wait()
    assert cgroups._descendants(root.pid) == []
    assert cgroups._tree(root.pid) == []
