"""Datastore clients: PostgreSQL document collections, Redis, memcached.

Where DeathStarBench keeps MongoDB collections, each collection here is a PostgreSQL table
``(id <key> PRIMARY KEY, doc jsonb)``: the service reads and writes whole documents by key, as it
would with ``find_one``/``insert_one``/``update_one``. Every failure becomes a
:class:`StoreError` naming the store, its address and the cause, which the services turn into the
DeathStarBench error codes (``SE_MONGODB_ERROR`` → here ``SE_DATABASE_ERROR``, ``SE_REDIS_ERROR``,
``SE_MEMCACHED_ERROR``). A cache failure is never fatal: the service falls back to its database.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from sregym_appkit import logs

from . import telemetry

#: collection -> key column type, per database
COLLECTIONS: dict[str, dict[str, str]] = {
    "user": {"users": "text"},
    "url-shorten": {"urls": "text"},
    "social-graph": {"social_graph": "bigint"},
    "post-storage": {"posts": "bigint"},
    "user-timeline": {"user_timeline": "bigint"},
    "media": {"media": "bigint"},
}


class StoreError(Exception):
    def __init__(self, store: str, addr: str, error: str) -> None:
        super().__init__(f"{store} ({addr}): {error}")
        self.store, self.addr, self.error = store, addr, error


def conninfo(addr: str, database: str, user: str, password: str, connect_timeout: int = 3) -> str:
    # sslmode=disable: the services speak to their datastores in plain text, as DeathStarBench's MongoDB
    # clients do (no tls= in their URIs); libpq's default (prefer) would quietly take TLS when offered
    host, _, port = addr.rpartition(":")
    return (f"host={host} port={port} dbname={database} user={user} password={password} "
            f"connect_timeout={connect_timeout} sslmode=disable application_name=social-network")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class DocumentStore:
    """One PostgreSQL database of document collections, through a small connection pool."""

    def __init__(self, service: str, name: str, cfg: Mapping[str, str], pool_max: int = 8) -> None:
        from psycopg_pool import ConnectionPool

        self.service, self.name, self.addr = service, f"{name}-postgres", cfg["addr"]
        # reconnect_timeout: a pool that cannot connect backs off exponentially until it gives up (300 s by
        # default), so a database back after a minute's outage was not tried again for up to a minute more;
        # giving up after 5 s lets the next request start over from a 1 s delay (MongoDB's drivers, which
        # DeathStarBench uses, look for their server again every few seconds)
        self.pool = ConnectionPool(conninfo(cfg["addr"], cfg["database"], cfg["user"], cfg["password"]),
                                   min_size=0, max_size=pool_max, timeout=3.0, open=False, reconnect_timeout=5.0,
                                   kwargs={"autocommit": True})

    def open(self) -> None:
        self.pool.open(wait=False)

    def close(self) -> None:
        self.pool.close()

    @contextmanager
    def _cursor(self) -> Iterator[Any]:
        import psycopg
        import psycopg_pool

        started = time.perf_counter()
        try:
            with self.pool.connection() as conn, conn.cursor() as cur:
                yield cur
            telemetry.STORE_OPS.labels(self.service, self.name, "ok").inc()
        except (psycopg.Error, psycopg_pool.PoolTimeout, OSError) as exc:
            telemetry.STORE_OPS.labels(self.service, self.name, "error").inc()
            logs.error("database_error", peer=self.name, addr=self.addr, error=_first_line(exc))
            raise StoreError(self.name, self.addr, _first_line(exc)) from exc
        finally:
            telemetry.STORE_LATENCY.labels(self.service, self.name).observe(time.perf_counter() - started)

    def find(self, collection: str, key: Any) -> dict[str, Any] | None:
        with telemetry.tracer().start_as_current_span(f"postgres find {collection}",
                                                      attributes={"db.system": "postgresql", "db.name": self.name}):
            with self._cursor() as cur:
                cur.execute(f"SELECT doc FROM {collection} WHERE id = %s", (key,))
                row = cur.fetchone()
        return row[0] if row else None

    def find_many(self, collection: str, keys: list[Any]) -> dict[Any, dict[str, Any]]:
        with telemetry.tracer().start_as_current_span(f"postgres find_many {collection}",
                                                      attributes={"db.system": "postgresql", "db.name": self.name}):
            with self._cursor() as cur:
                cur.execute(f"SELECT id, doc FROM {collection} WHERE id = ANY(%s)", (keys,))
                return {row[0]: row[1] for row in cur.fetchall()}

    def insert(self, collection: str, key: Any, doc: Mapping[str, Any]) -> None:
        with telemetry.tracer().start_as_current_span(f"postgres insert {collection}",
                                                      attributes={"db.system": "postgresql", "db.name": self.name}):
            with self._cursor() as cur:
                cur.execute(f"INSERT INTO {collection} (id, doc) VALUES (%s, %s::jsonb) "
                            "ON CONFLICT (id) DO UPDATE SET doc = EXCLUDED.doc", (key, json.dumps(doc)))

    def push(self, collection: str, key: Any, array: str, item: Mapping[str, Any]) -> None:
        """``update_one({_id: key}, {$push: {array: item}}, upsert=True)``."""
        with telemetry.tracer().start_as_current_span(f"postgres push {collection}",
                                                      attributes={"db.system": "postgresql", "db.name": self.name}):
            with self._cursor() as cur:
                cur.execute(
                    f"INSERT INTO {collection} AS c (id, doc) VALUES (%s, jsonb_build_object(%s::text, "
                    f"jsonb_build_array(%s::jsonb))) ON CONFLICT (id) DO UPDATE SET doc = jsonb_set(c.doc, "
                    f"ARRAY[%s::text], COALESCE(c.doc->%s, '[]'::jsonb) || jsonb_build_array(%s::jsonb))",
                    (key, array, json.dumps(item), array, array, json.dumps(item)))

    def ping(self) -> str | None:
        try:
            with self._cursor() as cur:
                cur.execute("SELECT 1")
            return None
        except StoreError as exc:
            return exc.error


class Redis:
    def __init__(self, service: str, name: str, addr: str) -> None:
        import redis

        self.service, self.name, self.addr = service, f"{name}-redis", addr
        host, _, port = addr.rpartition(":")
        self.client = redis.Redis(host=host, port=int(port), socket_timeout=2, socket_connect_timeout=2,
                                  decode_responses=True)

    def run(self, op: str, *args: Any) -> Any:
        import redis

        started = time.perf_counter()
        with telemetry.tracer().start_as_current_span(f"redis {op}", attributes={"db.system": "redis",
                                                                                  "db.name": self.name}):
            try:
                value = self._zadd_many(*args) if op == "zadd_many" else getattr(self.client, op)(*args)
                telemetry.STORE_OPS.labels(self.service, self.name, "ok").inc()
                return value
            except (redis.RedisError, OSError) as exc:
                telemetry.STORE_OPS.labels(self.service, self.name, "error").inc()
                logs.error("redis_error", peer=self.name, addr=self.addr, op=op, error=_first_line(exc))
                raise StoreError(self.name, self.addr, _first_line(exc)) from exc
            finally:
                telemetry.STORE_LATENCY.labels(self.service, self.name).observe(time.perf_counter() - started)

    def _zadd_many(self, entries: Mapping[str, Mapping[str, int]]) -> list[Any]:
        """ZADD to many keys in one round trip (a home-timeline fan-out)."""
        pipe = self.client.pipeline(transaction=False)
        for key, members in entries.items():
            pipe.zadd(key, dict(members))
        return pipe.execute()

    def ping(self) -> str | None:
        try:
            self.run("ping")
            return None
        except StoreError as exc:
            return exc.error

    def close(self) -> None:
        self.client.close()


class Memcached:
    """A cache: misses and errors both return ``None`` (errors are logged and counted)."""

    def __init__(self, service: str, name: str, addr: str) -> None:
        from pymemcache.client.base import PooledClient

        self.service, self.name, self.addr = service, f"{name}-memcached", addr
        host, _, port = addr.rpartition(":")
        self.client = PooledClient((host, int(port)), connect_timeout=0.5, timeout=0.5, max_pool_size=16,
                                   no_delay=True)

    def get(self, key: str) -> Any:
        with telemetry.tracer().start_as_current_span("memcached get", attributes={"db.system": "memcached",
                                                                                    "db.name": self.name}):
            try:
                raw = self.client.get(key)
            except Exception as exc:  # noqa: BLE001 - pymemcache raises many types; a cache error is a miss
                telemetry.CACHE_REQUESTS.labels(self.service, self.name, "error").inc()
                logs.warning("cache_error", peer=self.name, addr=self.addr, op="get", error=_first_line(exc))
                return None
        telemetry.CACHE_REQUESTS.labels(self.service, self.name, "hit" if raw is not None else "miss").inc()
        return json.loads(raw) if raw is not None else None

    def set(self, key: str, value: Any, ttl: int = 600) -> None:
        try:
            self.client.set(key, json.dumps(value), expire=ttl, noreply=False)
        except Exception as exc:  # noqa: BLE001 - see get()
            telemetry.CACHE_REQUESTS.labels(self.service, self.name, "error").inc()
            logs.warning("cache_error", peer=self.name, addr=self.addr, op="set", error=_first_line(exc))

    def close(self) -> None:
        self.client.close()


def cache_key(value: Any) -> str:
    """memcached keys may not contain spaces or control characters."""
    import hashlib

    text = str(value)
    return text if text.isascii() and text.isprintable() and " " not in text and len(text) < 200 else \
        hashlib.sha256(text.encode()).hexdigest()
