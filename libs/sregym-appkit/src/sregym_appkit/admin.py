"""The admin HTTP port every service serves: ``/healthz`` (liveness), ``/readyz`` (readiness), ``/metrics``.

The app decides what readiness means (a callable returning a report with ``ready``); a common rule
is to fail readiness when the service is shutting down or its own datastore is unreachable, and to
report a broken cache or peer as ``degraded`` without leaving rotation, because the service still
answers and pulling it would only spread the outage.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

Check = Callable[[], dict[str, Any]]


class AdminServer:
    """Serves the admin endpoints in a background thread."""

    def __init__(self, host: str, port: int, readiness: Check, liveness: Callable[[], bool] = lambda: True) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out as two writes: no delayed-ACK stall

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
                return  # probes every few seconds would drown the service's own logs

            def _send(self, code: int, body: bytes, ctype: str = "application/json") -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802 - stdlib naming
                path = self.path.split("?", 1)[0]
                if path == "/healthz":
                    alive = outer.liveness()
                    self._send(200 if alive else 503, json.dumps({"status": "ok" if alive else "dead"}).encode())
                elif path == "/readyz":
                    report = outer.readiness()
                    self._send(200 if report.get("ready") else 503, json.dumps(report, default=str).encode())
                elif path == "/metrics":
                    self._send(200, generate_latest(), CONTENT_TYPE_LATEST)
                else:
                    self._send(404, b'{"error":"not found"}')

        self.readiness, self.liveness = readiness, liveness
        ThreadingHTTPServer.allow_reuse_address = True
        self.httpd = ThreadingHTTPServer((host, port), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="admin", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def admin_server(port: int, ready: Callable[[], tuple[bool, dict[str, Any]]]) -> AdminServer:
    """The admin port on every interface, for services whose readiness is ``ready() -> (ok, detail)``
    (``/readyz`` answers ``{"ready": ok, **detail}``)."""
    def readiness() -> dict[str, Any]:
        ok, detail = ready()
        return {"ready": ok, **detail}

    return AdminServer("0.0.0.0", port, readiness)
