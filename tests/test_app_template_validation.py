"""An app built from apps/_template as docs/adding-an-app.md says deploys on an embedded cluster and
its curated problem is sound: `sregym validate` with every validation agent and the symptom check.

A validation test (tools/validate-sample.sh runs it; the landing suite does not): it deploys an app
and grades soundness on this machine. The cluster is its own, started by `sregym validate` in an
environment that sees the new app (installed beside the venv, as in tests/test_app_template.py), and
stopped at the end.
"""

from __future__ import annotations

import os
import subprocess

import pytest
from test_app_template import NAME, SREGYM, build_from_the_doc, install_beside_the_venv

pytestmark = [pytest.mark.slow, pytest.mark.heavy, pytest.mark.validation]


@pytest.mark.timeout(2700)  # a cluster start, a deploy and seven attempts on a loaded host: catches hangs only
def test_an_app_built_from_the_template_deploys_and_its_problem_is_sound(tmp_path):
    package = build_from_the_doc(tmp_path / "work")
    env = install_beside_the_venv(package, tmp_path / "site")
    problem = f"{NAME}-wrong-image-backend"
    cluster = f"app-template-{os.getpid()}"
    args = [SREGYM, "validate", "--problem", problem, "--cluster", cluster, "--no-keep-cluster",
            "--api-port", "0", "--mcp-port", "0", "--results", str(tmp_path / "validate")]
    try:
        proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=2400)
    finally:
        subprocess.run([SREGYM, "cluster", "down", "--name", cluster], env=env, capture_output=True, timeout=300)
    print(proc.stdout[-2000:])  # the soundness matrix, for the validation run's log
    assert proc.returncode == 0, f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    assert "all 1 problem(s) sound" in proc.stdout, proc.stdout[-4000:]
