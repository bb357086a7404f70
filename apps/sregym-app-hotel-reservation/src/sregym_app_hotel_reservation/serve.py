"""Process entry point: ``python -m sregym_app_hotel_reservation.serve <service>``.

::

    serve <service> [--config PATH]          run one of: frontend search geo rate profile
                                             recommendation user reservation
    serve migrate <service> [--config PATH]  create role, schema and seed data (init container)
    serve workload                           the workload generator

The config path defaults to ``$HOTEL_CONFIG`` or ``/etc/hotel/config.yaml``. Exit status 2 means the
configuration is invalid (each problem is logged as a ``config_invalid`` line).
"""

from __future__ import annotations

import os

# grpc must resolve peers with getaddrinfo (the cluster's DNS), not its own c-ares resolver.
os.environ.setdefault("GRPC_DNS_RESOLVER", "native")

import signal  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
from typing import Any  # noqa: E402

from sregym_appkit import logs  # noqa: E402
from sregym_appkit.cli import dispatch, lazy  # noqa: E402

from . import IMAGE_TAG, config  # noqa: E402

USAGE = ("usage: python -m sregym_app_hotel_reservation.serve "
         "{frontend|search|geo|rate|profile|recommendation|user|reservation|workload} [--config PATH]\n"
         "       python -m sregym_app_hotel_reservation.serve migrate <service> [--config PATH]")


def _config_path(args: list[str]) -> str:
    if "--config" in args:
        i = args.index("--config")
        if i + 1 < len(args):
            return args[i + 1]
    return os.environ.get("HOTEL_CONFIG", config.DEFAULT_CONFIG_PATH)


def load_config(service: str, args: list[str]) -> config.Config:
    path = _config_path(args)
    try:
        return config.load(service, config.read_file(path), os.environ, source=path)
    except config.ConfigInvalid as exc:
        for where, message, hint in exc.problems:
            logs.error("config_invalid", config=path, key=where, error=message, hint=hint)
        logs.error("startup_aborted", reason="invalid configuration", problems=len(exc.problems))
        raise SystemExit(2) from exc


def run_service(service: str, args: list[str]) -> int:
    logs.configure(service, os.environ.get("LOG_LEVEL", "info"))
    cfg = load_config(service, args)
    from . import telemetry
    from sregym_appkit.admin import AdminServer
    from .rpc import Peer, RpcServer
    from .services import Context, handlers_for

    telemetry.setup_tracing(service)
    telemetry.UP.labels(service, IMAGE_TAG, cfg.variant).set(1)
    ctx = Context(cfg=cfg)
    if cfg.database is not None:
        from .db import Store
        ctx.store = Store(service, cfg.database)
        ctx.store.open()
    if cfg.cache is not None:
        from .cache import CacheClient
        ctx.cache = CacheClient(service, cfg.cache)
    ctx.peers = {name: Peer(service, name, addr, cfg.rpc) for name, addr in cfg.peers.items()}

    stopping = threading.Event()
    state: dict[str, Any] = {"ready": None}

    def readiness() -> dict[str, Any]:
        checks: dict[str, Any] = {}
        ready = not stopping.is_set()
        if ctx.store is not None:
            err = ctx.store.ping()
            checks["database"] = {"peer": ctx.store.peer, "addr": cfg.database.addr if cfg.database else "",
                                  "ok": err is None, **({"error": err} if err else {})}
            ready = ready and err is None
        if ctx.cache is not None:
            err = ctx.cache.ping()
            checks["cache"] = {"peer": ctx.cache.peer, "addr": ctx.cache.cfg.addr,
                               "ok": err is None, **({"error": err, "degraded": True} if err else {})}
        for name, peer in ctx.peers.items():
            status = peer.check_health(0.3)
            checks[f"peer:{name}"] = {"addr": peer.addr, "ok": status == "SERVING",
                                      **({} if status == "SERVING" else {"error": status, "degraded": True})}
        if state["ready"] is not None and state["ready"] != ready:
            failing = {k: v.get("error") for k, v in checks.items() if not v["ok"]}
            (logs.info if ready else logs.error)("readiness_changed", ready=ready, failing=failing)
        state["ready"] = ready
        return {"service": service, "ready": ready, "stopping": stopping.is_set(), "checks": checks}

    try:
        if service == "frontend":
            from .services.frontend import FrontendServer
            server: Any = FrontendServer(ctx)
        else:
            server = RpcServer(cfg, handlers_for(service)(ctx))
        admin = AdminServer(cfg.host, cfg.admin_port, readiness, lambda: True)
    except (OSError, RuntimeError) as exc:
        logs.error("listen_failed", host=cfg.host, port=cfg.port, admin_port=cfg.admin_port, error=str(exc))
        return 1

    def on_signal(signum: int, _frame: Any) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    server.start()
    admin.start()
    logs.info("service_started", listen=f"{cfg.host}:{cfg.port}", admin_port=cfg.admin_port, config=cfg.source,
              variant=cfg.variant, peers=dict(cfg.peers),
              database=cfg.database.addr if cfg.database else None,
              cache=cfg.cache.addr if cfg.cache else None,
              rpc={"timeout_ms": cfg.rpc.timeout_ms, "retries": cfg.rpc.retries, "backoff_ms": cfg.rpc.backoff_ms,
                   "rate_limit": cfg.rpc.rate_limit, "queue_depth": cfg.rpc.queue_depth},
              features=dict(cfg.features))
    stopping.wait()
    logs.info("shutdown_started", reason="signal")
    grace = float(os.environ.get("SHUTDOWN_GRACE_S", "5"))
    server.stop(grace)
    admin.stop()
    for peer in ctx.peers.values():
        peer.close()
    if ctx.cache is not None:
        ctx.cache.close()
    if ctx.store is not None:
        ctx.store.close()
    telemetry.shutdown_tracing()
    logs.info("shutdown_complete")
    return 0


def run_migrate(service: str, args: list[str]) -> int:
    logs.configure(f"{service}-migrate", os.environ.get("LOG_LEVEL", "info"))
    if service not in config.DATA_SERVICES:
        logs.error("migrate_refused", reason=f"{service!r} owns no database",
                   hint=f"one of: {', '.join(config.DATA_SERVICES)}")
        return 2
    cfg = load_config(service, args)
    assert cfg.database is not None
    admin_user = os.environ.get("DB_ADMIN_USER", "postgres")
    admin_password = os.environ.get("DB_ADMIN_PASSWORD", "")
    if not admin_password:
        logs.error("config_invalid", key="env.DB_ADMIN_PASSWORD", error="missing admin password",
                   hint="set DB_ADMIN_PASSWORD from the database's Secret")
        return 2
    from sregym_appkit.postgres import run_migration

    from . import data
    from .db import conninfo

    database = cfg.database
    return run_migration(lambda: data.migrate(service, conninfo(database, user=admin_user, password=admin_password),
                                              database.user, database.password,
                                              wait_s=float(os.environ.get("MIGRATE_WAIT_S", "120"))),
                         peer=f"postgres-{service}", addr=database.addr)


def _migrate(rest: list[str]) -> int:
    if not rest or rest[0].startswith("-"):
        print(USAGE, file=sys.stderr)
        return 2
    return run_migrate(rest[0], rest[1:])


def main(argv: list[str] | None = None) -> int:
    commands = {"workload": lazy(f"{__package__}.workload.generator"), "migrate": _migrate}
    return dispatch(argv, usage=USAGE, commands=commands, services=config.SERVICES,
                    run_service=lambda args: run_service(args[0], args[1:]))


if __name__ == "__main__":
    sys.exit(main())
