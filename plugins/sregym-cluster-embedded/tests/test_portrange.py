"""A pod's ip_local_port_range (node/portrange.py) on real processes, without a cluster: a process
in the range's cgroup gets its source ports from the range only, runs out with the kernel's own
EADDRNOTAVAIL once every port is in use or in TIME_WAIT, and a process outside is untouched.
Skipped, with the probe's reason, where the kernel refuses the program (not root, no cgroup v2).
The fallback where it cannot run, the LD_PRELOAD shim, is proved the same way (needs a C compiler)."""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sregym_cluster_embedded.node import bpffault, portrange
from sregym_cluster_embedded.node.shim import build_shim

AVAILABLE, REASON = portrange.probe()
needs_program = pytest.mark.skipif(not AVAILABLE, reason=f"port range program unavailable: {REASON}")

# Opens ``count`` connections and keeps them (or closes each first: the client's side goes to
# TIME_WAIT); prints each one's local port or errno name. Plain Python: no shim, no helper.
CLIENT = """
import errno, json, socket, sys
host, port, count, close_first = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
kept, out = [], []
for _ in range(count):
    s = socket.socket()
    try:
        s.connect((host, port))
        out.append(s.getsockname()[1])
        if close_first:
            s.close()
        else:
            kept.append(s)
    except OSError as e:
        out.append(errno.errorcode[e.errno])
        s.close()
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
udp.connect((host, port))  # UDP ports are their own space: the TCP ports in use do not count
out.append(udp.getsockname()[1])
print(json.dumps(out))
"""


@pytest.fixture()
def cgroup() -> Iterator[Path]:
    root = bpffault.cgroup2_root()
    assert root is not None
    path = root / f"sregym-portrange-test-{os.getpid()}"
    path.mkdir()
    yield path
    path.rmdir()


@pytest.fixture()
def server() -> Iterator[tuple[str, int]]:
    listener = socket.socket()
    listener.bind((_pod_ip(), 0))  # not 127.0.0.1: the shim sends that to the pod's own address
    listener.listen(128)
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                accepted.append(listener.accept()[0])  # held open: the client closes first
            except OSError:
                return
    threading.Thread(target=accept, daemon=True).start()
    yield listener.getsockname()
    listener.close()
    for conn in accepted:
        conn.close()


def _pod_ip() -> str:
    """A pod address of our own (loopback, unused): the test's ports clash with nobody's."""
    return f"127.{random.randint(100, 200)}.{random.randint(1, 250)}.{random.randint(1, 250)}"


def _run(server: tuple[str, int], count: int, cgroup: Path | None, close_first: bool = False,
         env: dict[str, str] | None = None) -> list:
    def join() -> None:
        with open(cgroup / "cgroup.procs", "w") as handle:
            handle.write("0")
    out = subprocess.run([sys.executable, "-c", CLIENT, server[0], str(server[1]), str(count),
                          "1" if close_first else "0"], capture_output=True, text=True, timeout=60,
                         preexec_fn=join if cgroup is not None else None, env={**os.environ, **(env or {})})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@needs_program
def test_a_pods_connections_take_ports_from_its_range_until_none_is_left(cgroup: Path, server) -> None:
    low, high = 32000, 32003
    ranges = portrange.PortRanges()
    try:
        ranges.add(bpffault.cgroup_id(cgroup), low, high, _pod_ip())
        assert ranges.attached
        *tcp, udp = _run(server, 6, cgroup)
        assert sorted(tcp[:4]) == [32000, 32001, 32002, 32003]
        assert tcp[4:] == ["EADDRNOTAVAIL", "EADDRNOTAVAIL"]
        assert low <= udp <= high
        # that process exited, closing its connections first: all four ports wait in TIME_WAIT
        assert _run(server, 2, cgroup)[:2] == ["EADDRNOTAVAIL", "EADDRNOTAVAIL"]
        # another pod address (the same pod after a restart): closed one by one, each port waits
        # in TIME_WAIT and the fifth connect finds none
        ranges.add(bpffault.cgroup_id(cgroup), low, high, _pod_ip())
        *tcp, _udp = _run(server, 5, cgroup, close_first=True)
        assert sorted(tcp[:4]) == [32000, 32001, 32002, 32003] and tcp[4] == "EADDRNOTAVAIL"
        # a process outside the pod's cgroup takes the host's own range
        *outside, _udp = _run(server, 6, None)
        assert all(isinstance(p, int) and not low <= p <= high for p in outside)
        ranges.remove(bpffault.cgroup_id(cgroup))
        assert not ranges.attached
    finally:
        ranges.close()


def test_the_shim_applies_the_range_where_the_program_cannot_run(server) -> None:
    """The fallback for dynamically linked processes (node/shim_bind.c): the same outcomes."""
    shim = build_shim()
    if shim is None:
        pytest.skip("no C compiler to build the shim")
    low, high = 32010, 32013
    env = {"LD_PRELOAD": str(shim), "SREGYM_POD_IP": _pod_ip(), "SREGYM_LOCAL_PORT_RANGE": f"{low} {high}"}
    *tcp, udp = _run(server, 6, None, env=env)
    assert sorted(tcp[:4]) == [32010, 32011, 32012, 32013]
    assert tcp[4:] == ["EADDRNOTAVAIL", "EADDRNOTAVAIL"]
    assert low <= udp <= high
    assert _run(server, 1, None, env=env)[0] == "EADDRNOTAVAIL"  # all four wait in TIME_WAIT
    *tcp, _udp = _run(server, 3, None, env={**env, "SREGYM_LOCAL_PORT_RANGE": ""})
    assert all(isinstance(p, int) and not low <= p <= high for p in tcp)  # no range: the host's


def test_the_program_tries_a_wide_range_within_its_bound() -> None:
    """The program is unrolled: its size grows with the attempts and stays far under the
    verifier's limits (the probe loaded the full one above)."""
    assert len(portrange.program(3, attempts=4)) < len(portrange.program(3)) < 8 * 5000
    assert portrange.entry(32000, 32003, "127.1.2.3") == (
        (32000).to_bytes(4, "little") + (4).to_bytes(4, "little") + bytes([127, 1, 2, 3]) + b"\0" * 4)
