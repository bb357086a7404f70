"""Start, stop and inspect embedded clusters (one detached process per cluster)."""

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
from pathlib import Path
from typing import Any

import attrs
import psutil

from .settings import cluster_dir, release, sregym_home

try:
    from sregym_core.errors import ClusterError
except ImportError:  # the core is optional for the cluster itself

    class ClusterError(RuntimeError):  # type: ignore[no-redef]
        def __init__(self, message: str, *, hints: tuple[str, ...] | list[str] = ()) -> None:
            super().__init__(message)
            self.message, self.hints = message, tuple(hints)


SRC_DIR = Path(__file__).resolve().parent.parent
NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-")


@attrs.frozen(kw_only=True)
class ClusterInfo:
    name: str
    running: bool
    state_dir: Path
    pid: int | None = None
    url: str | None = None
    api_port: int | None = None
    nodes: int | None = None
    pod_cidr_prefix: str | None = None
    service_cidr_prefix: str | None = None
    kubeconfig: Path | None = None
    agent_kubeconfig: Path | None = None
    startup_seconds: float | None = None

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


def status(name: str = "default") -> ClusterInfo:
    """What is known about cluster ``name``; ``running`` says whether its daemon answers."""
    _check_name(name)
    state_dir = cluster_dir(name)
    pid = _daemon_pid(name)
    try:
        info = json.loads((state_dir / "info.json").read_text())
    except (FileNotFoundError, ValueError):
        info = {}
    running = pid is not None and bool(info) and info.get("pid") == pid
    return ClusterInfo(
        name=name, running=running, state_dir=state_dir, pid=pid if running else None,
        url=info.get("url") if running else None, api_port=info.get("api_port") if running else None,
        nodes=info.get("nodes"), pod_cidr_prefix=info.get("pod_cidr_prefix"),
        service_cidr_prefix=info.get("service_cidr_prefix"),
        kubeconfig=state_dir / "kubeconfig" if (state_dir / "kubeconfig").exists() else None,
        agent_kubeconfig=state_dir / "agent-kubeconfig" if (state_dir / "agent-kubeconfig").exists() else None,
        startup_seconds=info.get("startup_seconds"),
    )


def _readyz(url: str, ca: Path, timeout: float = 2.0) -> bool:
    host_port = url.removeprefix("https://")
    host, _, port = host_port.partition(":")
    ctx = ssl.create_default_context(cafile=str(ca))
    conn = http.client.HTTPSConnection(host, int(port), context=ctx, timeout=timeout)
    try:
        conn.request("GET", "/readyz")
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


def _log_tail(state_dir: Path, lines: int = 15, file: str = "cluster.log") -> list[str]:
    try:
        return (state_dir / file).read_text(errors="replace").splitlines()[-lines:]
    except FileNotFoundError:
        return []


def up(name: str = "default", nodes: int = 1, *, owner_pid: int | None = None, timeout: float = 60.0,
       node_cpu: str = "4", node_memory: str = "8Gi") -> ClusterInfo:
    """Start cluster ``name`` (or return it if it already runs) and wait until its API answers."""
    _check_name(name)
    if not 0 <= nodes <= 50:
        raise ClusterError(f"--nodes must be between 0 and 50, not {nodes}")
    current = status(name)
    if current.running:
        return current
    state_dir = cluster_dir(name)
    state_dir.mkdir(parents=True, exist_ok=True)
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
    try:
        deadline = time.monotonic() + timeout
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
    answered = False
    while ready and info.running and not answered:
        answered = _readyz(info.url or "", state_dir / "pki" / "ca.crt")
        if answered or time.monotonic() > deadline or proc.poll() is not None:
            break
        time.sleep(0.1)  # a loaded machine may need a moment for the TLS handshake
    if not answered:
        if proc.poll() is None:
            _stop_pid(proc.pid, 5.0)
        why = "exited early" if proc.poll() not in (None, 0) else ("never reported ready" if not ready
                                                                   else "did not answer /readyz")
        raise ClusterError(f"cluster {name!r} did not start ({why})",
                           hints=_log_tail(state_dir) + _log_tail(state_dir, 5, "daemon.out")
                           or [f"see {state_dir / 'cluster.log'}"])
    return info


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
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def down(name: str = "default", *, grace: float = 20.0, forget: bool = False) -> bool:
    """Stop cluster ``name`` (SIGTERM, then SIGKILL after ``grace`` seconds). True if it was running.
    ``forget`` also releases its address range."""
    _check_name(name)
    pid = _daemon_pid(name)
    if pid is not None:
        _stop_pid(pid, grace)
    state_dir = cluster_dir(name)
    for stale in ("pid", "port", "info.json"):
        with contextlib.suppress(FileNotFoundError):
            (state_dir / stale).unlink()
    if forget:
        release(name)
    return pid is not None


def kubeconfig(name: str = "default", agent: bool = False) -> Path:
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
