"""PostgreSQL access through a small bounded psycopg 3 connection pool, with spans and metrics.

Failures become :class:`~.rpc.RpcError` with status UNAVAILABLE (connection trouble) or INTERNAL
(SQL/permission errors), and every one is logged naming the datastore (``peer``), ``addr`` and cause.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from collections.abc import Sequence
from typing import Any

import grpc
import psycopg
from opentelemetry import trace
from psycopg_pool import ConnectionPool, PoolTimeout

from sregym_appkit import logs

from . import telemetry
from .config import Database
from .rpc import RpcError


def resolve_host(host: str, port: int) -> str | None:
    """The host's address from Python's getaddrinfo, or None for literal IPs and unresolvable names.

    libpq resolves names in C; resolving here (and passing ``hostaddr``) makes the service follow the
    same resolver as the rest of the process, which is what the embedded cluster's DNS hooks serve.
    An unresolvable name is left to libpq, whose error message then names it.
    """
    try:
        ipaddress.ip_address(host)
        return None
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, port, socket.AF_UNSPEC, socket.SOCK_STREAM)
    except OSError:
        return None
    infos.sort(key=lambda info: info[0] != socket.AF_INET)
    return str(infos[0][4][0]) if infos else None


def conninfo(db: Database, *, user: str | None = None, password: str | None = None,
             connect_timeout: int = 3) -> str:
    """A libpq connection string, resolved now (call it per connection so DNS changes are followed)."""
    extra = {}
    if (hostaddr := resolve_host(db.host, db.port)) is not None:
        extra["hostaddr"] = hostaddr
    return psycopg.conninfo.make_conninfo(
        host=db.host, port=db.port, dbname=db.name, user=user or db.user,
        password=password if password is not None else db.password,
        connect_timeout=connect_timeout, application_name="hotel-reservation", **extra,
    )


class Store:
    """The service's database: a bounded pool plus instrumented query helpers."""

    def __init__(self, service: str, db: Database) -> None:
        self.service, self.db = service, db
        self.peer = f"postgres-{service}"
        options = f"-c statement_timeout={db.statement_timeout_ms}" if db.statement_timeout_ms else ""
        self.pool = ConnectionPool(
            lambda: conninfo(db), min_size=db.pool_min, max_size=db.pool_max, open=False,
            timeout=db.pool_timeout_ms / 1000, name=self.peer, reconnect_timeout=0,
            kwargs={"autocommit": True, "options": options} if options else {"autocommit": True},
            reconnect_failed=self._reconnect_failed,
        )
        telemetry.DB_POOL_MAX.labels(service, db.name).set(db.pool_max)
        self._stats_lock = threading.Lock()

    def _reconnect_failed(self, pool: ConnectionPool) -> None:
        logs.error("db_reconnect_failed", peer=self.peer, addr=self.db.addr, db=self.db.name)

    def open(self) -> None:
        # Do not wait: the service must start (and report not-ready) even while the database is down.
        self.pool.open(wait=False)

    def close(self) -> None:
        self.pool.close(timeout=2)

    def _update_pool_gauges(self) -> None:
        stats = self.pool.get_stats()
        labels = (self.service, self.db.name)
        telemetry.DB_POOL_SIZE.labels(*labels).set(stats.get("pool_size", 0))
        telemetry.DB_POOL_AVAILABLE.labels(*labels).set(stats.get("pool_available", 0))
        telemetry.DB_POOL_WAITING.labels(*labels).set(stats.get("requests_waiting", 0))

    def query(self, sql: str, params: Sequence[Any] | dict[str, Any] = (), *, fetch: bool = True,
              operation: str = "SELECT") -> list[tuple[Any, ...]]:
        """Run one statement; retry once on a connection that died under us (e.g. database restart)."""
        labels = (self.service, self.db.name)
        start = time.perf_counter()
        with telemetry.tracer().start_as_current_span(
            f"{operation} {self.db.name}", kind=trace.SpanKind.CLIENT,
            attributes={"db.system": "postgresql", "db.name": self.db.name, "db.statement": sql[:200],
                        "db.operation": operation, "net.peer.name": self.db.host, "net.peer.port": self.db.port,
                        "peer.service": self.peer},
        ) as span:
            try:
                for attempt in (1, 2):
                    try:
                        with self.pool.connection() as conn:
                            cur = conn.execute(sql, params)
                            rows = cur.fetchall() if fetch and cur.description else []
                        telemetry.DB_QUERIES.labels(*labels, "ok").inc()
                        return rows
                    except psycopg.OperationalError as exc:
                        if attempt == 1 and not isinstance(exc, psycopg.errors.QueryCanceled):
                            continue  # the pool discards the broken connection; try a fresh one
                        raise
                raise AssertionError("unreachable")
            except PoolTimeout as exc:
                self._fail(span, "pool_timeout", exc)
                raise RpcError(grpc.StatusCode.UNAVAILABLE,
                               f"{self.peer} ({self.db.addr}): no database connection within "
                               f"{self.db.pool_timeout_ms} ms: {exc}") from exc
            except psycopg.errors.InsufficientPrivilege as exc:
                self._fail(span, "permission_denied", exc)
                raise RpcError(grpc.StatusCode.INTERNAL, f"{self.peer} ({self.db.addr}): {exc}") from exc
            except psycopg.errors.QueryCanceled as exc:
                self._fail(span, "statement_timeout", exc)
                raise RpcError(grpc.StatusCode.DEADLINE_EXCEEDED, f"{self.peer} ({self.db.addr}): {exc}") from exc
            except psycopg.OperationalError as exc:
                self._fail(span, "connection", exc)
                raise RpcError(grpc.StatusCode.UNAVAILABLE, f"{self.peer} ({self.db.addr}): {exc}") from exc
            except psycopg.Error as exc:
                self._fail(span, "sql", exc)
                raise RpcError(grpc.StatusCode.INTERNAL, f"{self.peer} ({self.db.addr}): {exc}") from exc
            finally:
                telemetry.DB_LATENCY.labels(*labels).observe(time.perf_counter() - start)
                self._update_pool_gauges()

    def _fail(self, span: trace.Span, kind: str, exc: BaseException) -> None:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        telemetry.DB_QUERIES.labels(self.service, self.db.name, "error").inc()
        telemetry.DB_ERRORS.labels(self.service, self.db.name, kind).inc()
        span.set_status(trace.Status(trace.StatusCode.ERROR, message))
        logs.error("db_query_failed", peer=self.peer, addr=self.db.addr, db=self.db.name, user=self.db.user,
                   kind=kind, error=message)

    def ping(self) -> str | None:
        """None when a trivial query works, else the reason (for /readyz)."""
        try:
            with psycopg.connect(conninfo(self.db, connect_timeout=2), autocommit=True) as conn:
                conn.execute("SELECT 1")
            return None
        except psycopg.Error as exc:
            return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
