"""Start, stop and inspect embedded clusters (one detached process per cluster).

A cluster is either ``running`` (its daemon is alive and serves: ``info.json`` names it) or not; a
daemon that is alive but does not serve is ``starting`` or ``stopping``. :func:`up` hands out only
a cluster whose API answers: it waits for a stopping daemon to be gone, then starts a fresh one.
Commands working on the same cluster name at once coordinate through the locks in :mod:`.locks`.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import select
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import psutil
from sregym_core.errors import ClusterError

from . import locks
from .settings import cluster_dir, node_monitor_grace_period, release, sregym_home

SRC_DIR = Path(__file__).resolve().parent.parent
NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-")
# how long a command waits for another one that is starting or stopping the same cluster
LOCK_WAIT_S = 120.0
#: the cluster `sregym run`, `sregym cluster ...` and the Python API use when none is named
DEFAULT_NAME = "sregym"
DEFAULT_NODES = 3
# state files: written by the daemon while it stops / by a command that wants the cluster kept
STOPPING, KEEP = "stopping", "keep"
SERVING_FILES = ("port", "info.json")


@attrs.frozen(kw_only=True)
class ClusterInfo:
    name: str
    running: bool
    state_dir: Path
    state: str = "stopped"  # running, starting, stopping or stopped
    pid: int | None = None
    url: str | None = None
    api_port: int | None = None
    nodes: int | None = None
    pod_cidr_prefix: str | None = None
    service_cidr_prefix: str | None = None
    kubeconfig: Path | None = None
    agent_kubeconfig: Path | None = None
    startup_seconds: float | None = None
    #: None when pods are isolated (or unknown); else what the node agent cannot enforce
    isolation_warning: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: (str(v) if isinstance(v, Path) else v) for k, v in attrs.asdict(self).items()}


def _check_name(name: str) -> None:
    if not name or len(name) > 40 or not set(name) <= NAME_CHARS or name[0] == "-" or name[-1] == "-":
        raise ClusterError(f"invalid cluster name {name!r}",
                           hints=["use lowercase letters, digits and '-', at most 40 characters"])


def _daemon_pid(name: str) -> int | None:
    """The PID of cluster ``name``'s daemon, if that process is alive and really is the daemon."""
    pid_file = cluster_dir(name) / "pid"
    try:
        pid = int(pid_file.read_text().strip())
        proc = psutil.Process(pid)
        cmdline = proc.cmdline()
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None
    except (FileNotFoundError, ValueError, psutil.Error):
        return None
    if "sregym_cluster_embedded" in " ".join(cmdline) and "serve" in cmdline and name in cmdline:
        return pid
    return None


def status(name: str = DEFAULT_NAME) -> ClusterInfo:
    """What is known about cluster ``name``; ``running`` says whether its daemon serves."""
    _check_name(name)
    state_dir = cluster_dir(name)
    pid = _daemon_pid(name)
    try:
        info = json.loads((state_dir / "info.json").read_text())
    except (FileNotFoundError, ValueError):
        info = {}
    stopping = pid is not None and (state_dir / STOPPING).exists()
    running = pid is not None and bool(info) and info.get("pid") == pid and not stopping
    state = "running" if running else "stopping" if stopping else "starting" if pid is not None else "stopped"
    try:
        isolation = json.loads((state_dir / "isolation.json").read_text()) if running else {}
    except (FileNotFoundError, ValueError):
        isolation = {}
    return ClusterInfo(
        name=name, running=running, state=state, state_dir=state_dir, pid=pid,
        url=info.get("url") if running else None, api_port=info.get("api_port") if running else None,
        nodes=info.get("nodes"), pod_cidr_prefix=info.get("pod_cidr_prefix"),
        service_cidr_prefix=info.get("service_cidr_prefix"),
        kubeconfig=state_dir / "kubeconfig" if (state_dir / "kubeconfig").exists() else None,
        agent_kubeconfig=state_dir / "agent-kubeconfig" if (state_dir / "agent-kubeconfig").exists() else None,
        startup_seconds=info.get("startup_seconds"), isolation_warning=isolation.get("warning") or None,
    )


def answers(info: ClusterInfo, timeout: float = 2.0) -> bool:
    """Whether a running cluster's API server answers ``/readyz`` right now."""
    if not info.running or not info.url:
        return False
    host, _, port = info.url.removeprefix("https://").partition(":")
    ctx = ssl.create_default_context(cafile=str(info.state_dir / "pki" / "ca.crt"))
    conn = http.client.HTTPSConnection(host, int(port), context=ctx, timeout=timeout)
    try:
        conn.request("GET", "/readyz")
        return conn.getresponse().status == 200
    except (OSError, ssl.SSLError):
        return False
    finally:
        conn.close()


def _log_tail(state_dir: Path, lines: int = 15, file: str = "cluster.log") -> list[str]:
    try:
        return (state_dir / file).read_text(errors="replace").splitlines()[-lines:]
    except FileNotFoundError:
        return []


def start_timeout() -> float:
    """Seconds a cluster may take to report ready: ``$SREGYM_CLUSTER_START_TIMEOUT``, else 180. A
    start takes seconds on an idle laptop, but a minute on 2 cores also running validations and a
    test suite (the node agents' isolation probes start containers)."""
    try:
        return max(float(os.environ.get("SREGYM_CLUSTER_START_TIMEOUT", "180")), 1.0)
    except ValueError:
        return 180.0


def up(name: str = DEFAULT_NAME, nodes: int = DEFAULT_NODES, *, owner_pid: int | None = None,
       timeout: float | None = None, node_cpu: str = "4", node_memory: str = "8Gi") -> ClusterInfo:
    """Start cluster ``name``, or reuse it if it runs, and return it once its API answers.

    A daemon started with ``owner_pid`` stops when that process is gone and no other command uses
    the cluster. Without an owner the cluster runs until :func:`down`; asking for it without an
    owner also keeps a running cluster that was started with one.
    """
    _check_name(name)
    timeout = start_timeout() if timeout is None else timeout
    if not 0 <= nodes <= 50:
        raise ClusterError(f"--nodes must be between 0 and 50, not {nodes}")
    state_dir = cluster_dir(name)
    state_dir.mkdir(parents=True, exist_ok=True)
    # using the cluster (a stopping daemon holds this lock exclusively: wait until it is gone) ...
    with locks.holding(name, locks.USERS, shared=True, timeout=LOCK_WAIT_S,
                       busy=f"cluster {name!r} is still stopping"), \
            locks.holding(name, locks.LIFECYCLE, timeout=LOCK_WAIT_S + timeout,
                          busy=f"cluster {name!r} is being started or stopped by another command"):
        # ... and alone in starting or stopping it
        current = _settled(name)
        if current.running:
            if owner_pid is None:
                (state_dir / KEEP).touch()
            if not _wait_answer(current, time.monotonic() + timeout, lambda: status(name).running):
                raise ClusterError(f"cluster {name!r} runs (pid {current.pid}) but its API does not answer at "
                                   f"{current.url}",
                                   hints=[f"`sregym cluster down --name {name}` stops it; the next command starts "
                                          "a fresh one", *_log_tail(state_dir, 5)])
            return status(name)
        return _start(name, nodes, owner_pid=owner_pid, timeout=timeout, node_cpu=node_cpu, node_memory=node_memory)


def _settled(name: str) -> ClusterInfo:
    """The cluster's status once no daemon is on its way out: a stopping daemon is waited for."""
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        info = status(name)
        if info.state in ("running", "stopped"):
            return info
        if time.monotonic() > deadline:
            raise ClusterError(f"cluster {name!r} is {info.state} (pid {info.pid}) and did not settle within "
                               f"{LOCK_WAIT_S:.0f} s", hints=[f"`sregym cluster down --name {name}` stops it"])
        time.sleep(0.1)


def _wait_answer(info: ClusterInfo, deadline: float, alive: Callable[[], bool]) -> bool:
    """Wait until ``info``'s API answers; False at the deadline or when the daemon is gone."""
    while True:
        if answers(info):
            return True
        if time.monotonic() > deadline or not alive():
            return False
        time.sleep(0.1)  # a loaded machine may need a moment for the TLS handshake


def _start(name: str, nodes: int, *, owner_pid: int | None, timeout: float, node_cpu: str,
           node_memory: str) -> ClusterInfo:
    state_dir = cluster_dir(name)
    node_monitor_grace_period()  # a bad value is the user's error here, not a daemon that dies at start
    read_fd, write_fd = os.pipe()
    cmd = [sys.executable, "-m", "sregym_cluster_embedded", "serve", "--name", name, "--nodes", str(nodes),
           "--ready-fd", str(write_fd), "--node-cpu", node_cpu, "--node-memory", node_memory]
    if owner_pid:
        cmd += ["--owner-pid", str(owner_pid)]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC_DIR), env.get("PYTHONPATH", "")) if p)
    env["SREGYM_HOME"] = str(sregym_home())
    with open(state_dir / "daemon.out", "ab") as out:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=env,
                                pass_fds=(write_fd,), start_new_session=True, close_fds=True)
    os.close(write_fd)
    deadline = time.monotonic() + timeout
    try:
        ready = False
        while time.monotonic() < deadline:
            readable, _, _ = select.select([read_fd], [], [], 0.2)
            if readable:
                ready = os.read(read_fd, 64).startswith(b"ready")
                break
            if proc.poll() is not None:
                break
    finally:
        os.close(read_fd)
    info = status(name)
    if ready and info.running and _wait_answer(info, deadline, lambda: proc.poll() is None):
        return info
    if proc.poll() is None:
        _stop_pid(proc.pid, 5.0)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5.0)  # our child: reap it, so no zombie outlives the failed start
    why = "exited early" if proc.poll() not in (None, 0) else ("never reported ready" if not ready
                                                               else "did not answer /readyz")
    raise ClusterError(f"cluster {name!r} did not start ({why})",
                       hints=_log_tail(state_dir) + _log_tail(state_dir, 5, "daemon.out")
                       or [f"see {state_dir / 'cluster.log'}"])


def _stop_pid(pid: int, grace: float) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            p = psutil.Process(pid)
            if p.status() == psutil.STATUS_ZOMBIE:
                break
        except psutil.NoSuchProcess:
            break
        time.sleep(0.05)
    else:
        # the daemon leads its own session: kill what is left of the group with it
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        # SIGKILL is delivered asynchronously: until the process is really gone, status() would still
        # see a live daemon behind the pid file
        with contextlib.suppress(psutil.Error):
            psutil.Process(pid).wait(5.0)
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def down(name: str = DEFAULT_NAME, *, grace: float = 20.0, forget: bool = False) -> bool:
    """Stop cluster ``name`` (SIGTERM, then SIGKILL after ``grace`` seconds) and wait until it is
    gone. True if it was running. ``forget`` also releases its address range."""
    _check_name(name)
    state_dir = cluster_dir(name)
    if not state_dir.is_dir():
        return False
    with locks.holding(name, locks.LIFECYCLE, timeout=LOCK_WAIT_S,
                       busy=f"cluster {name!r} is being started or stopped by another command"):
        pid = _daemon_pid(name)
        if pid is not None:
            _stop_pid(pid, grace)
        for stale in ("pid", *SERVING_FILES, STOPPING, KEEP):
            with contextlib.suppress(FileNotFoundError):
                (state_dir / stale).unlink()
    if forget:
        release(name)
    return pid is not None


def stop_if_unused(name: str, *, grace: float = 20.0) -> bool:
    """Stop cluster ``name`` unless another process still uses it. True if it is stopped now."""
    _check_name(name)
    users = locks.lock(name, locks.USERS)
    if not users.acquire(timeout=0):
        return False
    try:  # while this lock is held, a newcomer waits for the daemon to be gone and starts a fresh one
        down(name, grace=grace)
    finally:
        users.release()
    return True


def kubeconfig(name: str = DEFAULT_NAME, agent: bool = False) -> Path:
    """Path of cluster ``name``'s admin (or agent) kubeconfig."""
    _check_name(name)
    path = cluster_dir(name) / ("agent-kubeconfig" if agent else "kubeconfig")
    if not path.exists():
        raise ClusterError(f"cluster {name!r} has no kubeconfig yet", hints=[f"run: sregym cluster up --name {name}"])
    return path


def list_clusters() -> list[ClusterInfo]:
    root = sregym_home() / "clusters"
    if not root.is_dir():
        return []
    return [status(p.name) for p in sorted(root.iterdir()) if p.is_dir() and set(p.name) <= NAME_CHARS]
