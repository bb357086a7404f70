"""The seccomp fsync supervisor (node/seccompfault.py, node/seccompsup.py) on real processes,
without a cluster: dormant it changes nothing, armed it fails the pod's fsync with the errno on the
given paths only, and a supervisor that dies is started again with every listener (the filtered
call waits instead of failing). Skipped, with the probe's reason, where the kernel refuses it."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sregym_cluster_embedded.node import seccompfault

AVAILABLE, REASON = seccompfault.probe()
pytestmark = pytest.mark.skipif(not AVAILABLE, reason=f"seccomp supervisor unavailable: {REASON}")

LOOP = """
import os, sys, time
while True:  # until the fixture kills it
    for path in sys.argv[1:]:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT)
        try:
            os.fsync(fd)
            print(path, 'ok', flush=True)
        except OSError as e:
            print(path, 'err', e.errno, flush=True)
        os.close(fd)
    time.sleep(0.05)
"""


@pytest.fixture()
def filtered(tmp_path: Path) -> Iterator[tuple[seccompfault.SupervisorClient, subprocess.Popen, Path, Path]]:
    supervisor = seccompfault.SupervisorClient()
    (tmp_path / "data").mkdir()
    inside, outside = tmp_path / "data" / "journal", tmp_path / "other"
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    child_fd = child.fileno()
    proc = subprocess.Popen([sys.executable, "-c", LOOP, str(inside), str(outside)], stdout=subprocess.PIPE,
                            text=True, preexec_fn=lambda: seccompfault.install(child_fd))
    listener = seccompfault.receive_listener(parent)
    parent.close()
    child.close()
    assert listener is not None
    supervisor.add(listener, "pod-a")
    yield supervisor, proc, inside, outside
    proc.kill()
    proc.wait()
    supervisor.close()


def _next(proc: subprocess.Popen, path: Path, want: str, timeout: float = 90.0) -> str:
    deadline = time.monotonic() + timeout
    line = ""
    while time.monotonic() < deadline:
        line = proc.stdout.readline().strip()
        if line.startswith(str(path)) and line.endswith(want):
            return line
    return line


def test_dormant_then_armed_on_a_path_then_cleared(filtered) -> None:
    supervisor, proc, inside, outside = filtered
    assert _next(proc, inside, " ok").endswith(" ok")  # dormant: fsync runs
    supervisor.set_rules({"pod-a": [[5, 1.0, [str(inside.parent)]]]})
    assert _next(proc, inside, "err 5").endswith("err 5")
    assert _next(proc, outside, " ok").endswith(" ok")  # another path of the same process
    supervisor.set_rules({"pod-b": [[5, 1.0, []]]})  # another pod's rule
    assert _next(proc, inside, " ok").endswith(" ok")


def test_a_dead_supervisor_is_replaced_with_its_listeners(filtered) -> None:
    supervisor, proc, inside, _outside = filtered
    supervisor.set_rules({"pod-a": [[28, 1.0, []]]})
    assert _next(proc, inside, "err 28").endswith("err 28")
    supervisor.proc.kill()
    supervisor.proc.wait()
    supervisor.check()  # what the fault hooks do every half second
    assert _next(proc, inside, "err 28").endswith("err 28")  # the new one has the listener and the rule
    supervisor.set_rules({})
    assert _next(proc, inside, " ok").endswith(" ok")
