"""memcached in front of a service's database, through pymemcache with short timeouts.

A cache failure never fails a request: the service falls back to the database (so a broken or tiny
cache shows up as database load and latency, as in production), logs the peer and cause, and counts
hits, misses and errors.
"""

from __future__ import annotations

import json
import time
from typing import Any

from opentelemetry import trace
from pymemcache.client.base import PooledClient

from sregym_appkit import logs

from . import telemetry
from .config import Cache

_LOG_EVERY_S = 5.0  # a dead cache would otherwise log on every request


class CacheClient:
    """JSON values in memcached, instrumented; every method degrades to a miss on error."""

    def __init__(self, service: str, cache: Cache) -> None:
        self.service, self.cfg = service, cache
        self.peer = f"memcached-{service}"
        timeout = cache.timeout_ms / 1000
        self.client = PooledClient((cache.host, cache.port), connect_timeout=timeout, timeout=timeout,
                                   no_delay=True, max_pool_size=8, allow_unicode_keys=False)
        self._last_error_log = 0.0

    def _error(self, op: str, exc: BaseException, span: trace.Span) -> None:
        telemetry.CACHE_ERRORS.labels(self.service, self.peer, op).inc()
        span.set_status(trace.Status(trace.StatusCode.ERROR, str(exc)))
        now = time.monotonic()
        if now - self._last_error_log > _LOG_EVERY_S:
            self._last_error_log = now
            logs.warning("cache_unavailable", peer=self.peer, addr=self.cfg.addr, op=op,
                         error=f"{type(exc).__name__}: {exc}", fallback="database")

    def get_many(self, keys: list[str]) -> dict[str, Any]:
        if not self.cfg.enabled or not keys:
            return {}
        with telemetry.tracer().start_as_current_span(
            "memcached get_many", kind=trace.SpanKind.CLIENT,
            attributes={"db.system": "memcached", "db.operation": "get_multi", "peer.service": self.peer,
                        "net.peer.name": self.cfg.host, "net.peer.port": self.cfg.port, "hotel.keys": len(keys)},
        ) as span:
            try:
                raw = self.client.get_many(keys)
            except Exception as exc:  # noqa: BLE001 - any client failure means "miss"
                self._error("get", exc, span)
                telemetry.CACHE_REQUESTS.labels(self.service, self.peer, "error").inc(len(keys))
                return {}
            found = {k: json.loads(v) for k, v in raw.items()}
            span.set_attribute("hotel.hits", len(found))
            telemetry.CACHE_REQUESTS.labels(self.service, self.peer, "hit").inc(len(found))
            telemetry.CACHE_REQUESTS.labels(self.service, self.peer, "miss").inc(len(keys) - len(found))
            return found

    def get(self, key: str) -> Any:
        return self.get_many([key]).get(key)

    def set_many(self, values: dict[str, Any]) -> None:
        if not self.cfg.enabled or not values:
            return
        with telemetry.tracer().start_as_current_span(
            "memcached set_many", kind=trace.SpanKind.CLIENT,
            attributes={"db.system": "memcached", "db.operation": "set_multi", "peer.service": self.peer},
        ) as span:
            try:
                self.client.set_many({k: json.dumps(v) for k, v in values.items()}, expire=self.cfg.ttl_s,
                                     noreply=False)
            except Exception as exc:  # noqa: BLE001
                self._error("set", exc, span)

    def delete(self, key: str) -> None:
        if not self.cfg.enabled:
            return
        with telemetry.tracer().start_as_current_span(
            "memcached delete", kind=trace.SpanKind.CLIENT,
            attributes={"db.system": "memcached", "db.operation": "delete", "peer.service": self.peer},
        ) as span:
            try:
                self.client.delete(key, noreply=False)
            except Exception as exc:  # noqa: BLE001
                self._error("delete", exc, span)

    def ping(self) -> str | None:
        try:
            self.client.version()
            return None
        except Exception as exc:  # noqa: BLE001
            return f"{type(exc).__name__}: {exc}"

    def close(self) -> None:
        try:
            self.client.close()
        except Exception:  # noqa: BLE001
            pass
