"""Helpers shared by the hotel tests: an OTLP/HTTP receiver, an HTTP client, the workload generator
as a process, Prometheus text parsing and polling."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from sregym_app_hotel_reservation.localrun import free_port
from sregym_appkit.service import stop_process


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


def spans_of(body: bytes) -> list[dict[str, Any]]:
    """The spans of one OTLP/HTTP protobuf request body, flattened with their service's name."""
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    found = []
    for rs in request.resource_spans:
        resource = {a.key: _value(a.value) for a in rs.resource.attributes}
        for ss in rs.scope_spans:
            for span in ss.spans:
                found.append({
                    "service": resource.get("service.name"), "name": span.name,
                    "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(),
                    "parent_id": span.parent_span_id.hex(), "kind": span.kind,
                    "attributes": {a.key: _value(a.value) for a in span.attributes},
                })
    return found


class OtlpReceiver:
    """Collects spans posted to ``http://127.0.0.1:<port>/v1/traces``."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.spans: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.add_body(body, gzipped=self.headers.get("Content-Encoding") == "gzip")
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        self.host = host
        self.httpd = ThreadingHTTPServer((host, 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    def add_body(self, body: bytes, *, gzipped: bool = False) -> None:
        found = spans_of(gzip.decompress(body) if gzipped else body)
        with self.lock:
            self.spans.extend(found)

    def start(self) -> OtlpReceiver:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def http(url: str, method: str = "GET", body: dict[str, Any] | None = None,
         timeout: float = 10) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read()
            status = resp.status
    except urllib.error.HTTPError as exc:
        raw, status = exc.read(), exc.code
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode(errors="replace")


class Workload:
    """The workload generator as a local process."""

    def __init__(self, target: str, workdir: Path, **flags: Any) -> None:
        self.port = free_port()
        argv = [sys.executable, "-m", "sregym_app_hotel_reservation.serve", "workload", "--target", target,
                "--host", "127.0.0.1", "--port", str(self.port)]
        for key, value in flags.items():
            argv += [f"--{key.replace('_', '-')}", str(value)]
        self.log = workdir / f"workload-{self.port}.log"
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                         env={**os.environ, "PYTHONUNBUFFERED": "1"})
        deadline = time.monotonic() + 20
        while True:
            try:
                if http(self.url("/healthz"), timeout=1)[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError(f"workload generator did not start: {self.log.read_text()[-2000:]}")
            time.sleep(0.1)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def stats(self, window: float = 60) -> dict[str, Any]:
        return http(self.url(f"/stats?window={window:g}"))[1]

    def control(self, **body: Any) -> tuple[int, Any]:
        return http(self.url("/control"), "POST", body)

    def wait_finished(self, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            progress = http(self.url("/control"))[1]
            if not progress["running"] and progress["inflight"] == 0:
                return progress
            time.sleep(0.2)
        raise TimeoutError("workload run did not finish")

    def stop(self) -> None:
        stop_process(self.proc, 10)


def metric(text: str, name: str, **labels: str) -> float:
    """Sum of a Prometheus sample family filtered by labels."""
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        if all(f'{k}="{v}"' in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def eventually(check: Callable[[], Any], timeout: float = 20, interval: float = 0.2) -> Any:
    """Poll ``check`` until it returns something truthy; re-raise its last assertion at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = check()
            if result:
                return result
        except (AssertionError, OSError):
            if time.monotonic() > deadline:
                raise
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s: {check}")
        time.sleep(interval)
