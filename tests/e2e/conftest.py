"""One embedded cluster for every end-to-end module here.

Bringing a cluster up and deploying Hotel Reservation is most of an end-to-end module's cost, so
the modules share one cluster (``e2e``) and the app deployed on it: the conductor reconciles the
app to its baseline after every problem and the primitive tests reset it after every fault, which
is exactly what a long benchmark run relies on. The session checks that nothing keeps running.

``SREGYM_E2E_CLUSTER=<name>`` (with the SREGYM_HOME it runs under) reuses a running cluster instead,
for iterating on one test; it is left running.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

SREGYM = str(Path(sys.executable).parent / "sregym")
CLUSTER = "e2e"


class SharedCluster:
    def __init__(self, home: Path, name: str = CLUSTER) -> None:
        self.home = home
        self.name = name
        self.environ = {**os.environ, "SREGYM_HOME": str(home)}
        self.kubeconfig = home / "clusters" / name / "kubeconfig"
        self.workdir = home / "work"


@pytest.fixture(scope="session")
def shared_cluster(tmp_path_factory):
    reuse = os.environ.get("SREGYM_E2E_CLUSTER")
    if reuse:
        cluster = SharedCluster(Path(os.environ["SREGYM_HOME"]), reuse)
        yield cluster
        return
    home = tmp_path_factory.mktemp("sregym-e2e")
    cluster = SharedCluster(home)
    before = {p.pid for p in psutil.process_iter()}
    up = subprocess.run([SREGYM, "cluster", "up", "--name", CLUSTER], env=cluster.environ, capture_output=True,
                        text=True, timeout=180)
    assert up.returncode == 0, up.stderr
    try:
        yield cluster
    finally:
        subprocess.run([SREGYM, "cluster", "down", "--name", CLUSTER], env=cluster.environ, capture_output=True,
                       timeout=120)
    time.sleep(1.0)
    leftovers = [p for p in psutil.process_iter(["pid", "cmdline"])
                 if p.pid not in before and str(home) in " ".join(p.info["cmdline"] or [])]
    assert not leftovers, f"processes left behind: {[p.info['cmdline'][:3] for p in leftovers]}"
