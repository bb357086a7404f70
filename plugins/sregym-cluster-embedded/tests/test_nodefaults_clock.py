"""The node fault shim's clock rule: a drifted node's wall clock, as its pods' processes read it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sregym_cluster_embedded.node.faultshim import build_fault_shim, write_rules

pytestmark = pytest.mark.skipif(not shutil.which("gcc"), reason="needs gcc to build the shim")
PROBE = ("import time, datetime; print(time.time()); print(time.monotonic()); "
         "print(datetime.datetime.now(datetime.timezone.utc).timestamp())")


def _run(shim: Path, rules: Path, pod_ip: str, argv: list[str]) -> str:
    env = {**os.environ, "LD_PRELOAD": str(shim), "SREGYM_FAULT_RULES": str(rules), "SREGYM_POD_IP": pod_ip}
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, check=True).stdout


def test_the_wall_clock_of_the_node_is_off_for_its_pods_only(tmp_path):
    shim = build_fault_shim()
    assert shim is not None
    rules = tmp_path / "rules"
    day = 86_400_000
    write_rules(rules, [f"pods=127.0.0.9 calls=clock offset_ms={-30 * day} errno=5 rate=1"])
    wall, mono, dt = (float(x) for x in _run(shim, rules, "127.0.0.9", [sys.executable, "-c", PROBE]).split())
    assert abs(wall - (time.time() - 30 * 86400)) < 60 and abs(dt - wall) < 5
    assert abs(mono - time.monotonic()) < 60  # monotonic clocks are left alone
    shell = _run(shim, rules, "127.0.0.9", ["date", "-u", "+%s"])
    assert abs(int(shell) - (time.time() - 30 * 86400)) < 60
    other = float(_run(shim, rules, "127.0.0.8", [sys.executable, "-c", PROBE]).split()[0])
    assert abs(other - time.time()) < 60  # another pod's clock is right
    write_rules(rules, [])
    assert abs(float(_run(shim, rules, "127.0.0.9", [sys.executable, "-c", PROBE]).split()[0]) - time.time()) < 60
