"""One service process's life: listen, say so, run until Kubernetes stops the pod, shut down cleanly.

Every service of an app image goes the same way, whatever it serves: SIGTERM (the kubelet stopping
the pod) or SIGINT sets a stop event (:func:`stop_on_signals`); the servers are built, and a port
that cannot be bound is one ``listen_failed`` log line and exit status 1 (the pod's restarts show
it), not a traceback; the admin port starts first, so probes answer as soon as the service does;
``service_started`` and ``shutdown_started`` are logged; traces are flushed last
(:func:`serve_until_stopped`).
"""

from __future__ import annotations

import signal
import subprocess
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from . import logs
from .tracing import shutdown_tracing


class Server(Protocol):
    def start(self) -> None: ...

    def stop(self) -> None: ...


def stop_on_signals() -> threading.Event:
    """An event set by SIGTERM or SIGINT (call from the main thread)."""
    stop = threading.Event()

    def on_signal(_signum: int, _frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    return stop


def begin(service: str, version: str, *, setup_tracing: Callable[[str], Any], build_info: Any,
          configure_flags: Callable[[str], None] | None = None) -> threading.Event:
    """A service's first steps, in order: JSON logs named for it, the stop event
    (:func:`stop_on_signals`), tracing (the app's ``setup_tracing(service)``), its build info gauge
    (``build_info.labels(service, version)`` set to 1) and, for apps with flags, the flag client."""
    logs.configure(service)
    stop = stop_on_signals()
    setup_tracing(service)
    build_info.labels(service, version).set(1)
    if configure_flags is not None:
        configure_flags(service)
    return stop


def serve_until_stopped(stop: threading.Event, build: Callable[[], tuple[Server | None, Server]],
                        started: Mapping[str, Any], after_start: Callable[[], None] | None = None) -> int:
    """Run ``(server, admin) = build()`` until ``stop`` is set; the process's exit status.

    ``server`` may be None (a process that only consumes work); ``started`` are the fields of the
    ``service_started`` log line; ``after_start`` runs once both listen (e.g. a consumer thread).
    """
    try:
        server, admin = build()
    except OSError as exc:
        logs.error("listen_failed", error=str(exc))
        return 1
    admin.start()
    if server is not None:
        server.start()
    logs.info("service_started", **started)
    if after_start is not None:
        after_start()
    stop.wait()
    logs.info("shutdown_started", reason="signal")
    if server is not None:
        server.stop()
    admin.stop()
    shutdown_tracing()
    return 0


def stop_process(proc: subprocess.Popen[Any], grace_s: float = 5.0) -> None:
    """Stop a child process as the kubelet stops a container: SIGTERM, ``grace_s`` seconds to exit,
    then SIGKILL; it is reaped either way. A process that has already exited is left as it is."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)
