"""JSON over HTTP for both services: a route table served on ``sregym_appkit.httpserver``, and the
client the frontend calls the backend with.

What makes a failure visible lives here: every request is a span (a 5xx is a span error), a counter
and a latency sample; a failed call to a peer is a ``peer_call_failed`` log line naming the peer,
its address and the error, so ``kubectl logs`` alone points at the broken hop.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

from opentelemetry import trace
from sregym_appkit import logs
from sregym_appkit.httpserver import HttpAnswer, HttpRequest, ThreadedHttpServer
from sregym_appkit.tracing import carrier

from .telemetry import HTTP_LATENCY, HTTP_REQUESTS, PEER_CALLS, tracer


class Failure(Exception):
    """An answer other than 200: its ``status`` and what went wrong (the JSON body's ``error``)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


#: a handler gets the request and the route's ``{name}`` parts; it returns the JSON body (a str is HTML)
Handler = Callable[[HttpRequest, dict[str, str]], Any]


def json_server(service: str, port: int, routes: Mapping[str, Handler]) -> ThreadedHttpServer:
    """Serve ``routes`` (``"GET /items/{id}"`` -> handler) on ``port``; 404 for anything else."""
    table = [(key.split(" ", 1)[0], re.compile(re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", key.split(" ", 1)[1]) + "$"),
              key.split(" ", 1)[1], handler) for key, handler in routes.items()]

    def handle(request: HttpRequest) -> HttpAnswer:
        for method, pattern, route, handler in table:
            match = pattern.match(request.path)
            if match and method == request.method:
                return _answer(route, handler, request, match.groupdict())
        return HttpAnswer(404, b'{"error": "not found"}', "application/json", "unmatched")

    def finished(answer: HttpAnswer, seconds: float) -> None:
        HTTP_REQUESTS.labels(service, answer.route, str(answer.status)).inc()
        HTTP_LATENCY.labels(service, answer.route).observe(seconds)

    return ThreadedHttpServer(service, port, handle, finished)


def _answer(route: str, handler: Handler, request: HttpRequest, parts: dict[str, str]) -> HttpAnswer:
    with tracer().start_as_current_span(route, kind=trace.SpanKind.SERVER, attributes={"http.route": route}) as span:
        try:
            status, body = 200, handler(request, parts)
        except Failure as exc:
            status, body = exc.status, {"error": str(exc)}
        except Exception as exc:  # noqa: BLE001 - a crash is a 500 naming its cause, logged and traced
            status, body = 500, {"error": f"{type(exc).__name__}: {exc}"}
            span.record_exception(exc)
            logs.error("handler_crashed", route=route, error=body["error"])
        span.set_attribute("http.response.status_code", status)
        if status >= 500:
            span.set_status(trace.Status(trace.StatusCode.ERROR, str(body)[:200]))
    if isinstance(body, str):
        return HttpAnswer(status, body.encode(), "text/html; charset=utf-8", route)
    return HttpAnswer(status, json.dumps(body).encode(), "application/json", route)


class Peer:
    """The JSON API of another service at ``addr`` (host:port), called with the trace context."""

    def __init__(self, service: str, name: str, addr: str, timeout_s: float = 3.0) -> None:
        self.service, self.name, self.addr, self.timeout_s = service, name, addr, timeout_s

    def get(self, path: str) -> Any:
        """The peer's answer to ``GET path``; a :class:`Failure` (502) when it gives none or an error."""
        code = "none"
        with tracer().start_as_current_span(f"GET {self.name}", kind=trace.SpanKind.CLIENT,
                                            attributes={"peer.service": self.name}):
            started = time.perf_counter()
            try:
                request = urllib.request.Request(f"http://{self.addr}{path}", headers=carrier())
                with urllib.request.urlopen(request, timeout=self.timeout_s) as resp:
                    code = str(resp.status)
                    return json.loads(resp.read())
            except urllib.error.HTTPError as exc:
                code = str(exc.code)
                error = f"HTTP {exc.code}"
            except (OSError, ValueError) as exc:
                error = f"{type(exc).__name__}: {exc}"
            finally:
                PEER_CALLS.labels(self.service, self.name, code).inc()
            logs.error("peer_call_failed", peer=self.name, addr=self.addr, path=path, error=error,
                       seconds=round(time.perf_counter() - started, 3))
            raise Failure(502, f"{self.name} ({self.addr}): {error}")
