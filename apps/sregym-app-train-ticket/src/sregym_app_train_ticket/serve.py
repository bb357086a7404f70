"""Process entry point: ``python -m sregym_app_train_ticket.serve <service>``.

Services: the ``ts-*`` names of :mod:`topology`, ``flagd``, and ``load-generator`` (the workload).
Every service serves ``/healthz``, ``/readyz`` and ``/metrics`` on ``ADMIN_PORT`` (9464); a service
that owns data is ready only while its database answers.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from sregym_appkit.cli import dispatch, lazy
from sregym_appkit.service import begin, serve_until_stopped

from . import IMAGE_TAG, runtime
from .topology import SERVICES, peers

USAGE = f"usage: python -m sregym_app_train_ticket.serve {{{'|'.join(SERVICES)}|load-generator}}"


def run_service(service: str) -> int:
    from . import flags
    from .db import Database
    from .services import BUILDERS, Ctx

    stop = begin(service, IMAGE_TAG, setup_tracing=runtime.setup_tracing, build_info=runtime.INFO,
                 configure_flags=flags.configure)
    db = Database(service) if SERVICES[service][2] else None
    ctx = Ctx(service, runtime.peers_from_env(service, peers(service)), db)

    def ready() -> tuple[bool, dict[str, Any]]:
        if db is None:
            return True, {}
        ok = db.ping()
        return ok, {"database": db.params["database"], **({} if ok else {"error": db.last_error})}

    def build() -> tuple[Any, Any]:
        return (runtime.HttpServer(service, SERVICES[service][0], BUILDERS[service](ctx)),
                runtime.AdminServer(int(os.environ.get("ADMIN_PORT", "9464")), ready))

    return serve_until_stopped(stop, build, started={
        "version": IMAGE_TAG, "port": SERVICES[service][0],
        "peers": {k: v for k, v in os.environ.items() if k.endswith("_ADDR")}})


#: the commands, each module imported only when its command runs
COMMANDS = {"flagd": lazy(f"{__package__}.flags", "serve_flagd"), "load-generator": lazy(f"{__package__}.workload")}


def main(argv: list[str] | None = None) -> int:
    return dispatch(argv, usage=USAGE, commands=COMMANDS, services=SERVICES,
                    run_service=lambda args: run_service(args[0]))


if __name__ == "__main__":
    sys.exit(main())
