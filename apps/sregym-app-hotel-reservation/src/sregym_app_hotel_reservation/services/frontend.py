"""frontend: the HTTP JSON API users (and the workload generator) call.

``GET /hotels``, ``GET /recommendations``, ``GET /user``, ``POST /reservation``, with the query
parameters of DeathStarBench's frontend. Upstream gRPC failures map to 502/503/504 with a JSON body
that names the failing hop.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import grpc
from opentelemetry import context as otel_context
from opentelemetry import trace

from sregym_appkit import logs

from .. import telemetry
from ..rpc import RpcError
from . import Context

HTTP_STATUS = {
    grpc.StatusCode.INVALID_ARGUMENT: 400, grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.UNAVAILABLE: 503, grpc.StatusCode.RESOURCE_EXHAUSTED: 503,
    grpc.StatusCode.DEADLINE_EXCEEDED: 504, grpc.StatusCode.PERMISSION_DENIED: 502,
    grpc.StatusCode.INTERNAL: 502, grpc.StatusCode.UNKNOWN: 502,
}


class BadRequest(Exception):
    """A missing or malformed query parameter."""


def _param(q: dict[str, list[str]], name: str) -> str:
    values = q.get(name)
    if not values or not values[0].strip():
        raise BadRequest(f"missing query parameter {name!r}")
    return values[0].strip()


def _float(q: dict[str, list[str]], name: str) -> float:
    raw = _param(q, name)
    try:
        return float(raw)
    except ValueError as exc:
        raise BadRequest(f"{name} must be a number, got {raw!r}") from exc


def _dates(q: dict[str, list[str]]) -> tuple[str, str]:
    in_raw, out_raw = _param(q, "inDate"), _param(q, "outDate")
    try:
        in_date, out_date = dt.date.fromisoformat(in_raw), dt.date.fromisoformat(out_raw)
    except ValueError as exc:
        raise BadRequest("inDate and outDate must be YYYY-MM-DD") from exc
    if out_date <= in_date:
        raise BadRequest("outDate must be after inDate")
    return in_raw, out_raw


class Frontend:
    """Request handling, independent of the HTTP plumbing so it is easy to read."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.routes: dict[tuple[str, str], Callable[[dict[str, list[str]]], tuple[int, Any]]] = {
            ("GET", "/hotels"): self.hotels,
            ("GET", "/recommendations"): self.recommendations,
            ("GET", "/user"): self.user,
            ("POST", "/reservation"): self.reservation,
        }

    def _geojson(self, ids: list[str]) -> dict[str, Any]:
        if not ids:
            return {"type": "FeatureCollection", "features": []}
        profiles = self.ctx.peer("profile").call("GetProfiles", {"hotelIds": ids, "locale": "en"})
        features = [{
            "type": "Feature", "id": h["id"],
            "properties": {"name": h["name"], "phone_number": h["phoneNumber"]},
            "geometry": {"type": "Point", "coordinates": [h["address"]["lon"], h["address"]["lat"]]},
        } for h in profiles.get("hotels", [])]
        return {"type": "FeatureCollection", "features": features}

    def hotels(self, q: dict[str, list[str]]) -> tuple[int, Any]:
        in_date, out_date = _dates(q)
        lat, lon = _float(q, "lat"), _float(q, "lon")
        found = self.ctx.peer("search").call("Nearby", {"lat": lat, "lon": lon, "inDate": in_date,
                                                        "outDate": out_date})
        ids = found.get("hotelIds", [])
        if ids:
            free = self.ctx.peer("reservation").call("CheckAvailability", {
                "customerName": "", "hotelIds": ids, "inDate": in_date, "outDate": out_date, "roomNumber": 1})
            ids = free.get("hotelIds", [])
        return 200, self._geojson(ids)

    def recommendations(self, q: dict[str, list[str]]) -> tuple[int, Any]:
        require = _param(q, "require")
        if require not in ("dis", "rate", "price"):
            raise BadRequest("require must be dis, rate or price")
        found = self.ctx.peer("recommendation").call(
            "GetRecommendations", {"require": require, "lat": _float(q, "lat"), "lon": _float(q, "lon")})
        return 200, self._geojson(found.get("hotelIds", []))

    def _login(self, q: dict[str, list[str]]) -> bool:
        reply = self.ctx.peer("user").call("CheckUser", {"username": _param(q, "username"),
                                                         "password": _param(q, "password")})
        return bool(reply.get("correct"))

    def user(self, q: dict[str, list[str]]) -> tuple[int, Any]:
        if self._login(q):
            return 200, {"message": "Login successfully!"}
        return 401, {"message": "Login failed: wrong username or password"}

    def reservation(self, q: dict[str, list[str]]) -> tuple[int, Any]:
        in_date, out_date = _dates(q)
        hotel_id, customer = _param(q, "hotelId"), _param(q, "customerName")
        try:
            rooms = int(q.get("number", ["1"])[0])
        except ValueError as exc:
            raise BadRequest("number must be an integer") from exc
        if not self._login(q):
            return 401, {"message": "Reservation failed: wrong username or password"}
        reply = self.ctx.peer("reservation").call("MakeReservation", {
            "customerName": customer, "hotelIds": [hotel_id], "inDate": in_date, "outDate": out_date,
            "roomNumber": rooms})
        if reply.get("hotelIds"):
            return 200, {"message": "Reserve successfully!"}
        return 200, {"message": "Failed. Already reserved."}

    def handle(self, method: str, target: str, headers: dict[str, str]) -> tuple[int, Any, str]:
        parts = urlsplit(target)
        route = self.routes.get((method, parts.path))
        endpoint = parts.path if route else "other"
        start = time.perf_counter()
        token = otel_context.attach(telemetry.extract(headers))
        try:
            with telemetry.tracer().start_as_current_span(
                f"HTTP {method} {endpoint}", kind=trace.SpanKind.SERVER,
                attributes={"http.method": method, "http.route": endpoint, "http.target": target[:200]},
            ) as span:
                if route is None:
                    known = any(path == parts.path for _, path in self.routes)
                    code, body = (405, {"error": "method not allowed"}) if known else (404, {"error": "not found"})
                else:
                    try:
                        code, body = route(parse_qs(parts.query))
                    except BadRequest as exc:
                        code, body = 400, {"error": str(exc)}
                    except RpcError as exc:
                        code = HTTP_STATUS.get(exc.code, 502)
                        body = {"error": exc.message}
                        span.set_status(trace.Status(trace.StatusCode.ERROR, exc.message))
                    except Exception as exc:  # noqa: BLE001 - a bug must answer 500, not kill the thread
                        code, body = 500, {"error": f"{type(exc).__name__}: {exc}"}
                        span.record_exception(exc)
                        logs.error("request_crashed", endpoint=endpoint, error=f"{type(exc).__name__}: {exc}")
                span.set_attribute("http.status_code", code)
                if code >= 500:
                    span.set_status(trace.Status(trace.StatusCode.ERROR, str(body.get("error", ""))))
        finally:
            otel_context.detach(token)
            service = self.ctx.cfg.service
            telemetry.HTTP_REQUESTS.labels(service, endpoint, str(code)).inc()
            telemetry.HTTP_LATENCY.labels(service, endpoint).observe(time.perf_counter() - start)
        return code, body, endpoint


class FrontendServer:
    """A threaded HTTP/1.1 server around :class:`Frontend`."""

    def __init__(self, ctx: Context) -> None:
        app = Frontend(ctx)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return  # request logging is the metrics' job; errors are logged by the handlers

            def _serve(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(min(length, 1 << 20))
                code, body, _ = app.handle(method, self.path, {k.lower(): v for k, v in self.headers.items()})
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                self._serve("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._serve("POST")

        ThreadingHTTPServer.allow_reuse_address = True
        self.httpd = ThreadingHTTPServer((ctx.cfg.host, ctx.cfg.port), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="frontend", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self, grace: float) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def handlers(ctx: Context) -> dict[str, Any]:
    return {}  # the frontend speaks HTTP, not gRPC
