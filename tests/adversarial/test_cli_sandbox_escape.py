"""Issue 14 item 4: the CLI sandbox was no sandbox when started as root (the CLI remounted a
read-only bind read-write and wrote to the host, and mknod'ed the host disk to read it).

Runs the attacks inside the real sandbox the CLI agent builds, twice: as this test process runs it
(root on these machines and in CI), and, when that is root, as a non-root conductor would (the
sandbox built for a normal user, bubblewrap started as uid 1000)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from sregym_agent_cli.sandbox import Sandbox, bwrap_path, protected_paths

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap is not usable here")


NORMAL_USER = 1000
_as_user: list[int] = []  # the uid a simulated non-root conductor runs bwrap as


@pytest.fixture(params=["this-process", "non-root-conductor"])
def sandbox(request, monkeypatch):
    if request.param == "non-root-conductor":
        if os.geteuid() != 0:
            pytest.skip("this process is the non-root conductor already")
        import sregym_agent_cli.sandbox as module

        monkeypatch.setattr(module, "_dropping", lambda: False)
        monkeypatch.setattr(sys.modules[__name__], "_as_user", [NORMAL_USER])
    base = Path(tempfile.mkdtemp(prefix="sregym-escape-"))
    base.chmod(0o755)  # reachable by the sandbox's unprivileged host user
    tools = base / "tools"
    workdir = base / "work"
    tools.mkdir()
    workdir.mkdir()
    (tools / "tool.txt").write_text("read-only tool")
    if _as_user:
        os.chown(workdir, NORMAL_USER, NORMAL_USER)  # a normal user's conductor owns its work directory
    yield Sandbox(workdir=workdir, read_only=[tools], protected=protected_paths()), tools, workdir
    shutil.rmtree(base, ignore_errors=True)


def _inside(box: Sandbox, script: str) -> subprocess.CompletedProcess:
    argv, env = box.wrap(["/bin/sh", "-c", script], {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
    if _as_user:
        argv = ["setpriv", f"--reuid={_as_user[0]}", f"--regid={_as_user[0]}", "--clear-groups", "--", *argv]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)


def _root_device() -> tuple[int, int]:
    dev = os.stat("/").st_dev
    return os.major(dev), os.minor(dev)


def test_no_root_no_capabilities(sandbox):
    box, _tools, _workdir = sandbox
    seen = _inside(box, "id -u; grep -E 'Cap(Eff|Prm|Bnd)' /proc/self/status; echo end").stdout
    assert seen.splitlines()[0] != "0"
    assert "CapEff:\t0000000000000000" in seen and "CapPrm:\t0000000000000000" in seen


def test_read_only_binds_cannot_be_remounted_writable(sandbox):
    box, tools, _workdir = sandbox
    script = (f"mount -o remount,rw {tools} 2>&1; mount -o remount,rw /usr 2>&1; "
              f"unshare -r sh -c 'mount -o remount,rw {tools}' 2>&1; "  # a nested user namespace as root
              f"echo pwned > {tools}/tool.txt 2>&1; echo pwned > /usr/pwned 2>&1; echo end")
    seen = _inside(box, script)
    assert "end" in seen.stdout, seen.stderr
    assert (tools / "tool.txt").read_text() == "read-only tool" and not Path("/usr/pwned").exists()


def test_the_host_disk_cannot_be_opened(sandbox):
    box, _tools, workdir = sandbox
    major, minor = _root_device()
    script = (f"mknod {workdir}/disk b {major} {minor} 2>&1; mknod /tmp/disk b {major} {minor} 2>&1; "
              f"head -c 512 {workdir}/disk 2>&1 | wc -c; head -c 512 /tmp/disk 2>&1 | wc -c; "
              "ls /dev; mount -t ext4 /dev/sda1 /mnt 2>&1; echo end")
    seen = _inside(box, script).stdout
    assert "end" in seen
    assert not (workdir / "disk").exists() or not (workdir / "disk").is_block_device()
    devices = set(seen.split("\n"))
    assert not {"sda", "sda1", "vda", "vda1", "nvme0n1", "xvda"} & devices


def test_host_secrets_and_the_checkout_are_unreadable(sandbox):
    box, _tools, workdir = sandbox
    sregym_home = Path(os.environ.get("SREGYM_HOME") or Path.home() / ".sregym")
    files = ["/etc/shadow", "/etc/gshadow", str(REPO / "pyproject.toml"), str(REPO / "sregym_core" / "__init__.py")]
    for target in files:
        seen = _inside(box, f"cat {target} 2>/dev/null | head -c 100; echo end")
        assert seen.stdout.strip() == "end", (target, seen.stdout[:200])
    for target in (str(REPO), str(sregym_home), "/root"):
        seen = _inside(box, f"ls -A {target} 2>/dev/null | head -3; echo end")
        assert seen.stdout.strip() == "end", (target, seen.stdout[:200])


def test_nothing_outside_its_own_directories_is_writable(sandbox):
    box, tools, workdir = sandbox
    script = "; ".join(f"touch {path}/sregym-probe 2>/dev/null && echo WROTE:{path}"
                       for path in ("/", "/etc", "/usr", "/opt", "/var", "/home", "/root", str(tools), str(REPO)))
    seen = _inside(box, script + f"; touch {workdir}/mine && echo home-ok; touch /tmp/t && echo tmp-ok").stdout
    assert "WROTE" not in seen and "home-ok" in seen and "tmp-ok" in seen
    assert not (REPO / "sregym-probe").exists() and not (tools / "sregym-probe").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="only a root conductor drops to an unprivileged host user")
def test_unreachable_tool_directories_are_refused(tmp_path):
    from sregym_agent_cli.sandbox import SandboxError

    workdir = Path(tempfile.mkdtemp(prefix="sregym-escape-"))
    private = Path(tempfile.mkdtemp(prefix="sregym-private-"))  # 0700, root's: nobody cannot walk into it
    try:
        with pytest.raises(SandboxError, match="cannot reach it"):
            Sandbox(workdir=workdir, read_only=[private]).wrap(["/bin/true"], {})
    finally:
        shutil.rmtree(private, ignore_errors=True)
        shutil.rmtree(workdir, ignore_errors=True)
