"""Process entry point: ``python -m sregym_app_astronomy_shop.serve <service>``.

Services: frontend ad cart checkout currency email payment product-catalog quote recommendation
shipping image-provider accounting fraud-detection flagd; commands: ``load-generator`` (the workload),
and the programs some faults run: ``edge-scanner`` (edge-filter-redos's attacker, :mod:`scanner`),
``order-exporter`` (queue-producer-leak's sidecar, :mod:`exporter`) and ``cache-flood``
(cache-memory-flood's Job, :mod:`cacheflood`).
Every service serves ``/healthz``, ``/readyz`` and ``/metrics`` on ``ADMIN_PORT`` (9464).
"""

from __future__ import annotations

import os

# grpc resolves peers with getaddrinfo (the cluster's DNS), not its own c-ares resolver.
os.environ.setdefault("GRPC_DNS_RESOLVER", "native")

import sys  # noqa: E402
import threading  # noqa: E402
from collections.abc import Callable, Mapping  # noqa: E402
from typing import Any  # noqa: E402

from sregym_appkit.cli import dispatch, lazy  # noqa: E402
from sregym_appkit.service import begin, serve_until_stopped  # noqa: E402

from . import IMAGE_TAG  # noqa: E402

CONSUMERS = ("accounting", "fraud-detection")
SERVICES = ("ad", "cart", "checkout", "currency", "email", "frontend", "image-provider", "payment",
            "product-catalog", "quote", "recommendation", "shipping", *CONSUMERS, "flagd")
USAGE = f"usage: python -m sregym_app_astronomy_shop.serve {{{'|'.join(SERVICES)}|load-generator|edge-scanner|order-exporter|cache-flood}}"


def run_service(service: str) -> int:
    from . import flags, telemetry
    from .rpc import admin_server

    stop = begin(service, IMAGE_TAG, setup_tracing=telemetry.setup_tracing, build_info=telemetry.INFO,
                 configure_flags=flags.configure)
    env = dict(os.environ)
    consumer: Any = None

    def build() -> tuple[Any, Any]:
        nonlocal consumer
        if service in CONSUMERS:
            from .orders import Consumer
            consumer = Consumer(service, env)
            server, ready = None, consumer.ready
        else:
            build_server: Callable[[Mapping[str, str]], tuple[Any, Callable[[], tuple[bool, dict[str, Any]]]]]
            if service == "checkout":
                from .orders import build_checkout as build_server
            elif service == "frontend":
                from .frontend import build_frontend as build_server
            else:
                from .backends import BUILDERS
                build_server = BUILDERS[service]
            server, ready = build_server(env)
        return server, admin_server(int(os.environ.get("ADMIN_PORT", "9464")), ready)

    def start_consumer() -> None:
        if consumer is not None:
            threading.Thread(target=consumer.run, args=(stop,), name="consumer", daemon=True).start()

    return serve_until_stopped(stop, build, after_start=start_consumer, started={
        "version": IMAGE_TAG, "flagd": f"{os.environ.get('FLAGD_HOST', 'flagd')}:{os.environ.get('FLAGD_OFREP_PORT', '8016')}",
        "peers": {k: v for k, v in env.items() if k.endswith("_ADDR")}})


#: the commands, each module imported only when its command runs
COMMANDS = {"flagd": lazy(f"{__package__}.flagd"), "load-generator": lazy(f"{__package__}.loadgen"),
            "nginx": lazy(f"{__package__}.edge"), "edge-scanner": lazy(f"{__package__}.scanner"),
            "order-exporter": lazy(f"{__package__}.exporter"), "cache-flood": lazy(f"{__package__}.cacheflood")}


def main(argv: list[str] | None = None) -> int:
    return dispatch(argv, usage=USAGE, commands=COMMANDS, services=SERVICES,
                    run_service=lambda args: run_service(args[0]))


if __name__ == "__main__":
    sys.exit(main())
