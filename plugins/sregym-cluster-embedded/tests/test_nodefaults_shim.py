"""The node fault shim (node/faultshim.c) on real programs, without a cluster: rules, scoping,
the entry points that bypass read(), arming a running process by rewriting its rules channel, and
the channel's secrecy (children keep it, other processes cannot read it)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sregym_cluster_embedded.node.faultshim import RulesChannel, build_fault_shim

pytestmark = pytest.mark.skipif(not shutil.which("gcc"), reason="needs gcc to build the shim")


@pytest.fixture(scope="module")
def shim() -> Path:
    path = build_fault_shim()
    assert path is not None and path.exists()
    return path


@pytest.fixture()
def box(tmp_path: Path, shim: Path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "blob").write_bytes(os.urandom(200_000))
    (tmp_path / "outside").write_text("fine\n")
    rules = RulesChannel()

    def run(argv: list[str], pod_ip: str = "127.0.0.9", cwd: Path | None = None) -> subprocess.CompletedProcess:
        env = {**os.environ, "LD_PRELOAD": str(shim), "SREGYM_POD_IP": pod_ip}
        reader = rules.reader()
        try:
            return subprocess.run(argv, capture_output=True, text=True, errors="replace", env=env,
                                  timeout=60, cwd=cwd, pass_fds=(reader,))
        finally:
            os.close(reader)

    yield tmp_path, data, rules, run
    rules.close()


def test_inert_without_rules(box) -> None:
    _root, data, _rules, run = box
    out = run(["sha256sum", str(data / "blob")])
    assert out.returncode == 0 and not out.stderr


def test_read_eio_through_cat_and_stdio(box) -> None:
    root, data, rules, run = box
    rules.write([f"pods=* calls=read errno=5 rate=1 prefix={data}"])
    cat = run(["cat", str(data / "blob")])          # read / copy_file_range
    assert cat.returncode == 1 and "Input/output error" in cat.stderr
    digest = run(["sha256sum", str(data / "blob")])  # fread_unlocked
    assert digest.returncode == 1 and "Input/output error" in digest.stderr
    assert run(["cat", str(root / "outside")]).stdout == "fine\n"  # outside the prefix


def test_pod_scoping(box) -> None:
    _root, data, rules, run = box
    rules.write([f"pods=127.0.0.7,127.0.0.8 calls=read errno=5 rate=1 prefix={data}"])
    assert run(["cat", str(data / "blob")], pod_ip="127.0.0.9").returncode == 0
    assert run(["cat", str(data / "blob")], pod_ip="127.0.0.8").returncode == 1


def test_write_fsync_open_connect(box) -> None:
    _root, data, rules, run = box
    rules.write([f"pods=* calls=write errno=28 rate=1 prefix={data}"])
    out = run([sys.executable, "-c", f"import os\nfd=os.open({str(data / 'w')!r}, os.O_WRONLY|os.O_CREAT)\n"
                                     "os.write(fd, b'x')"])
    assert "No space left on device" in out.stderr
    rules.write([f"pods=* calls=fsync errno=5 rate=1 prefix={data}"])
    out = run([sys.executable, "-c", f"import os\nfd=os.open({str(data / 'w')!r}, os.O_WRONLY|os.O_CREAT)\n"
                                     "os.write(fd, b'x')\nos.fsync(fd)"])
    assert "Input/output error" in out.stderr and "line 4" in out.stderr  # the write passed, fsync failed
    rules.write([f"pods=* calls=open errno=13 rate=1 prefix={data}"])
    out = run(["cat", "blob"], cwd=data)  # a relative path is resolved against the cwd
    assert "Permission denied" in out.stderr
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        rules.write([f"pods=* calls=connect errno=111 rate=1 port={port}"])
        out = run([sys.executable, "-c", f"import socket\nsocket.create_connection(('127.0.0.1', {port}), 2)"])
        assert "Connection refused" in out.stderr


def test_arm_and_disarm_a_running_process(box) -> None:
    _root, data, rules, _run = box
    shim_path = build_fault_shim()
    script = (f"import os, time\nwhile True:\n"  # until killed below
              f"    try:\n        open({str(data / 'blob')!r}, 'rb').read(); print('ok', flush=True)\n"
              f"    except OSError as e:\n        print('err', e.errno, flush=True)\n    time.sleep(0.1)\n")
    env = {**os.environ, "LD_PRELOAD": str(shim_path), "SREGYM_POD_IP": "127.0.0.9"}
    reader = rules.reader()
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env,
                            pass_fds=(reader,))
    os.close(reader)
    try:
        assert proc.stdout.readline().strip() == "ok"
        rules.write([f"pods=* calls=read errno=5 rate=1 prefix={data}"])
        deadline = time.monotonic() + 30  # the shim takes the rule within a read or two: the bound only catches a hang
        seen = ""
        while time.monotonic() < deadline and seen != "err 5":
            seen = proc.stdout.readline().strip()
        assert seen == "err 5"
        rules.write([])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and seen != "ok":
            seen = proc.stdout.readline().strip()
        assert seen == "ok"
    finally:
        proc.kill()
        proc.wait()


def _descriptors(pid: int) -> dict[str, str]:
    """{fd: what it points at} of a running process; a descriptor closed between the listing and the
    read (the shim moves its channel while it loads) is left out, not an error."""
    out = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            out[fd] = os.readlink(f"/proc/{pid}/fd/{fd}")
        except FileNotFoundError:
            continue
    return out


def test_children_keep_the_channel_and_other_processes_cannot_read_it(box) -> None:
    # Python's subprocess closes every descriptor but 0-2 in the child (close_range): the shim keeps
    # its channel open, so a worker started that way still meets the fault
    _root, data, rules, run = box
    rules.write([f"pods=* calls=read errno=5 rate=1 prefix={data}"])
    child = ("import subprocess, sys\n"
             f"r = subprocess.run(['cat', {str(data / 'blob')!r}], capture_output=True, text=True, errors='replace')\n"
             "print(r.returncode, r.stderr.strip())")
    out = run([sys.executable, "-c", child])
    assert out.stdout.startswith("1 ") and "Input/output error" in out.stdout
    # a process that loads the shim is not dumpable: a same-uid process cannot open its
    # descriptors, environment or memory (as a `kubectl exec` shell in its pod could otherwise)
    nobody = 65534 if os.geteuid() == 0 else None  # pods run as a non-root uid
    reader = rules.reader()
    env = {**os.environ, "LD_PRELOAD": str(build_fault_shim()), "SREGYM_POD_IP": "127.0.0.9"}
    proc = subprocess.Popen(["sleep", "30"], env=env, pass_fds=(reader,), user=nobody)
    os.close(reader)
    try:
        deadline = time.monotonic() + 10  # until sleep has loaded the shim and moved the channel where it keeps it
        held: list[str] = []
        while time.monotonic() < deadline and not held:
            held = [fd for fd, target in _descriptors(proc.pid).items() if target.startswith("/memfd:sregym-faults")]
            time.sleep(0.05)
        assert held  # it holds the channel (root here can see that; its pod's processes cannot)
        status = Path(f"/proc/{proc.pid}/status").read_text()
        while time.monotonic() < deadline and Path(f"/proc/{proc.pid}/environ").stat().st_uid != 0:
            time.sleep(0.05)
        assert Path(f"/proc/{proc.pid}/environ").stat().st_uid == 0  # owner root: not dumpable
        if nobody is not None:
            peek = subprocess.run(["sh", "-c", f"cat /proc/{proc.pid}/fd/{held[0]}; cat /proc/{proc.pid}/environ"],
                                  capture_output=True, text=True, errors="replace", user=nobody, timeout=30)
            assert "Permission denied" in peek.stderr and "calls=" not in peek.stdout
            assert "LD_PRELOAD" not in peek.stdout
        assert "sleep" in status
    finally:
        proc.kill()
        proc.wait()
