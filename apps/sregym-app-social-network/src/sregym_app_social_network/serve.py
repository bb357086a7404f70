"""Process entry point: ``python -m sregym_app_social_network.serve <name>``.

::

    serve <thrift service>              compose-post-service, text-service, ... (Thrift on :9090)
    serve nginx-thrift                  the HTTP-to-Thrift gateway (:8082) behind nginx
    serve nginx                         Debian nginx in the foreground (:8080)
    serve media-frontend                media upload/download (:8081)
    serve migrate <database>            create role, collections and seed data, once (init container)
    serve workload                      the workload generator

Every process also serves /healthz, /readyz and /metrics on ADMIN_PORT (9100). The config file is
``$SN_CONFIG`` or ``/etc/social-network/service-config.json``. Exit status 2: invalid configuration.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Any

from sregym_appkit import logs
from sregym_appkit.cli import dispatch, lazy

from . import IMAGE_TAG, config

USAGE = ("usage: python -m sregym_app_social_network.serve {" + "|".join(config.SERVICES) +
         "|nginx|workload}\n       python -m sregym_app_social_network.serve migrate <database>")


def load_config(service: str) -> config.Config:
    path = os.environ.get("SN_CONFIG", config.DEFAULT_CONFIG_PATH)
    try:
        with open(path) as handle:
            text: str | None = handle.read()
    except OSError:
        text = None
    try:
        return config.load(service, text, os.environ, source=path)
    except config.ConfigInvalid as exc:
        for where, message, hint in exc.problems:
            logs.error("config_invalid", config=path, key=where, error=message, hint=hint)
        logs.error("startup_aborted", reason="invalid configuration", problems=len(exc.problems))
        raise SystemExit(2) from exc


def build_context(cfg: config.Config) -> Any:
    from .rpc import Client, RpcPolicy
    from .services import Context
    from .stores import DocumentStore, Memcached, Redis

    topo = config.TOPOLOGY[cfg.service]
    ctx = Context(cfg=cfg)
    if cfg.postgres is not None and topo.postgres:
        ctx.db = DocumentStore(cfg.service, topo.postgres, cfg.postgres)
        ctx.db.open()
    if cfg.redis and topo.redis:
        ctx.redis = Redis(cfg.service, topo.redis, cfg.redis)
    if cfg.memcached and topo.memcached:
        ctx.cache = Memcached(cfg.service, topo.memcached, cfg.memcached)
    policy = RpcPolicy(cfg.timeout_ms, cfg.retries, cfg.backoff_ms)
    for peer, addr in cfg.peers.items():
        ctx.peers[peer] = Client(cfg.service, peer, config.TOPOLOGY[peer].thrift or peer, addr, policy)
    return ctx


def readiness_check(ctx: Any, stopping: threading.Event) -> Any:
    state: dict[str, Any] = {"ready": None}

    def check() -> dict[str, Any]:
        checks: dict[str, Any] = {}
        ready = not stopping.is_set()
        for label, store in (("database", ctx.db), ("redis", ctx.redis)):
            if store is not None:
                err = store.ping()
                checks[label] = {"peer": store.name, "addr": store.addr, "ok": err is None,
                                 **({"error": err} if err else {})}
                ready = ready and err is None
        if state["ready"] is not None and state["ready"] != ready:
            failing = {k: v.get("error") for k, v in checks.items() if not v["ok"]}
            (logs.info if ready else logs.error)("readiness_changed", ready=ready, failing=failing)
        state["ready"] = ready
        return {"service": ctx.cfg.service, "ready": ready, "checks": checks}
    return check


def run_service(service: str) -> int:
    logs.configure(service, os.environ.get("LOG_LEVEL", "info"))
    cfg = load_config(service)
    from . import telemetry
    from sregym_appkit.admin import AdminServer

    telemetry.setup_tracing(service)
    telemetry.UP.labels(service, IMAGE_TAG).set(1)
    ctx = build_context(cfg)
    stopping = threading.Event()
    try:
        admin = AdminServer(cfg.host, cfg.admin_port, readiness_check(ctx, stopping), lambda: True)
    except OSError as exc:
        logs.error("listen_failed", port=cfg.admin_port, error=str(exc))
        return 1
    admin.start()
    logs.info("service_started", listen=f"{cfg.host}:{cfg.port}", admin_port=cfg.admin_port, peers=dict(cfg.peers),
              postgres=cfg.postgres["addr"] if cfg.postgres else None, redis=cfg.redis, memcached=cfg.memcached,
              rpc={"timeout_ms": cfg.timeout_ms, "retries": cfg.retries, "backoff_ms": cfg.backoff_ms})
    thrift = config.TOPOLOGY[service].thrift
    if thrift is None:
        from aiohttp import web

        from .http_front import gateway_app, media_app
        app = gateway_app(ctx) if service == "nginx-thrift" else media_app(ctx)
        web.run_app(app, host=cfg.host, port=cfg.port, print=None, access_log=None, handle_signals=True,
                    shutdown_timeout=3)
    else:
        from .rpc import Processor, ThriftServer
        from .services import HANDLERS
        try:
            server = ThriftServer(cfg.host, cfg.port, Processor(service, thrift,
                                                                HANDLERS[service](ctx)), cfg.workers)
        except OSError as exc:
            logs.error("listen_failed", port=cfg.port, error=str(exc))
            return 1
        signal.signal(signal.SIGTERM, lambda *_: stopping.set())
        signal.signal(signal.SIGINT, lambda *_: stopping.set())
        server.start()
        stopping.wait()
        server.stop()
    stopping.set()
    logs.info("shutdown_started", reason="signal")
    admin.stop()
    for client in ctx.peers.values():
        client.close()
    if ctx.db is not None:
        ctx.db.close()
    telemetry.shutdown_tracing()
    logs.info("shutdown_complete")
    return 0


def run_migrate(database: str) -> int:
    logs.configure(f"{database}-migrate", os.environ.get("LOG_LEVEL", "info"))
    if database not in config.DATABASES:
        logs.error("migrate_refused", reason=f"no database {database!r}", hint=", ".join(config.DATABASES))
        return 2
    env = os.environ
    missing = [n for n in ("DB_ADDR", "DB_USER", "DB_PASSWORD", "DB_ADMIN_USER", "DB_ADMIN_PASSWORD") if not env.get(n)]
    if missing:
        logs.error("config_invalid", key=",".join(missing), error="missing", hint=f"set them from the Secret {database}-db")
        return 2
    from sregym_appkit.postgres import run_migration

    from .seed import migrate
    from .stores import conninfo

    admin = conninfo(env["DB_ADDR"], config.database_name(database), env["DB_ADMIN_USER"], env["DB_ADMIN_PASSWORD"])
    wait_s = float(env.get("MIGRATE_WAIT_S", "120"))
    return run_migration(lambda: migrate(database, admin, env["DB_USER"], env["DB_PASSWORD"], wait_s=wait_s),
                         peer=f"{database}-postgres", addr=env["DB_ADDR"])


def _nginx(rest: list[str]) -> int:
    from .nginx import main as nginx_main
    return nginx_main()


def _migrate(rest: list[str]) -> int:
    if not rest:
        print(USAGE, file=sys.stderr)
        return 2
    return run_migrate(rest[0])


def main(argv: list[str] | None = None) -> int:
    commands = {"workload": lazy(f"{__package__}.workload"), "nginx": _nginx, "migrate": _migrate}
    return dispatch(argv, usage=USAGE, commands=commands, services=config.SERVICES,
                    run_service=lambda args: run_service(args[0]))


if __name__ == "__main__":
    sys.exit(main())
