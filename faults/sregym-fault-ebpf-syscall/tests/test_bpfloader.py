"""The DaemonSet's loader (bpfloader.py) as a plain process on this host, without a cluster: it
finds a pod's cgroup by the pod's UID, fails ``connect()`` of processes in it (and below it) with
the errno, leaves a process outside untouched, and detaches when it exits, killed included
(nothing pinned).
Root only (BPF programs on cgroups); skipped with the kernel's reason where it refuses them."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from sregym_fault_ebpf_syscall import bpfloader

LOADER = Path(bpfloader.__file__)
CONNECT_LOOP = """
import socket, sys, time
while True:  # until the test kills it
    s = socket.socket()
    try:
        s.connect(('127.0.0.1', int(sys.argv[1])))
        print('ok', flush=True)
    except OSError as e:
        print('err', e.errno, flush=True)
    s.close()
    time.sleep(0.05)
"""


def _root() -> str:
    try:
        return bpfloader.cgroup_root(None)
    except OSError as exc:
        pytest.skip(f"no cgroup v2 hierarchy: {exc}")


pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="BPF programs on cgroups need root")


def _line(proc: subprocess.Popen, want: str, timeout: float = 60.0) -> str:
    deadline, line = time.monotonic() + timeout, ""
    while time.monotonic() < deadline:
        line = proc.stdout.readline().strip()
        if line == want:
            return line
    return line


def test_the_loader_fails_connect_of_the_pods_cgroups_only_and_detaches_on_exit(tmp_path: Path) -> None:
    root = _root()
    uid = str(uuid.uuid4())
    # a kubelet's layout: the pod's cgroup, the container's below it (systemd driver's spelling)
    pod_dir = Path(root) / f"k2test-kubepods-besteffort-pod{uid.replace('-', '_')}.slice"
    container_dir = pod_dir / "cri-containerd-0123.scope"
    container_dir.mkdir(parents=True)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(512)
    port = server.getsockname()[1]
    procs: list[subprocess.Popen] = []
    try:
        def into(cgroup: Path):
            return lambda: (cgroup / "cgroup.procs").write_text(str(os.getpid()))
        target = subprocess.Popen([sys.executable, "-c", CONNECT_LOOP, str(port)], stdout=subprocess.PIPE, text=True,
                                  preexec_fn=into(container_dir))
        other = subprocess.Popen([sys.executable, "-c", CONNECT_LOOP, str(port)], stdout=subprocess.PIPE, text=True)
        procs += [target, other]
        assert _line(target, "ok") == "ok"
        rule = tmp_path / "rule.json"
        rule.write_text(json.dumps({"call": "connect", "errno": 111, "rate": 1.0, "port": port, "pods": [uid]}))
        loader = subprocess.Popen([sys.executable, "-I", str(LOADER), str(rule)], stdout=subprocess.PIPE, text=True)
        procs.append(loader)
        first = json.loads(loader.stdout.readline())
        if "error" in first:
            pytest.skip(f"the kernel refused the loader's programs: {first['error']}")
        armed = json.loads(loader.stdout.readline())
        assert armed["armed"] == 2, armed  # the pod's cgroup and the container's
        assert _line(target, "err 111") == "err 111"
        for _ in range(20):
            assert other.stdout.readline().strip() == "ok"  # outside the pod
        loader.send_signal(signal.SIGTERM)
        assert loader.wait(30) == 0
        assert "detached" in loader.stdout.read()
        assert _line(target, "ok") == "ok"  # the links went with the process
        # a crash (SIGKILL: no cleanup runs) detaches them too: nothing was pinned
        crashed = subprocess.Popen([sys.executable, "-I", str(LOADER), str(rule)], stdout=subprocess.PIPE, text=True)
        procs.append(crashed)
        crashed.stdout.readline()
        assert json.loads(crashed.stdout.readline())["armed"] == 2
        assert _line(target, "err 111") == "err 111"
        crashed.kill()
        crashed.wait(30)
        assert _line(target, "ok") == "ok"
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        server.close()
        for cgroup in (container_dir, pod_dir):
            for _ in range(50):
                try:
                    cgroup.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)


def test_a_rule_for_another_call_is_refused_clearly(tmp_path: Path) -> None:
    rule = tmp_path / "rule.json"
    rule.write_text(json.dumps({"call": "fsync", "errno": 5, "rate": 1.0, "pods": []}))
    done = subprocess.run([sys.executable, "-I", str(LOADER), str(rule)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "call must be one of connect, socket" in json.loads(done.stdout)["error"]
