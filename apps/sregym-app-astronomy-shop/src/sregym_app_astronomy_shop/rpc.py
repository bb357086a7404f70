"""The two wire protocols between services: gRPC with a JSON codec, and JSON over HTTP.

gRPC (ad, cart, checkout, currency, payment, product-catalog, recommendation) is real gRPC over
HTTP/2 through grpcio's generic handlers, methods ``/oteldemo.<Service>/<Method>``, JSON bodies (no
protoc step), plus the standard ``grpc.health.v1`` service. HTTP services (frontend, email, quote,
shipping, image-provider, flagd) use the standard library's threading server. Both sides record
metrics and spans and propagate W3C trace context.
"""

from __future__ import annotations

import time
import urllib.error
from collections.abc import Callable, Mapping
from concurrent import futures
from typing import Any

import grpc
from opentelemetry import trace
from sregym_appkit import logs
from sregym_appkit.admin import admin_server  # noqa: F401 - the services' name for it
from sregym_appkit.httpclient import JsonPeer
from sregym_appkit.httpserver import HttpAnswer, HttpRequest, ThreadedHttpServer
from sregym_appkit.jsongrpc import JsonGrpcServer, RpcError
from sregym_appkit.jsongrpc import decode as _decode
from sregym_appkit.jsongrpc import encode as _encode

from . import telemetry

Handler = Callable[[dict[str, Any]], dict[str, Any]]
CHANNEL_OPTIONS = [("grpc.initial_reconnect_backoff_ms", 200), ("grpc.min_reconnect_backoff_ms", 200),
                   ("grpc.max_reconnect_backoff_ms", 2000), ("grpc.enable_retries", 0)]


def grpc_service_name(service: str) -> str:
    return "oteldemo." + "".join(p.capitalize() for p in service.split("-")) + "Service"


class GrpcServer(JsonGrpcServer):
    """One service's JSON methods plus grpc.health.v1 (an RpcError a handler raises is logged)."""

    log_rpc_errors = True

    def __init__(self, service: str, port: int, handlers: Mapping[str, Handler], workers: int = 16) -> None:
        self.service = service
        super().__init__(grpc_service_name(service), handlers, f"0.0.0.0:{port}",
                         executor=futures.ThreadPoolExecutor(max_workers=workers))

    def listen_error(self, address: str) -> str:
        return f"cannot listen on port {address.rpartition(':')[2]}"

    def tracer(self) -> trace.Tracer:
        return telemetry.tracer()

    def record(self, method: str, code: str, seconds: float) -> None:
        telemetry.RPC_SERVER.labels(self.service, method, code).inc()
        telemetry.RPC_SERVER_LATENCY.labels(self.service, method).observe(seconds)

    def set_serving(self, serving: bool) -> None:
        from grpc_health.v1 import health_pb2

        self.health.set("", health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING)

    def stop(self) -> None:
        self.server.stop(2).wait(3)


class GrpcPeer:
    """A client of one gRPC peer: per-call timeout, metrics, client spans, trace propagation."""

    def __init__(self, service: str, peer: str, addr: str, timeout_s: float = 3.0) -> None:
        self.service, self.peer, self.addr, self.timeout_s = service, peer, addr, timeout_s
        self.channel = grpc.insecure_channel(addr, options=CHANNEL_OPTIONS)
        self._stubs: dict[str, Any] = {}

    def call(self, method: str, request: Mapping[str, Any] | None = None) -> dict[str, Any]:
        path = grpc_service_name(self.peer)
        stub = self._stubs.get(method)
        if stub is None:
            stub = self._stubs[method] = self.channel.unary_unary(f"/{path}/{method}", request_serializer=_encode,
                                                                  response_deserializer=_decode)
        start = time.perf_counter()
        with telemetry.tracer().start_as_current_span(
                f"{path}/{method}", kind=trace.SpanKind.CLIENT,
                attributes={"rpc.system": "grpc", "rpc.service": path, "rpc.method": method,
                            "net.peer.name": self.addr, "peer.service": self.peer}) as span:
            try:
                reply = stub(dict(request or {}), timeout=self.timeout_s, metadata=list(telemetry.carrier().items()))
                telemetry.RPC_CLIENT.labels(self.service, self.peer, method, "OK").inc()
                return reply
            except grpc.RpcError as exc:
                code, details = exc.code(), exc.details() or ""
                telemetry.RPC_CLIENT.labels(self.service, self.peer, method, code.name).inc()
                span.set_status(trace.Status(trace.StatusCode.ERROR, f"{code.name}: {details}"))
                span.set_attribute("rpc.grpc.status_code", code.value[0])
                logs.error("rpc_failed", peer=self.peer, addr=self.addr, method=method, error=f"{code.name}: {details}")
                raise RpcError(code, f"{self.peer} ({self.addr}) {method}: {code.name}: {details}") from None
            finally:
                telemetry.RPC_CLIENT_LATENCY.labels(self.service, self.peer, method).observe(time.perf_counter() - start)

    def close(self) -> None:
        self.channel.close()


_HTTP_CODES = {grpc.StatusCode.NOT_FOUND: 404, grpc.StatusCode.INVALID_ARGUMENT: 400,
               grpc.StatusCode.UNAVAILABLE: 503, grpc.StatusCode.DEADLINE_EXCEEDED: 504,
               grpc.StatusCode.FAILED_PRECONDITION: 400, grpc.StatusCode.RESOURCE_EXHAUSTED: 429}


class HttpPeer(JsonPeer):
    """A JSON-over-HTTP client of one peer; a failed call raises RpcError (UNAVAILABLE, or
    INVALID_ARGUMENT for a 4xx answer)."""

    def __init__(self, service: str, peer: str, addr: str, timeout_s: float = 3.0) -> None:
        super().__init__(service, peer, addr, timeout_s)

    def tracer(self) -> trace.Tracer:
        return telemetry.tracer()

    def encode(self, body: Any) -> bytes:
        return _encode(body)

    def decode(self, data: bytes) -> Any:
        return _decode(data)

    def refused(self, path: str, status: int, detail: str) -> Exception:
        logs.error("http_call_failed", peer=self.peer, addr=self.addr, path=path, status=status, error=detail)
        return RpcError(grpc.StatusCode.UNAVAILABLE if status >= 500 else grpc.StatusCode.INVALID_ARGUMENT,
                        f"{self.peer} ({self.addr}) {path}: HTTP {status}: {detail}")

    def unreachable(self, path: str, exc: Exception) -> Exception:
        logs.error("http_call_failed", peer=self.peer, addr=self.addr, path=path, error=str(exc))
        return RpcError(grpc.StatusCode.UNAVAILABLE, f"{self.peer} ({self.addr}) {path}: {exc}")

    def record(self, path: str, status: int | None, error: Exception | None, seconds: float) -> None:
        refused = isinstance(error, urllib.error.HTTPError)
        code = "OK" if error is None else str(status) if refused else type(error).__name__
        telemetry.RPC_CLIENT.labels(self.service, self.peer, path.split("?")[0], code).inc()
        telemetry.RPC_CLIENT_LATENCY.labels(self.service, self.peer, path.split("?")[0]).observe(seconds)


#: ``route(method, path, query, body) -> (status, body)`` or ``(status, bytes, content_type)``
Route = Callable[[str, str, dict[str, str], Any], tuple[Any, ...]]


class HttpServer(ThreadedHttpServer):
    """A JSON HTTP server: ``route(method, path, query, body) -> (status, body)``; bytes bodies go out raw."""

    def __init__(self, service: str, port: int, route: Route, *, content_type: str = "application/json",
                 traced: bool = True) -> None:
        self.route, self.traced, self.content_type = route, traced, content_type
        super().__init__(service, port, self._answer, self._finished)

    def _answer(self, request: HttpRequest) -> HttpAnswer:
        tracer = telemetry.tracer() if self.traced else trace.NoOpTracer()
        ctype = "application/octet-stream"
        with tracer.start_as_current_span(
                f"{request.method} {request.path}", kind=trace.SpanKind.SERVER,
                attributes={"http.request.method": request.method, "url.path": request.path}) as span:
            try:
                body = _decode(request.body) if request.body else None
                answer = self.route(request.method, request.path, request.query, body)
                status, out = answer[0], answer[1]
                ctype = answer[2] if len(answer) > 2 else ctype
            except RpcError as exc:
                status, out = _HTTP_CODES.get(exc.code, 500), {"error": exc.message}
            except ValueError as exc:
                status, out = 400, {"error": str(exc)}
            except Exception as exc:  # noqa: BLE001 - a crash is a 500 with its cause, logged
                status, out = 500, {"error": f"{type(exc).__name__}: {exc}"}
                span.record_exception(exc)
                logs.error("handler_crashed", path=request.path, error=f"{type(exc).__name__}: {exc}")
            span.set_attribute("http.response.status_code", status)
            if status >= 500:
                span.set_status(trace.Status(trace.StatusCode.ERROR, str(out)[:200]))
        if not isinstance(out, bytes):
            out, ctype = _encode(out), self.content_type
        return HttpAnswer(status, out, ctype, request.path)

    def _finished(self, answer: HttpAnswer, seconds: float) -> None:
        if self.traced:  # probes and scrapes are not traffic
            telemetry.RPC_SERVER.labels(self.service, answer.route, str(answer.status)).inc()
            telemetry.RPC_SERVER_LATENCY.labels(self.service, answer.route).observe(seconds)
