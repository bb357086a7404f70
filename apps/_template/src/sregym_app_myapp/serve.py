"""Process entry point of the app's one image: ``python -m sregym_app_myapp.serve <service>``.

Services: ``frontend`` and ``backend``; command: ``load-generator`` (the workload generator). Every
service serves ``/healthz``, ``/readyz`` and ``/metrics`` on ``ADMIN_PORT``.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

from sregym_appkit.admin import admin_server
from sregym_appkit.cli import dispatch, lazy
from sregym_appkit.service import begin, serve_until_stopped

from . import IMAGE_TAG, telemetry
from .topology import ADMIN_PORT, BACKEND, BACKEND_PORT, FRONTEND, FRONTEND_PORT

SERVICES = {FRONTEND: FRONTEND_PORT, BACKEND: BACKEND_PORT}
USAGE = f"usage: python -m sregym_app_myapp.serve {{{'|'.join(SERVICES)}|load-generator}}"


def run_service(service: str) -> int:
    from . import backend, frontend
    from .web import json_server

    stop = begin(service, IMAGE_TAG, setup_tracing=telemetry.setup_tracing, build_info=telemetry.INFO)
    port = int(os.environ.get("PORT", SERVICES[service]))
    admin_port = int(os.environ.get("ADMIN_PORT", ADMIN_PORT))
    after_start = None
    if service == BACKEND:
        store = backend.Store.from_env()
        routes, ready = backend.routes(store), store.ready

        def after_start() -> None:
            threading.Thread(target=backend.keep_seeded, args=(store, stop), name="seed", daemon=True).start()
    else:
        peer = frontend.backend_from_env()
        routes = frontend.routes(peer)

        def ready() -> tuple[bool, dict[str, Any]]:
            return True, {"backend": peer.addr}

    def build() -> tuple[Any, Any]:
        return json_server(service, port, routes), admin_server(admin_port, ready)

    return serve_until_stopped(stop, build, started={"version": IMAGE_TAG, "port": port, "admin_port": admin_port},
                               after_start=after_start)


def main(argv: list[str] | None = None) -> int:
    return dispatch(argv, usage=USAGE, commands={"load-generator": lazy(f"{__package__}.workload")}, services=SERVICES,
                    run_service=lambda args: run_service(args[0]))


if __name__ == "__main__":
    sys.exit(main())
