"""A service's MySQL connection pool (PyMySQL to MariaDB ``ts-mysql``, the service's own schema).

Connection settings come from the environment: ``MYSQL_ADDR`` (host:port), ``MYSQL_DATABASE``,
``MYSQL_USER`` and ``MYSQL_PASSWORD`` (from the service's Secret). Every statement is a span
(``db.system=mysql``, ``db.statement``) and a metric sample; a MySQL error keeps its code and
message (``(1054, "Unknown column ...")``) so logs and traces show the real SQL failure.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Sequence
from typing import Any

import pymysql
from opentelemetry import trace

from . import runtime


#: client errors of a connection the server already closed: 2006 gone away, 2013 lost, 2014 out of sync
STALE = (2006, 2013, 2014)


class Database:
    def __init__(self, service: str, env: dict[str, str] | None = None) -> None:
        env = dict(os.environ if env is None else env)
        host, _, port = env.get("MYSQL_ADDR", "ts-mysql:3306").partition(":")
        self.service = service
        self.params = {"host": host, "port": int(port or 3306), "user": env.get("MYSQL_USER", ""),
                       "password": env.get("MYSQL_PASSWORD", ""), "database": env.get("MYSQL_DATABASE", ""),
                       "connect_timeout": 3, "read_timeout": float(env.get("MYSQL_READ_TIMEOUT_S", "10")),
                       "write_timeout": 10, "autocommit": True, "charset": "utf8mb4",
                       "cursorclass": pymysql.cursors.DictCursor}
        self.size = int(env.get("DB_POOL_SIZE", "4"))
        self.wait_s = float(env.get("DB_POOL_WAIT_S", "3"))
        self.idle: queue.LifoQueue[Any] = queue.LifoQueue()
        self.lock = threading.Lock()
        self.open = 0
        self.last_error = ""

    def _acquire(self) -> Any:
        try:
            return self.idle.get_nowait()
        except queue.Empty:
            pass
        with self.lock:
            grow = self.open < self.size
            if grow:
                self.open += 1
        if grow:
            try:
                return pymysql.connect(**self.params)
            except Exception:
                with self.lock:
                    self.open -= 1
                raise
        try:
            return self.idle.get(timeout=self.wait_s)
        except queue.Empty:
            raise runtime.HttpError(503, f"database connection pool exhausted ({self.size} in use)") from None

    def _release(self, conn: Any, broken: bool) -> None:
        if broken:
            with self.lock:
                self.open -= 1
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - already broken
                pass
        else:
            self.idle.put(conn)

    def run(self, sql: str, args: Sequence[Any] = (), *, many: bool = False) -> list[dict[str, Any]]:
        """Rows of a statement (``[]`` for writes); pymysql's errors propagate with their MySQL code."""
        started = time.perf_counter()
        with runtime.tracer().start_as_current_span(
                f"SQL {sql.split()[0].upper()} {self.params['database']}", kind=trace.SpanKind.CLIENT,
                attributes={"db.system": "mysql", "db.name": self.params["database"], "db.statement": sql[:500],
                            "peer.service": "ts-mysql"}) as span:
            for attempt in (1, 2):
                conn = self._acquire()
                broken = False
                try:
                    with conn.cursor() as cur:
                        if many:
                            cur.executemany(sql, args)
                        else:
                            cur.execute(sql, tuple(args))
                        rows = list(cur.fetchall() or [])
                    runtime.SQL_QUERIES.labels(self.service, "ok").inc()
                    return rows
                except pymysql.err.OperationalError as exc:
                    # a pooled connection the server closed (restart, wait_timeout): once more on a
                    # fresh one, as a pool's connection validation would
                    if attempt == 1 and exc.args and exc.args[0] in STALE:
                        broken = True
                        continue
                    self._fail(exc, sql, span)
                    broken = True
                    raise
                except pymysql.err.MySQLError as exc:
                    broken = isinstance(exc, pymysql.err.InterfaceError)
                    self._fail(exc, sql, span)
                    raise
                finally:
                    self._release(conn, broken)
                    runtime.SQL_LATENCY.labels(self.service).observe(time.perf_counter() - started)
            raise AssertionError("unreachable")

    def _fail(self, exc: Exception, sql: str, span: Any) -> None:
        self.last_error = str(exc)
        runtime.SQL_QUERIES.labels(self.service, "error").inc()
        span.record_exception(exc)
        span.set_status(trace.Status(trace.StatusCode.ERROR, str(exc)[:200]))
        runtime.error("sql_failed", database=self.params["database"], error=str(exc), statement=sql[:300])

    def ping(self) -> bool:
        try:
            self.run("SELECT 1")
            return True
        except Exception as exc:  # noqa: BLE001 - readiness reports any failure
            self.last_error = str(exc)
            return False
