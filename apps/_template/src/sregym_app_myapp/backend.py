"""The backend: the items, kept in PostgreSQL, as JSON (``GET /items``, ``GET /items/{id}``).

It seeds the database when it lacks the data (a fresh volume), then only reads: the datastore's
files stay as the reset snapshot saw them. It is ready only while the database answers and holds
the data, so a broken datastore shows as this service leaving rotation (and in its logs).
"""

from __future__ import annotations

import os
import threading
from typing import Any

import psycopg
from sregym_appkit import logs

from .data import DATA_VERSION, items
from .telemetry import DB_QUERIES
from .topology import BACKEND, DATASTORE, DATASTORE_DB, DATASTORE_PORT
from .web import Failure


class Store:
    """One connection to the database (reopened after a failure), shared by the request threads."""

    def __init__(self, conninfo: str, addr: str) -> None:
        self.conninfo, self.addr = conninfo, addr
        self.lock = threading.Lock()
        self.conn: psycopg.Connection | None = None
        self.error = "not connected yet"

    @classmethod
    def from_env(cls) -> Store:
        host = os.environ.get("DB_HOST", DATASTORE)
        port = os.environ.get("DB_PORT", str(DATASTORE_PORT))
        conninfo = psycopg.conninfo.make_conninfo(
            host=host, port=port, dbname=os.environ.get("DB_NAME", DATASTORE_DB), user=os.environ.get("DB_USER", ""),
            password=os.environ.get("DB_PASSWORD", ""), connect_timeout=2)
        return cls(conninfo, f"{host}:{port}")

    def query(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """The rows of ``sql``; a :class:`Failure` (503) naming the database when it does not answer."""
        with self.lock:
            try:
                if self.conn is None or self.conn.closed:
                    self.conn = psycopg.connect(self.conninfo, autocommit=True)
                cursor = self.conn.execute(sql, args)
                rows = cursor.fetchall() if cursor.description else []  # a statement without rows: none
            except psycopg.Error as exc:
                if self.conn is not None:
                    self.conn.close()
                self.conn, self.error = None, str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                DB_QUERIES.labels(BACKEND, "error").inc()
                logs.error("db_query_failed", peer=DATASTORE, addr=self.addr, error=self.error)
                raise Failure(503, f"database {self.addr}: {self.error}") from None
        DB_QUERIES.labels(BACKEND, "ok").inc()
        self.error = ""
        return rows

    def seed_if_missing(self) -> bool:
        """Create the table and insert the data unless this version is there already; whether it seeded."""
        self.query("CREATE TABLE IF NOT EXISTS meta (key text PRIMARY KEY, value text NOT NULL)")
        if self.query("SELECT value FROM meta WHERE key = 'data_version'") == [(DATA_VERSION,)]:
            return False
        self.query("CREATE TABLE IF NOT EXISTS items (id integer PRIMARY KEY, name text NOT NULL, "
                   "price_cents integer NOT NULL)")
        for item in items():
            self.query("INSERT INTO items VALUES (%s, %s, %s) ON CONFLICT (id) DO UPDATE "
                       "SET name = EXCLUDED.name, price_cents = EXCLUDED.price_cents",
                       (item["id"], item["name"], item["price_cents"]))
        self.query("INSERT INTO meta VALUES ('data_version', %s) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                   (DATA_VERSION,))
        logs.info("data_seeded", version=DATA_VERSION, items=len(items()))
        return True

    def ready(self) -> tuple[bool, dict[str, Any]]:
        try:
            seeded = self.query("SELECT value FROM meta WHERE key = 'data_version'") == [(DATA_VERSION,)]
        except Failure:
            return False, {"database": self.addr, "error": self.error}
        return seeded, {"database": self.addr, **({} if seeded else {"error": "the data is not seeded"})}


def routes(store: Store) -> dict[str, Any]:
    def list_items(_request: Any, _parts: dict[str, str]) -> Any:
        rows = store.query("SELECT id, name, price_cents FROM items ORDER BY id")
        return {"items": [{"id": i, "name": n, "price_cents": p} for i, n, p in rows]}

    def one_item(_request: Any, parts: dict[str, str]) -> Any:
        if not parts["id"].isdigit():
            raise Failure(400, f"item id must be a number, not {parts['id']!r}")
        rows = store.query("SELECT id, name, price_cents FROM items WHERE id = %s", (int(parts["id"]),))
        if not rows:
            raise Failure(404, f"no item {parts['id']}")
        i, n, p = rows[0]
        return {"id": i, "name": n, "price_cents": p}

    return {"GET /items": list_items, "GET /items/{id}": one_item}


def keep_seeded(store: Store, stop: threading.Event) -> None:
    """Seed as soon as the database answers (it may start after this service), then every 5 s check
    it still holds the data (a re-provisioned volume is seeded again)."""
    while not stop.is_set():
        try:
            store.seed_if_missing()
        except Failure:
            pass  # logged by query; readiness says it
        stop.wait(5)
