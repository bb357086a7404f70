"""The threaded HTTP server an app's JSON-over-HTTP services run on (standard library only).

What every such server does the same way lives here: one thread per connection with keep-alive
(``HTTP/1.1``) and Nagle off (headers and body go out as two writes: no 40 ms delayed-ACK stall),
the body read by ``Content-Length``, the caller's W3C trace context attached for the request, no
access log on stderr (the app logs JSON), a client that hung up ignored. What differs between apps
stays in the app's ``handle(request) -> HttpAnswer``: routing, spans, error bodies, encoding; and in
``finished(answer, seconds)``: its metrics.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from opentelemetry import context as otel_context

from .tracing import extract


@dataclasses.dataclass(frozen=True)
class HttpRequest:
    """One request as the app's handler sees it."""

    method: str
    path: str
    query: dict[str, str]
    headers: Any  # the request's email.message.Message (case-insensitive ``get``)
    body: bytes


@dataclasses.dataclass(frozen=True)
class HttpAnswer:
    """What goes back: ``status``, the encoded ``body`` and its ``content_type``; ``route`` names the
    request in the app's metrics (the path, or the pattern that matched it)."""

    status: int
    body: bytes
    content_type: str
    route: str


Handle = Callable[[HttpRequest], HttpAnswer]
Finished = Callable[[HttpAnswer, float], None]


class ThreadedHttpServer:
    """Serves ``handle`` on ``0.0.0.0:port`` in a daemon thread; ``finished(answer, seconds)`` is
    called after each answer (also when the client hung up before it was written)."""

    def __init__(self, service: str, port: int, handle: Handle, finished: Finished | None = None) -> None:
        self.service = service

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
                return

            def _handle(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                started = time.perf_counter()
                token = otel_context.attach(extract(dict(self.headers.items())))
                answer: HttpAnswer | None = None
                try:
                    answer = handle(HttpRequest(self.command, parts.path, dict(parse_qsl(parts.query)),
                                                self.headers, raw))
                    self.send_response(answer.status)
                    self.send_header("Content-Type", answer.content_type)
                    self.send_header("Content-Length", str(len(answer.body)))
                    self.end_headers()
                    self.wfile.write(answer.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    otel_context.detach(token)
                    if finished is not None and answer is not None:
                        finished(answer, time.perf_counter() - started)

            do_GET = do_POST = do_PUT = do_DELETE = _handle  # noqa: N815 - stdlib naming

        ThreadingHTTPServer.allow_reuse_address = True
        self.httpd = ThreadingHTTPServer(("0.0.0.0", port), Handler)
        self.httpd.daemon_threads = True

    @property
    def port(self) -> int:
        """The port it listens on (the one the kernel chose when built with port 0)."""
        return int(self.httpd.server_address[1])

    def start(self) -> None:
        threading.Thread(target=self.httpd.serve_forever, name=f"http-{self.service}", daemon=True).start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
