"""The node fault shim's clock rule: a drifted node's wall clock, as its pods' processes read it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sregym_cluster_embedded.node.faultshim import RulesChannel, build_fault_shim

pytestmark = pytest.mark.skipif(not shutil.which("gcc"), reason="needs gcc to build the shim")
PROBE = ("import time, datetime; print(time.time()); print(time.monotonic()); "
         "print(datetime.datetime.now(datetime.timezone.utc).timestamp())")


def _run(shim: Path, rules: RulesChannel, pod_ip: str, argv: list[str]) -> str:
    env = {**os.environ, "LD_PRELOAD": str(shim), "SREGYM_POD_IP": pod_ip}
    reader = rules.reader()
    try:
        return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, check=True,
                              pass_fds=(reader,)).stdout
    finally:
        os.close(reader)


def test_the_wall_clock_of_the_node_is_off_for_its_pods_only(tmp_path):
    shim = build_fault_shim()
    assert shim is not None
    rules = RulesChannel()
    day = 86_400_000
    rules.write([f"pods=127.0.0.9 calls=clock offset_ms={-30 * day} errno=5 rate=1"])
    wall, mono, dt = (float(x) for x in _run(shim, rules, "127.0.0.9", [sys.executable, "-c", PROBE]).split())
    assert abs(wall - (time.time() - 30 * 86400)) < 60 and abs(dt - wall) < 5
    assert abs(mono - time.monotonic()) < 60  # monotonic clocks are left alone
    shell = _run(shim, rules, "127.0.0.9", ["date", "-u", "+%s"])
    assert abs(int(shell) - (time.time() - 30 * 86400)) < 60
    other = float(_run(shim, rules, "127.0.0.8", [sys.executable, "-c", PROBE]).split()[0])
    assert abs(other - time.time()) < 60  # another pod's clock is right
    rules.write([])
    assert abs(float(_run(shim, rules, "127.0.0.9", [sys.executable, "-c", PROBE]).split()[0]) - time.time()) < 60
