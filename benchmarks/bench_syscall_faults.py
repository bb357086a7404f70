"""Benchmark what the syscall fault mechanisms cost while no fault is armed (issue 36).

Side by side in one run, on real processes (no cluster):

* ``fsync``: a process under the dormant seccomp filter every container starts under (each fsync
  is a round trip to the supervisor, which answers "run it") against the same process without it,
  on tmpfs (the round trip alone) and on the disk;
* ``connect``: a process outside any target while the cgroup BPF connect programs are linked at
  the cgroup v2 root (armed for another cgroup: one map miss per connect) against none linked;
* ``read``: a process loading the fault shim with an empty rules channel against no shim.

    python benchmarks/bench_syscall_faults.py [--calls 3000] [--rounds 3] [--json out.json]

Root is needed for the BPF part (it is skipped otherwise). Figures are medians of per-round means.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from sregym_cluster_embedded.node import bpffault, seccompfault
from sregym_cluster_embedded.node.faultshim import RulesChannel, build_fault_shim

FSYNC = """
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT)
os.write(fd, b"x")
n = int(sys.argv[2])
t = time.perf_counter()
for _ in range(n):
    os.fsync(fd)
print((time.perf_counter() - t) / n * 1e6)
"""
CONNECT = """
import socket, sys, time
n = int(sys.argv[2])
t = time.perf_counter()
for _ in range(n):
    s = socket.socket()
    s.connect(("127.0.0.1", int(sys.argv[1])))
    s.close()
print((time.perf_counter() - t) / n * 1e6)
"""
READ = """
import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
n = int(sys.argv[2])
t = time.perf_counter()
for _ in range(n):
    os.pread(fd, 4096, 0)
print((time.perf_counter() - t) / n * 1e6)
"""


def _run(code: str, args: list[str], **kwargs) -> float:
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=600,
                         check=True, **kwargs)
    return float(out.stdout.strip())


def fsync_under_filter(path: str, calls: int) -> float:
    supervisor = seccompfault.SupervisorClient()
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    child_fd = child.fileno()
    try:
        proc = subprocess.Popen([sys.executable, "-c", FSYNC, path, str(calls)], stdout=subprocess.PIPE, text=True,
                                preexec_fn=lambda: seccompfault.install(child_fd))
        listener = seccompfault.receive_listener(parent)
        if listener is not None:
            supervisor.add(listener, "bench")
        out, _ = proc.communicate(timeout=600)
        return float(out.strip())
    finally:
        parent.close()
        child.close()
        supervisor.close()


def bench_fsync(calls: int, rounds: int) -> dict:
    results: dict = {}
    for where, directory in (("tmpfs", "/dev/shm"), ("disk", tempfile.gettempdir())):
        path = os.path.join(directory, f"sregym-bench-fsync-{os.getpid()}")
        plain, filtered = [], []
        try:
            for _ in range(rounds):
                plain.append(_run(FSYNC, [path, str(calls)]))
                filtered.append(fsync_under_filter(path, calls))
        finally:
            Path(path).unlink(missing_ok=True)
        results[where] = {"plain_us": statistics.median(plain), "dormant_filter_us": statistics.median(filtered)}
    return results


def bench_connect(calls: int, rounds: int) -> dict:
    available, reason = bpffault.probe()
    if not available:
        return {"skipped": reason}
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(512)

    def accept() -> None:
        while True:
            try:
                listener.accept()[0].close()
            except OSError:
                return
    threading.Thread(target=accept, daemon=True).start()
    port = str(listener.getsockname()[1])
    root = bpffault.cgroup2_root()
    other = root / f"sregym-bench-{os.getpid()}"
    other.mkdir()
    faults = bpffault.CgroupConnectFaults()
    plain, linked = [], []
    try:
        for _ in range(rounds):
            faults.set({})
            plain.append(_run(CONNECT, [port, str(calls)]))
            faults.set({bpffault.cgroup_id(other): bpffault.ConnectFault(errno=111, rate=1.0)})
            linked.append(_run(CONNECT, [port, str(calls)]))
    finally:
        faults.close()
        other.rmdir()
        listener.close()
    return {"plain_us": statistics.median(plain), "programs_linked_us": statistics.median(linked)}


def bench_read(calls: int, rounds: int) -> dict:
    shim = build_fault_shim()
    if shim is None:
        return {"skipped": "no C compiler for the shim"}
    channel = RulesChannel()
    with tempfile.NamedTemporaryFile(delete=False) as data:
        data.write(os.urandom(8192))
    plain, shimmed = [], []
    try:
        for _ in range(rounds):
            plain.append(_run(READ, [data.name, str(calls)]))
            reader = channel.reader()
            try:
                shimmed.append(_run(READ, [data.name, str(calls)], pass_fds=(reader,),
                                    env={**os.environ, "LD_PRELOAD": str(shim)}))
            finally:
                os.close(reader)
    finally:
        channel.close()
        os.unlink(data.name)
    return {"plain_us": statistics.median(plain), "shim_empty_channel_us": statistics.median(shimmed)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    report = {"fsync": bench_fsync(options.calls, options.rounds),
              "connect": bench_connect(options.calls, options.rounds),
              "read": bench_read(options.calls * 10, options.rounds)}
    text = json.dumps(report, indent=2)
    print(text)
    if options.json:
        options.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
