"""Real servers a unit test starts on the loopback (redis-server, memcached, ...) and stops again.

Tests of datastore clients and cache faults run the real server program, as the embedded node does,
rather than a fake. Each of them needs the same three steps: a free loopback port, the program
started and waited for until it accepts connections, and the program stopped whatever the test did.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A TCP port on the loopback that nothing listens on right now."""
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def accepts(port: int, timeout: float = 0.2) -> bool:
    """True if something accepts a TCP connection on ``127.0.0.1:port``."""
    try:
        socket.create_connection((LOOPBACK, port), timeout=timeout).close()
        return True
    except OSError:
        return False


def start_server(command: Sequence[str], port: int, *, cwd: str | Path | None = None,
                 timeout: float = 10.0) -> subprocess.Popen:
    """Start ``command`` and return once it accepts connections on ``port``.

    Raises AssertionError naming the command (and its exit code, if it died) when it does not listen
    within ``timeout`` seconds; the process is killed first, so nothing outlives a failed start."""
    proc = subprocess.Popen(list(command), cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if accepts(port):
            return proc
        if proc.poll() is not None:
            raise AssertionError(f"{command[0]} exited with {proc.returncode} before listening on {port}: "
                                 f"{' '.join(command)}")
        time.sleep(0.05)
    stop_server(proc, grace=0)
    raise AssertionError(f"{command[0]} did not listen on {port} within {timeout:g} s: {' '.join(command)}")


def stop_server(proc: subprocess.Popen, grace: float = 10.0) -> int | None:
    """SIGTERM (as the kubelet stops a container), SIGKILL after ``grace`` s; the exit code."""
    if proc.poll() is None:
        proc.terminate()
        try:
            return proc.wait(timeout=max(grace, 0.01))
        except subprocess.TimeoutExpired:
            proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)
    return proc.returncode


@contextlib.contextmanager
def local_server(command: Sequence[str], port: int, *, cwd: str | Path | None = None,
                 timeout: float = 10.0) -> Iterator[subprocess.Popen]:
    """``start_server`` for the ``with`` block, stopped at its end whatever happened in it."""
    proc = start_server(command, port, cwd=cwd, timeout=timeout)
    try:
        yield proc
    finally:
        stop_server(proc)


def redis_command(port: int, *args: str, program: str = "redis-server") -> list[str]:
    """redis-server on the loopback at ``port`` with ``args`` (a container's arguments after the program)."""
    return [program, *args, "--port", str(port), "--bind", LOOPBACK]
