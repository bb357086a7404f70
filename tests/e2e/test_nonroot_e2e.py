"""A user without root runs a problem end to end: `sregym run` as an unprivileged account brings up
its own embedded cluster, deploys Hotel Reservation, injects the fault, lets the reference agent fix
it, grades it and stops everything it started.

Users are often not root. Root-only mechanisms (pod mount/PID namespaces, the cgroup connect guard,
ports below 1024) have fallbacks; this test proves the fallbacks add up to a working benchmark. When
the suite itself runs as root (CI), it creates (once) and uses the unprivileged account
``sregym-nonroot``; the interpreter must be one that account can run (Debian's, the same minor
version) and the checkout must be readable by it, else the test says why it skips.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from sregym_core.testing.verdicts import assert_fix_took

pytestmark = [pytest.mark.slow, pytest.mark.heavy, pytest.mark.apps, pytest.mark.timeout(2400),
              pytest.mark.skipif(os.geteuid() != 0, reason="as non-root, every live test is this test already")]

USER = "sregym-nonroot"
PROBLEM = "hotel-wrong-image-geo"


def _installed() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) for m in ("sregym_cluster_embedded", "sregym_app_hotel_reservation",
                                                      "sregym_agent_baselines", "sregym_fault_k8s"))


def _account() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        if not shutil.which("useradd"):
            pytest.skip("no useradd to create the unprivileged test account")
        subprocess.run(["useradd", "--system", "--user-group", "--shell", "/usr/sbin/nologin", USER], check=True,
                       capture_output=True, timeout=60)
        return pwd.getpwnam(USER)


def _as_user(account: pwd.struct_passwd, argv: list[str], env: dict[str, str], timeout: float):
    return subprocess.run(["setpriv", f"--reuid={account.pw_uid}", f"--regid={account.pw_gid}", "--init-groups",
                           "--reset-env", "--", "env", *(f"{k}={v}" for k, v in env.items()), *argv],
                          capture_output=True, text=True, timeout=timeout)


def _user_processes(uid: int, wait: float = 60.0) -> list[str]:
    """The account's processes still running after ``wait`` seconds (a stopping cluster's pods exit)."""
    import time

    deadline = time.monotonic() + wait
    while (found := _running(uid)) and time.monotonic() < deadline:
        time.sleep(1.0)
    return found


def _running(uid: int) -> list[str]:
    import psutil

    found = []
    for proc in psutil.process_iter(["uids", "cmdline"]):
        try:
            if proc.info["uids"] and proc.info["uids"].real == uid:
                found.append(" ".join(proc.info["cmdline"] or [])[:200])
        except psutil.Error:
            continue
    return found


@pytest.fixture(scope="module")
def nonroot():
    if not _installed():
        pytest.skip("needs the embedded cluster, hotel-reservation, the baseline agents and the k8s faults")
    if not shutil.which("setpriv"):
        pytest.skip("needs setpriv (util-linux) to drop to an unprivileged account")
    account = _account()
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    # not under pytest's temporary directory: that one is private to root (0700)
    home = Path(tempfile.mkdtemp(prefix="sregym-nonroot-"))
    home.chmod(0o755)
    os.chown(home, account.pw_uid, account.pw_gid)
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    # an interpreter the account can execute (this one may live under root's 0700 home)
    python = next((p for p in (os.path.realpath(sys.executable), f"/usr/bin/{version}")
                   if _as_user(account, [p, "-c", "pass"], env, 60).returncode == 0), None)
    if python is None:
        pytest.skip(f"no {version} interpreter the unprivileged account can run")
    site = sysconfig.get_paths()["purelib"]
    probe = _as_user(account, [python, "-c", f"import os; os.listdir({site!r})"], env, 60)
    if probe.returncode != 0:
        pytest.skip(f"the unprivileged account cannot read this checkout's packages ({site})")
    # a venv of its own that sees this checkout's installed packages (editable installs included)
    venv = home / "venv"
    made = _as_user(account, [python, "-m", "venv", "--without-pip", str(venv)], env, 120)
    assert made.returncode == 0, made.stderr
    (venv / "lib" / version / "site-packages" / "sregym_checkout.pth").write_text(
        f"import site; site.addsitedir({site!r})\n")
    try:
        yield account, home, venv / "bin" / "python", env
    finally:
        leftover = _user_processes(account.pw_uid)
        shutil.rmtree(home, ignore_errors=True)
    assert not leftover, f"processes of {USER} left running: {leftover[:5]}"


def test_a_user_without_root_runs_a_problem_end_to_end(nonroot):
    account, home, python, env = nonroot
    env = {**env, "SREGYM_HOME": str(home / ".sregym"), "API_BIND_HOST": "127.0.0.1", "API_PORT": "0",
           "MCP_SERVER_PORT": "0"}
    results = home / "results"
    run = _as_user(account, [str(python), "-c", "from sregym_core.cli import main; main()", "run",
                             "--problem", PROBLEM, "--agent", "reference", "--cluster", "nonroot",
                             "--results", str(results), "--no-keep-cluster"], env, 1500)
    assert run.returncode == 0, f"{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    record = json.loads((results / "results.jsonl").read_text().splitlines()[-1])
    assert not record.get("deploy_failed"), record.get("error")
    assert record["diagnosis_passed"], json.dumps(record["diagnosis"])[:2000]
    assert_fix_took(record)  # state checks; the SLO bar is graded by validation runs
    # the fallbacks are said, not silent: the cluster warned that pods are not isolated
    log = (home / ".sregym" / "clusters" / "nonroot" / "cluster.log").read_text()
    assert "pods are NOT isolated" in log
