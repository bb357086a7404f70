"""The services' runtime: Prometheus metrics, a JSON HTTP server and client, on sregym_appkit.

JSON logs, tracing and the admin port are the shared ones (:mod:`sregym_appkit.logs`,
:mod:`sregym_appkit.tracing`, :mod:`sregym_appkit.admin`), re-exported here under the names the
services use. Logs are one JSON object per line on stdout (``ts``, ``level``, ``service``, ``event``,
plus ``trace_id``/``span_id`` inside a traced request). Tracing is on only when
``OTEL_EXPORTER_OTLP_ENDPOINT`` is set. W3C trace context crosses every HTTP hop.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from typing import Any

from opentelemetry import trace
from prometheus_client import Counter, Gauge, Histogram
from sregym_appkit import logs, tracing
from sregym_appkit.admin import admin_server as AdminServer  # noqa: F401, N812 - the services' name
from sregym_appkit.httpclient import JsonPeer
from sregym_appkit.httpserver import HttpAnswer, HttpRequest, ThreadedHttpServer
from sregym_appkit.logs import error, info, log, warning  # noqa: F401 - the services' names
from sregym_appkit.tracing import shutdown_tracing  # noqa: F401

from .tokens import CURRENT_AUTHORIZATION

_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
SERVER_REQUESTS = Counter("ts_http_server_requests_total", "requests served", ["service", "route", "status"])
SERVER_LATENCY = Histogram("ts_http_server_latency_seconds", "request handling time", ["service", "route"],
                           buckets=_BUCKETS)
CLIENT_REQUESTS = Counter("ts_http_client_requests_total", "calls to peers", ["service", "peer", "status"])
CLIENT_LATENCY = Histogram("ts_http_client_latency_seconds", "call time to peers", ["service", "peer"],
                           buckets=_BUCKETS)
SQL_QUERIES = Counter("ts_sql_queries_total", "SQL statements run", ["service", "outcome"])
SQL_LATENCY = Histogram("ts_sql_latency_seconds", "SQL statement time", ["service"], buckets=_BUCKETS)
FLAG_EVALUATIONS = Counter("ts_feature_flag_evaluations_total", "feature flag evaluations",
                           ["service", "flag", "variant"])
INFO = Gauge("ts_service_info", "build information", ["service", "version"])


# ------------------------------------------------------------------------- logs and tracing
def configure_logs(service: str) -> None:
    logs.configure(service)


def setup_tracing(service: str) -> bool:
    # spans leave every 2 s (the SDK's default is 5 s) so a trace is whole soon after a booking
    return tracing.setup_tracing(service, "train-ticket", export_delay_ms=2000)


def tracer() -> trace.Tracer:
    return trace.get_tracer("sregym_app_train_ticket")


# ------------------------------------------------------------------------------------- errors
class HttpError(Exception):
    """An answer other than 200: ``status`` and a message (the JSON body says it)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


# ------------------------------------------------------------------------------------- server
Request = dict[str, Any]  # {"method", "path", "params" (regex groups), "query", "body", "authorization"}
Handler = Callable[[Request], Any]


class HttpServer(ThreadedHttpServer):
    """A JSON HTTP server over ``(method, regex) → handler(request) -> body``; 404 otherwise.

    A handler's return value is the JSON body of a 200; HttpError sets the status; any other
    exception is a 500 whose body and log line carry the exception (as a Spring controller's)."""

    def __init__(self, service: str, port: int, routes: list[tuple[str, str, Handler]], *, traced: bool = True) -> None:
        self.routes = [(m, re.compile(p + "$"), h) for m, p, h in routes]
        self.traced = traced
        super().__init__(service, port, self._answer, self._finished)

    def _answer(self, request: HttpRequest) -> HttpAnswer:
        authorization = request.headers.get("Authorization")
        carried = CURRENT_AUTHORIZATION.set(authorization)  # the user's token goes on with the calls it makes
        try:
            status, route, out = 404, "unmatched", {"status": 0, "msg": f"no route for {request.method} {request.path}"}
            for method, pattern, handler in self.routes:
                match = pattern.match(request.path)
                if method == request.method and match:
                    route = pattern.pattern.rstrip("$")
                    status, out = self._run(handler, route, {
                        "method": request.method, "path": request.path, "params": match.groupdict(),
                        "query": request.query, "raw": request.body, "authorization": authorization})
                    break
        finally:
            CURRENT_AUTHORIZATION.reset(carried)
        if isinstance(out, bytes):
            return HttpAnswer(status, out, "text/plain", route)
        return HttpAnswer(status, json.dumps(out, default=str).encode(), "application/json", route)

    def _finished(self, answer: HttpAnswer, seconds: float) -> None:
        if self.traced:
            SERVER_REQUESTS.labels(self.service, answer.route, str(answer.status)).inc()
            SERVER_LATENCY.labels(self.service, answer.route).observe(seconds)

    def _run(self, handler: Handler, route: str, request: Request) -> tuple[int, Any]:
        tracer_ = tracer() if self.traced else trace.NoOpTracer()
        with tracer_.start_as_current_span(f"{request['method']} {route}", kind=trace.SpanKind.SERVER,
                                           attributes={"http.request.method": request["method"],
                                                       "url.path": request["path"], "http.route": route}) as span:
            try:
                raw = request.pop("raw")
                request["body"] = json.loads(raw) if raw.strip() else {}
                status, out = 200, handler(request)
            except HttpError as exc:
                status, out = exc.status, {"status": 0, "msg": exc.message}
            except ValueError as exc:
                status, out = 400, {"status": 0, "msg": str(exc)}
            except Exception as exc:  # noqa: BLE001 - a crash is a 500 naming its cause, logged
                status, out = 500, {"status": 0, "msg": f"{type(exc).__name__}: {exc}"}
                span.record_exception(exc)
                error("request_failed", route=route, error=f"{type(exc).__name__}: {exc}")
            span.set_attribute("http.response.status_code", status)
            if status >= 500:
                span.set_status(trace.Status(trace.StatusCode.ERROR, str(out)[:200]))
            return status, out


class Peer(JsonPeer):
    """A JSON-over-HTTP client of one peer (``<PEER>_ADDR`` host:port), with spans and metrics; the
    user's token goes on to the services a request calls. :meth:`call` gives the peer's JSON answer, or
    raises HttpError with the peer's status (502 when it did not answer)."""

    detail_chars = 400

    def __init__(self, service: str, peer: str, addr: str, timeout_s: float = 5.0) -> None:
        super().__init__(service, peer, addr, timeout_s)

    def tracer(self) -> trace.Tracer:
        return tracer()

    def span_name(self, method: str, path: str) -> str:
        return f"{method} {self.peer}"

    def headers(self) -> dict[str, str]:
        headers = super().headers()
        authorization = CURRENT_AUTHORIZATION.get()
        if authorization:
            headers["Authorization"] = authorization
        return headers

    def refused(self, path: str, status: int, detail: str) -> Exception:
        try:
            detail = json.loads(detail).get("msg", detail)
        except (ValueError, AttributeError):
            pass
        error("peer_call_failed", peer=self.peer, path=path, status=status, error=detail)
        return HttpError(status if status < 500 else 500, f"{self.peer}: HTTP {status}: {detail}")

    def unreachable(self, path: str, exc: Exception) -> Exception:
        error("peer_call_failed", peer=self.peer, path=path, addr=self.addr, error=str(exc))
        return HttpError(502, f"{self.peer} ({self.addr}): {exc}")

    def record(self, path: str, status: int | None, error: Exception | None, seconds: float) -> None:
        CLIENT_REQUESTS.labels(self.service, self.peer, "error" if status is None else str(status)).inc()
        CLIENT_LATENCY.labels(self.service, self.peer).observe(seconds)


def peers_from_env(service: str, names: tuple[str, ...]) -> dict[str, Peer]:
    timeout = float(os.environ.get("PEER_TIMEOUT_S", "5"))
    return {name: Peer(service, name, os.environ.get(env_name(name), f"{name}:80"), timeout) for name in names}


def env_name(peer: str) -> str:
    return peer.upper().replace("-", "_") + "_ADDR"
