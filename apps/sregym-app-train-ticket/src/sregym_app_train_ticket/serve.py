"""Process entry point: ``python -m sregym_app_train_ticket.serve <service>``.

Services: the ``ts-*`` names of :mod:`topology`, ``flagd``, and ``load-generator`` (the workload).
Every service serves ``/healthz``, ``/readyz`` and ``/metrics`` on ``ADMIN_PORT`` (9464); a service
that owns data is ready only while its database answers.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Any

from sregym_appkit.cli import dispatch

from . import IMAGE_TAG, runtime
from .topology import SERVICES, peers

USAGE = f"usage: python -m sregym_app_train_ticket.serve {{{'|'.join(SERVICES)}|load-generator}}"


def run_service(service: str) -> int:
    runtime.configure_logs(service)
    stop = threading.Event()

    def on_signal(_signum: int, _frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if service == "flagd":
        from .flags import serve_flagd
        serve_flagd(int(os.environ.get("FLAGD_OFREP_PORT", "8016")), os.environ.get("FLAGD_FILE", "/etc/flagd/flags.json"),
                    stop)
        return 0
    from . import flags
    from .db import Database
    from .services import BUILDERS, Ctx

    runtime.setup_tracing(service)
    runtime.INFO.labels(service, IMAGE_TAG).set(1)
    flags.configure(service)
    db = Database(service) if SERVICES[service][2] else None
    ctx = Ctx(service, runtime.peers_from_env(service, peers(service)), db)

    def ready() -> tuple[bool, dict[str, Any]]:
        if db is None:
            return True, {}
        ok = db.ping()
        return ok, {"database": db.params["database"], **({} if ok else {"error": db.last_error})}

    try:
        server = runtime.HttpServer(service, SERVICES[service][0], BUILDERS[service](ctx))
        admin = runtime.AdminServer(int(os.environ.get("ADMIN_PORT", "9464")), ready)
    except OSError as exc:
        runtime.error("listen_failed", error=str(exc))
        return 1
    admin.start()
    server.start()
    runtime.info("service_started", version=IMAGE_TAG, port=SERVICES[service][0],
                 peers={k: v for k, v in os.environ.items() if k.endswith("_ADDR")})
    stop.wait()
    runtime.info("shutdown_started", reason="signal")
    server.stop()
    admin.stop()
    runtime.shutdown_tracing()
    return 0


def _load_generator(rest: list[str]) -> int:
    from .workload import main as workload_main
    return workload_main(rest)


def main(argv: list[str] | None = None) -> int:
    return dispatch(argv, usage=USAGE, commands={"load-generator": _load_generator}, services=SERVICES,
                    run_service=lambda args: run_service(args[0]))


if __name__ == "__main__":
    sys.exit(main())
