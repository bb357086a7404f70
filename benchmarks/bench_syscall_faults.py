"""Benchmark what the syscall fault mechanisms cost while no fault is armed (issue 36).

Side by side in one run, on real processes (no cluster), each with the ratio to the plain case:

* ``fsync``: a process under a dormant seccomp filter naming fsync (each fsync is a round trip to
  the supervisor, which answers "run it") against the same process without one, on tmpfs (the
  round trip alone) and on the disk; with the supervisor as it runs (real-time, SCHED_FIFO, as
  root) and as an ordinary process (how it ran before: nice -10), to show where the cost was;
* ``initdb``: PostgreSQL's initdb (993 fsyncs, counted with ``strace -c``) plain and under the
  filter naming fsync (what a postgres pod of a problem with an fsync fault starts under), both
  supervisors, its data directory on tmpfs (the disk's own fsync noise would hide the filter);
* ``pgbench``: PostgreSQL serving pgbench (read-write: a WAL fdatasync per commit; select-only),
  its data directory on the disk, plain and with the server started under the filter naming fsync
  (what postgres-reservation of hotel-syscall-fail-fsync-postgres-reservation starts under), the
  real-time supervisor: transactions per second and mean latency, what a user of the app feels;
* ``read``: ``pread`` plain, under a filter naming read (a round trip per read: why a read filter
  goes only to pods whose problem fails reads), and with the fault shim and an empty channel;
* ``connect``: a process outside any target while the cgroup BPF connect programs are linked at
  the cgroup v2 root (armed for another cgroup: one map miss per connect) against none linked.

``--load N`` runs N busy loops meanwhile, as on a loaded CI host (initdb's slowness was measured
at a load average of ~200). Figures are medians of per-round means (per call, in µs; initdb in s).

    python benchmarks/bench_syscall_faults.py [--calls 3000] [--rounds 3] [--load 0] [--only PART...]
        [--pgbench-seconds 15] [--json out.json]

Root is needed for the BPF part and the real-time supervisor (skipped or ordinary otherwise).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pwd
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from sregym_cluster_embedded.node import bpffault, seccompfault
from sregym_cluster_embedded.node.faultshim import RulesChannel, build_fault_shim

FSYNC = """
import json, os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT)
os.write(fd, b"x")
n = int(sys.argv[2])
took = []
for _ in range(n):
    t = time.perf_counter()
    os.fsync(fd)
    took.append(time.perf_counter() - t)
took.sort()
print(json.dumps([sum(took) / n * 1e6, took[n // 2] * 1e6, took[int(n * 0.99)] * 1e6]))
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
BUSY = "while True: pass"
INITDB = next(iter(sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))), None) if Path(
    "/usr/lib/postgresql").is_dir() else None


def _ordinary_preexec() -> None:
    """The supervisor as it ran before: 10 nice steps above the pods (nice -10 beside pods at 0;
    relative, so a benchmark run under ``nice`` keeps the same weights), no real-time class."""
    seccompfault._libc.prctl(1, signal.SIGKILL, 0, 0, 0)
    if os.geteuid() == 0:
        with contextlib.suppress(OSError):
            os.nice(-10)


SUPERVISORS: dict[str, Callable[[], None]] = {"realtime": seccompfault._supervisor_preexec,
                                               "ordinary": _ordinary_preexec}


@contextlib.contextmanager
def supervisor_kind(kind: str) -> Iterator[None]:
    saved = seccompfault._supervisor_preexec
    seccompfault._supervisor_preexec = SUPERVISORS[kind]
    try:
        yield
    finally:
        seccompfault._supervisor_preexec = saved


def _run(code: str, args: list[str], **kwargs) -> float:
    return _value(subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=900,
                                 check=True, **kwargs).stdout)


def _value(out: str):
    return json.loads(out.strip())


def under_filter(argv: list[str], calls: tuple[str, ...], kind: str, **popen) -> tuple[str, float]:
    """Run ``argv`` under a dormant filter naming ``calls``, answered by a ``kind`` supervisor:
    (its stdout, wall seconds)."""
    with supervisor_kind(kind):
        supervisor = seccompfault.SupervisorClient()
        supervisor._ensure()  # started before the clock does
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    child_fd = child.fileno()
    try:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True,  # noqa: PLW1509
                                preexec_fn=lambda: seccompfault.install(child_fd, calls), **popen)
        listener = seccompfault.receive_listener(parent)
        if listener is not None:
            supervisor.add(listener, "bench", calls)
        out, _ = proc.communicate(timeout=900)
        return out, time.perf_counter() - start
    finally:
        parent.close()
        child.close()
        supervisor.close()


def _ratio(row: dict, base: str = "plain") -> dict:
    return {**row, **{f"{k}_ratio": round(v / row[base], 2) for k, v in list(row.items())
                      if k != base and isinstance(v, float) and row[base]}}


def bench_fsync(calls: int, rounds: int) -> dict:
    results: dict = {}
    for where, directory in (("tmpfs", "/dev/shm"), ("disk", tempfile.gettempdir())):
        path = os.path.join(directory, f"sregym-bench-fsync-{os.getpid()}")
        samples: dict[str, list[list[float]]] = {"plain": [], "realtime": [], "ordinary": []}
        try:
            for _ in range(rounds):
                samples["plain"].append(_run(FSYNC, [path, str(calls)]))
                for kind in SUPERVISORS:
                    out, _wall = under_filter([sys.executable, "-c", FSYNC, path, str(calls)], ("fsync",), kind)
                    samples[kind].append(_value(out))
        finally:
            Path(path).unlink(missing_ok=True)
        for index, stat in enumerate(("mean", "p50", "p99")):
            results[f"{where}_{stat}"] = _ratio({k: round(statistics.median(r[index] for r in v), 2)
                                                 for k, v in samples.items()})
    return {"unit": "µs per fsync (median over rounds of each round's mean / p50 / p99)",
            "supervisor": "realtime: SCHED_FIFO (now); ordinary: 10 nice steps above the caller (before)",
            **results}


def bench_initdb(rounds: int) -> dict:
    if INITDB is None:
        return {"skipped": "no PostgreSQL initdb"}
    try:
        user = pwd.getpwnam("postgres")
    except KeyError:
        return {"skipped": "no postgres user"}
    samples: dict[str, list[float]] = {"plain": [], "realtime": [], "ordinary": []}

    def as_postgres() -> None:
        os.setgid(user.pw_gid)
        os.setuid(user.pw_uid)

    kinds = list(samples)
    for round_index in range(rounds):
        # each kind in each position once every three rounds: the first initdb of a round warms caches
        for kind in kinds[round_index % 3:] + kinds[:round_index % 3]:
            # on tmpfs: fsync itself is free there, so what the filter adds is not lost in disk noise
            data = Path(tempfile.mkdtemp(prefix="sregym-bench-initdb-", dir="/dev/shm"))
            shutil.chown(data, user.pw_uid, user.pw_gid)
            argv = [str(INITDB), "-D", str(data / "pg"), "-A", "trust", "-U", "postgres"]
            try:
                if kind == "plain":
                    start = time.perf_counter()
                    subprocess.run(argv, capture_output=True, check=True, timeout=900,  # noqa: PLW1509
                                   preexec_fn=as_postgres, cwd=data)
                    samples[kind].append(time.perf_counter() - start)
                else:
                    samples[kind].append(_initdb_filtered(argv, kind, as_postgres, data))
            finally:
                shutil.rmtree(data, ignore_errors=True)
    return {"unit": "s per initdb (993 fsyncs), data directory on tmpfs",
            **_ratio({k: round(statistics.median(v), 3) for k, v in samples.items()})}


def _initdb_filtered(argv: list[str], kind: str, as_postgres: Callable[[], None], data: Path) -> float:
    with supervisor_kind(kind):
        supervisor = seccompfault.SupervisorClient()
        supervisor._ensure()
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    child_fd = child.fileno()

    def preexec() -> None:
        as_postgres()  # the filter last, as the node agent does (without root: no_new_privs first)
        seccompfault.install(child_fd, ("fsync",))
    try:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,  # noqa: PLW1509
                                preexec_fn=preexec, cwd=data)
        listener = seccompfault.receive_listener(parent)  # sent before exec, so before Popen returns
        if listener is not None:
            supervisor.add(listener, "bench", ("fsync",))
        proc.wait(timeout=900)
        if proc.returncode != 0:
            raise RuntimeError(f"initdb under the filter failed ({proc.returncode})")
        return time.perf_counter() - start
    finally:
        parent.close()
        child.close()
        supervisor.close()


def _postgres_tool(name: str) -> Path | None:
    return INITDB.with_name(name) if INITDB is not None and INITDB.with_name(name).exists() else None


def _start_postgres(data: Path, port: int, as_postgres: Callable[[], None], filtered: bool):
    """A postgres server on 127.0.0.1:``port`` (under the fsync filter when ``filtered``): (process,
    supervisor or None)."""
    argv = [str(_postgres_tool("postgres")), "-D", str(data / "pg"), "-p", str(port), "-k", str(data),
            "-c", "listen_addresses=127.0.0.1", "-c", "fsync=on", "-c", "shared_buffers=64MB"]
    supervisor = None
    if not filtered:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,  # noqa: PLW1509
                                preexec_fn=as_postgres, cwd=data)
    else:
        supervisor = seccompfault.SupervisorClient()
        supervisor._ensure()
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        child_fd = child.fileno()

        def preexec() -> None:
            as_postgres()
            seccompfault.install(child_fd, ("fsync",))
        try:
            proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,  # noqa: PLW1509
                                    preexec_fn=preexec, cwd=data)
            listener = seccompfault.receive_listener(parent)
            if listener is not None:
                supervisor.add(listener, "bench", ("fsync",))
        finally:
            parent.close()
            child.close()
    ready = _postgres_tool("pg_isready")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if subprocess.run([str(ready), "-h", "127.0.0.1", "-p", str(port)], capture_output=True).returncode == 0:
            return proc, supervisor
        time.sleep(0.2)
    raise RuntimeError("postgres did not start")


def _pgbench(port: int, seconds: int, as_postgres: Callable[[], None], *extra: str) -> tuple[float, float]:
    """(transactions per second, mean latency in ms) of one pgbench run."""
    out = subprocess.run([str(_postgres_tool("pgbench")), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres",
                          "-c", "4", "-j", "2", "-T", str(seconds), *extra, "postgres"], capture_output=True,
                         text=True, timeout=seconds + 300, check=True, preexec_fn=as_postgres)  # noqa: PLW1509
    tps = latency = 0.0
    for line in out.stdout.splitlines():
        if line.startswith("tps = "):
            tps = float(line.split()[2])
        elif line.startswith("latency average = "):
            latency = float(line.split()[3])
    return tps, latency


def bench_pgbench(rounds: int, seconds: int) -> dict:
    if _postgres_tool("pgbench") is None or _postgres_tool("postgres") is None:
        return {"skipped": "no PostgreSQL server or pgbench"}
    try:
        user = pwd.getpwnam("postgres")
    except KeyError:
        return {"skipped": "no postgres user"}

    def as_postgres() -> None:
        os.setgid(user.pw_gid)
        os.setuid(user.pw_uid)

    data = Path(tempfile.mkdtemp(prefix="sregym-bench-pgbench-"))  # on the disk, where volumes live
    shutil.chown(data, user.pw_uid, user.pw_gid)
    samples: dict[str, dict[str, list[float]]] = {
        mode: {"plain_tps": [], "filter_tps": [], "plain_ms": [], "filter_ms": []} for mode in ("read_write", "select_only")}
    try:
        subprocess.run([str(INITDB), "-D", str(data / "pg"), "-A", "trust", "-U", "postgres", "--no-sync"],
                       capture_output=True, check=True, timeout=600, preexec_fn=as_postgres, cwd=data)  # noqa: PLW1509
        port = 25400 + os.getpid() % 500
        proc, _ = _start_postgres(data, port, as_postgres, filtered=False)
        try:
            subprocess.run([str(_postgres_tool("pgbench")), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-i",
                            "-s", "5", "-q", "postgres"], capture_output=True, check=True, timeout=600,
                           preexec_fn=as_postgres)  # noqa: PLW1509
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=120)
        for round_index in range(rounds):
            for filtered in ((False, True) if round_index % 2 == 0 else (True, False)):
                proc, supervisor = _start_postgres(data, port, as_postgres, filtered)
                try:
                    key = "filter" if filtered else "plain"
                    for mode, extra in (("read_write", ()), ("select_only", ("-S",))):
                        tps, latency = _pgbench(port, seconds, as_postgres, *extra)
                        samples[mode][f"{key}_tps"].append(tps)
                        samples[mode][f"{key}_ms"].append(latency)
                finally:
                    proc.send_signal(signal.SIGINT)
                    proc.wait(timeout=120)
                    if supervisor is not None:
                        supervisor.close()
    finally:
        shutil.rmtree(data, ignore_errors=True)
    out: dict = {"unit": f"pgbench -c 4 -j 2, {seconds} s per run, scale 5, data on the disk; median of rounds",
                 "supervisor": "realtime"}
    for mode, values in samples.items():
        row = {k: round(statistics.median(v), 2) for k, v in values.items() if v}
        row["filter_tps_ratio"] = round(row["filter_tps"] / row["plain_tps"], 2) if row.get("plain_tps") else None
        row["filter_ms_ratio"] = round(row["filter_ms"] / row["plain_ms"], 2) if row.get("plain_ms") else None
        out[mode] = row
    return out


def bench_read(calls: int, rounds: int) -> dict:
    shim = build_fault_shim()
    with tempfile.NamedTemporaryFile(delete=False) as data:
        data.write(os.urandom(8192))
    samples: dict[str, list[float]] = {"plain": [], "read_filter": [], "shim_empty_channel": []}
    channel = RulesChannel() if shim is not None else None
    try:
        for _ in range(rounds):
            samples["plain"].append(_run(READ, [data.name, str(calls)]))
            out, _wall = under_filter([sys.executable, "-c", READ, data.name, str(calls)], ("read",), "realtime")
            samples["read_filter"].append(_value(out))
            if channel is not None:
                reader = channel.reader()
                try:
                    samples["shim_empty_channel"].append(_run(READ, [data.name, str(calls)], pass_fds=(reader,),
                                                              env={**os.environ, "LD_PRELOAD": str(shim)}))
                finally:
                    os.close(reader)
    finally:
        if channel is not None:
            channel.close()
        os.unlink(data.name)
    return {"unit": "µs per pread", **_ratio({k: round(statistics.median(v), 3) for k, v in samples.items() if v})}


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
    return {"unit": "µs per connect",
            **_ratio({"plain": round(statistics.median(plain), 2), "programs_linked": round(statistics.median(linked), 2)})}


@contextlib.contextmanager
def background_load(processes: int) -> Iterator[None]:
    busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(processes)]
    try:
        yield
    finally:
        for proc in busy:
            proc.kill()
        for proc in busy:
            proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--load", type=int, default=0, help="busy loops running meanwhile (a loaded host)")
    parser.add_argument("--only", nargs="*", choices=["fsync", "initdb", "pgbench", "read", "connect"])
    parser.add_argument("--pgbench-seconds", type=int, default=15)
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    parts = {"fsync": lambda: bench_fsync(options.calls, options.rounds),
             "initdb": lambda: bench_initdb(options.rounds),
             "pgbench": lambda: bench_pgbench(options.rounds, options.pgbench_seconds),
             "read": lambda: bench_read(options.calls * 10, options.rounds),
             "connect": lambda: bench_connect(options.calls, options.rounds)}
    report: dict = {"load": options.load, "loadavg_before": os.getloadavg()[0]}
    with background_load(options.load):
        for name, run in parts.items():
            if not options.only or name in options.only:
                report[name] = run()
    text = json.dumps(report, indent=2, ensure_ascii=False)
    print(text)
    if options.json:
        options.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
