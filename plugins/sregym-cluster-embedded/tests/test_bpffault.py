"""The cgroup BPF connect fault (node/bpffault.py) on real processes, without a cluster: only
processes in the target cgroup fail, with the errno given, at about the rate given, on the port
given; emptying the map detaches the programs. Skipped, with the probe's reason, where the kernel
refuses them (not root, no cgroup v2, no bpf_set_retval)."""

from __future__ import annotations

import errno
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sregym_cluster_embedded.node import bpffault

AVAILABLE, REASON = bpffault.probe()
pytestmark = pytest.mark.skipif(not AVAILABLE, reason=f"cgroup BPF faults unavailable: {REASON}")

CLIENT = """
import collections, errno, socket, sys
counts = collections.Counter()
for _ in range(int(sys.argv[2])):
    s = socket.socket()
    try:
        s.connect(('127.0.0.1', int(sys.argv[1])))
        counts['ok'] += 1
    except OSError as e:
        counts[errno.errorcode[e.errno]] += 1
    s.close()
print(dict(counts))
"""


@pytest.fixture()
def cgroup() -> Iterator[Path]:
    root = bpffault.cgroup2_root()
    assert root is not None
    path = root / f"sregym-bpffault-test-{os.getpid()}"
    path.mkdir()
    yield path
    path.rmdir()


@pytest.fixture()
def server() -> Iterator[int]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)

    def accept() -> None:
        while True:
            try:
                listener.accept()[0].close()
            except OSError:
                return
    threading.Thread(target=accept, daemon=True).start()
    yield listener.getsockname()[1]
    listener.close()


def _connects(port: int, count: int, cgroup: Path | None) -> dict[str, int]:
    def join() -> None:
        with open(cgroup / "cgroup.procs", "w") as handle:
            handle.write("0")
    out = subprocess.run([sys.executable, "-c", CLIENT, str(port), str(count)], capture_output=True, text=True,
                         timeout=60, preexec_fn=join if cgroup is not None else None)
    assert out.returncode == 0, out.stderr
    return eval(out.stdout)  # noqa: S307 - our own client's dict literal


def test_connect_fails_in_the_target_cgroup_only(cgroup: Path, server: int) -> None:
    faults = bpffault.CgroupConnectFaults()
    try:
        target = bpffault.cgroup_id(cgroup)
        faults.set({target: bpffault.ConnectFault(errno=errno.ECONNREFUSED, rate=1.0)})
        assert faults.attached
        assert _connects(server, 20, cgroup) == {"ECONNREFUSED": 20}
        assert _connects(server, 20, None) == {"ok": 20}  # outside the cgroup: untouched
        faults.set({target: bpffault.ConnectFault(errno=errno.EHOSTUNREACH, rate=1.0, port=server + 1)})
        assert _connects(server, 20, cgroup) == {"ok": 20}  # another port's fault
        faults.set({target: bpffault.ConnectFault(errno=errno.ETIMEDOUT, rate=0.5, port=server)})
        mixed = _connects(server, 400, cgroup)
        assert set(mixed) == {"ok", "ETIMEDOUT"}  # both happen (no bar on the ratio: it is random)
        faults.set({})
        assert not faults.attached
        assert _connects(server, 20, cgroup) == {"ok": 20}
    finally:
        faults.close()



SOCKETS = """
import collections, errno, socket, sys
counts = collections.Counter()
for family in (socket.AF_INET, socket.AF_INET6, socket.AF_UNIX):
    try:
        socket.socket(family, socket.SOCK_STREAM).close()
        counts[f"{family.name} ok"] += 1
    except OSError as e:
        counts[f"{family.name} {errno.errorcode[e.errno]}"] += 1
print(sorted(counts))
"""


def test_socket_fails_for_inet_sockets_in_the_target_cgroup(cgroup: Path) -> None:
    faults = bpffault.CgroupConnectFaults(call="socket")

    def run(inside: bool) -> str:
        def join() -> None:
            with open(cgroup / "cgroup.procs", "w") as handle:
                handle.write("0")
        return subprocess.run([sys.executable, "-c", SOCKETS], capture_output=True, text=True, timeout=60,
                              preexec_fn=join if inside else None).stdout.strip()
    try:
        faults.set({bpffault.cgroup_id(cgroup): bpffault.ConnectFault(errno=errno.EMFILE, rate=1.0)})
        assert run(True) == str(sorted(["AF_INET EMFILE", "AF_INET6 EMFILE", "AF_UNIX ok"]))
        assert run(False) == str(sorted(["AF_INET ok", "AF_INET6 ok", "AF_UNIX ok"]))
        faults.set({})
        assert run(True) == str(sorted(["AF_INET ok", "AF_INET6 ok", "AF_UNIX ok"]))
    finally:
        faults.close()
