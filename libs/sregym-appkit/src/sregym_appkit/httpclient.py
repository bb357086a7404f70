"""A JSON-over-HTTP client of one peer service, as the apps' services call each other.

:class:`JsonPeer` does what every app's client does alike: the URL of the peer's ``host:port``, a
client span (``http.request.method``, ``url.full``, ``peer.service``, and the answer's
``http.response.status_code``) whose W3C trace context goes out in the headers, the JSON body, the
per-call timeout, and the three outcomes told apart: an answer, a refusal (an HTTP error status, with
the start of its body) and no answer (connection, timeout or a body that is not JSON). A subclass says
what is its own: the app's tracer, the error a refusal or no answer raises (after the app's log
line), its metrics, and, when it differs, the span's name, more headers and the JSON codec.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

from opentelemetry import trace

from .tracing import carrier


class JsonPeer:
    """The client of one peer (``addr``: host:port) for the service ``service``; :meth:`call`."""

    #: how much of a refusing peer's body is kept for the error (characters)
    detail_chars = 300

    def __init__(self, service: str, peer: str, addr: str, timeout_s: float) -> None:
        self.service, self.peer, self.addr, self.timeout_s = service, peer, addr, timeout_s

    def tracer(self) -> trace.Tracer:
        """The app's tracer (the client spans are the app's)."""
        raise NotImplementedError

    def refused(self, path: str, status: int, detail: str) -> Exception:
        """The error to raise when the peer answered ``status`` >= 400 (``detail``: its body's start)."""
        raise NotImplementedError

    def unreachable(self, path: str, exc: Exception) -> Exception:
        """The error to raise when the peer gave no usable answer (``exc``: OSError or ValueError)."""
        raise NotImplementedError

    def record(self, path: str, status: int | None, error: Exception | None, seconds: float) -> None:
        """Count one call: the peer's status (None when it did not answer), the error it ended in."""

    def span_name(self, method: str, path: str) -> str:
        return f"{method} {path.split('?')[0]}"

    def headers(self) -> dict[str, str]:
        """The request's headers: JSON, and the current trace context."""
        return {"Content-Type": "application/json", **carrier()}

    def encode(self, body: Any) -> bytes:
        return json.dumps(body).encode()

    def decode(self, data: bytes) -> Any:
        return json.loads(data or b"null")

    def call(self, method: str, path: str, body: Any = None) -> Any:
        """The peer's JSON answer to ``method path`` (``body`` sent as JSON unless None); the error of
        :meth:`refused` or :meth:`unreachable` when there is none."""
        url = f"http://{self.addr}{path}"
        started = time.perf_counter()
        status: int | None = None
        error: Exception | None = None
        with self.tracer().start_as_current_span(
                self.span_name(method, path), kind=trace.SpanKind.CLIENT,
                attributes={"http.request.method": method, "url.full": url, "peer.service": self.peer}) as span:
            try:
                data = None if body is None else self.encode(body)
                request = urllib.request.Request(url, data=data, method=method, headers=self.headers())
                with urllib.request.urlopen(request, timeout=self.timeout_s) as resp:
                    status = resp.status
                    span.set_attribute("http.response.status_code", resp.status)
                    return self.decode(resp.read())
            except urllib.error.HTTPError as exc:
                status, error = exc.code, exc
                detail = exc.read()[:self.detail_chars].decode(errors="replace")
                span.set_attribute("http.response.status_code", exc.code)
                span.set_status(trace.Status(trace.StatusCode.ERROR, f"HTTP {exc.code}"))
                raise self.refused(path, exc.code, detail) from None
            except (OSError, ValueError) as exc:
                error = exc
                span.set_status(trace.Status(trace.StatusCode.ERROR, str(exc)))
                raise self.unreachable(path, exc) from None
            finally:
                self.record(path, status, error, time.perf_counter() - started)
