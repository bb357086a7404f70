"""gRPC with a JSON codec: real gRPC over HTTP/2 through grpcio generic handlers, no protoc step.

Each service exposes ``/hotel.<Service>/<Method>``; requests and responses are JSON objects. The
server side adds admission control (``QUEUE_DEPTH`` concurrent RPCs via grpcio's
``maximum_concurrent_rpcs``, and a ``BACKEND_RATE_LIMIT`` token bucket whose waiters queue up), the
standard ``grpc.health.v1`` service, metrics and server spans. The client side adds per-attempt
timeouts, retries with exponential backoff and jitter, metrics, client spans and trace propagation.
"""

from __future__ import annotations

import contextvars
import ipaddress
import random
import socket
import threading
import time
from collections.abc import Callable, Mapping
from concurrent import futures
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from opentelemetry import trace
from sregym_appkit import logs
from sregym_appkit.jsongrpc import SERVER_OPTIONS, JsonGrpcServer, RpcError  # noqa: F401 - SERVER_OPTIONS: the servers' options
from sregym_appkit.jsongrpc import decode as _decode
from sregym_appkit.jsongrpc import encode as _encode

from . import telemetry
from .config import Config, Rpc

Handler = Callable[[dict[str, Any]], dict[str, Any]]
RETRYABLE = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.RESOURCE_EXHAUSTED}
CHANNEL_OPTIONS = [
    # Reconnect quickly once a broken dependency is fixed (grpc's default backoff grows to 120 s).
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.min_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 2000),
    ("grpc.enable_retries", 0),  # retries are ours, configured by RPC_RETRIES
    ("grpc.keepalive_time_ms", 30000),
]

# The caller's deadline (time.monotonic() value) for the request being served: outgoing calls never
# wait past it, as gRPC deadline propagation does in Go and Java services.
_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("hotel_rpc_deadline", default=None)


def service_path(service: str) -> str:
    return f"hotel.{service.capitalize()}"


class TokenBucket:
    """Admits ``rate`` requests per second; callers wait their turn (the queue grows under overload)."""

    def __init__(self, rate: float, burst: float | None = None) -> None:
        self.rate = rate
        self.capacity = burst if burst is not None else max(1.0, rate / 10)
        self.tokens = self.capacity
        self.stamp = time.monotonic()
        self.lock = threading.Lock()

    def acquire(self) -> float:
        """Take one token, sleeping until it is available; return the seconds waited."""
        with self.lock:
            now = time.monotonic()
            self.tokens = min(self.capacity, self.tokens + (now - self.stamp) * self.rate)
            self.stamp = now
            self.tokens -= 1
            wait = 0.0 if self.tokens >= 0 else -self.tokens / self.rate
        if wait:
            time.sleep(wait)
        return wait


class RpcServer(JsonGrpcServer):
    """A gRPC server for one service's JSON methods plus the health service: at most ``queue_depth``
    calls at once, a token bucket's rate limit, the caller's deadline kept for the calls it makes."""

    def __init__(self, cfg: Config, handlers: Mapping[str, Handler]) -> None:
        self.cfg = cfg
        self.bucket = TokenBucket(cfg.rpc.rate_limit) if cfg.rpc.rate_limit > 0 else None
        self._inflight = 0
        self._lock = threading.Lock()
        super().__init__(service_path(cfg.service), handlers, f"{cfg.host}:{cfg.port}",
                         executor=futures.ThreadPoolExecutor(max_workers=cfg.rpc.workers, thread_name_prefix="rpc"),
                         maximum_concurrent_rpcs=cfg.rpc.queue_depth)

    def tracer(self) -> trace.Tracer:
        return telemetry.tracer()

    def enter(self, context: grpc.ServicerContext) -> Any:
        remaining = context.time_remaining()
        deadline_token = _deadline.set(time.monotonic() + remaining if remaining is not None else None)
        self._count_inflight(+1)
        return deadline_token

    def leave(self, entered: Any) -> None:
        _deadline.reset(entered)
        self._count_inflight(-1)

    def _count_inflight(self, change: int) -> None:
        with self._lock:
            self._inflight += change
            telemetry.RPC_SERVER_INFLIGHT.labels(self.cfg.service).set(self._inflight)

    def admit(self, span: Any) -> None:
        if self.bucket is not None:
            waited = self.bucket.acquire()
            if waited > 0.001:
                span.set_attribute("hotel.ratelimit_wait_ms", round(waited * 1000, 1))

    def record(self, method: str, code: str, seconds: float) -> None:
        telemetry.RPC_SERVER_REQUESTS.labels(self.cfg.service, method, code).inc()
        telemetry.RPC_SERVER_LATENCY.labels(self.cfg.service, method).observe(seconds)

    def start(self) -> None:
        super().start()
        self.health.set(self.path, health_pb2.HealthCheckResponse.SERVING)

    def stop(self, grace: float) -> None:
        self.health.enter_graceful_shutdown()
        self.server.stop(grace).wait(grace + 1)


class Peer:
    """A client for one peer service, with timeout, retries and exponential backoff."""

    def __init__(self, service: str, peer: str, addr: str, rpc: Rpc) -> None:
        self.service, self.peer, self.addr, self.rpc = service, peer, addr, rpc
        self._lock = threading.Lock()
        self._retired: list[grpc.Channel] = []
        self.target = self._resolve()
        self._connect(self.target)

    def _resolve(self) -> str:
        """A grpc target for ``addr``: the address Python's getaddrinfo gives (so the process uses one
        resolver for everything: cluster DNS, or the embedded cluster's hook), else ``addr`` itself and
        grpc's own (native) resolver, whose error then names the failure."""
        host, _, port = self.addr.rpartition(":")
        try:
            ipaddress.ip_address(host)
            return self.addr
        except ValueError:
            pass
        try:
            infos = socket.getaddrinfo(host, int(port), socket.AF_UNSPEC, socket.SOCK_STREAM)
        except (OSError, ValueError):
            return self.addr
        infos.sort(key=lambda info: info[0] != socket.AF_INET)
        ip = str(infos[0][4][0])
        return f"ipv4:{ip}:{port}" if infos[0][0] == socket.AF_INET else f"ipv6:[{ip}]:{port}"

    def _connect(self, target: str) -> None:
        options: list[tuple[str, Any]] = [*CHANNEL_OPTIONS]
        if target != self.addr:
            options.append(("grpc.default_authority", self.addr))
        self.channel = grpc.insecure_channel(target, options=options)
        self._stubs: dict[str, Any] = {}
        self._health = health_pb2_grpc.HealthStub(self.channel)

    def refresh(self) -> None:
        """Re-resolve the peer's name; switch channels when its address changed (Service recreated)."""
        target = self._resolve()
        with self._lock:
            if target != self.target:
                logs.info("peer_address_changed", peer=self.peer, addr=self.addr, old=self.target, new=target)
                self._retired.append(self.channel)  # closing it now would cancel calls in flight
                self.target = target
                self._connect(target)

    def _stub(self, method: str) -> Any:
        stub = self._stubs.get(method)
        if stub is None:
            stub = self.channel.unary_unary(f"/{service_path(self.peer)}/{method}",
                                            request_serializer=_encode, response_deserializer=_decode)
            self._stubs[method] = stub
        return stub

    def call(self, method: str, request: Mapping[str, Any]) -> dict[str, Any]:
        """Call ``method``; retry retryable failures; raise RpcError naming the peer after the last try."""
        tracer = telemetry.tracer()
        start = time.perf_counter()
        attempts = self.rpc.retries + 1
        last: grpc.RpcError | None = None
        with tracer.start_as_current_span(
            f"{service_path(self.peer)}/{method}", kind=trace.SpanKind.CLIENT,
            attributes={"rpc.system": "grpc", "rpc.service": service_path(self.peer), "rpc.method": method,
                        "net.peer.name": self.addr, "peer.service": self.peer},
        ) as span:
            metadata = list(telemetry.carrier().items())
            try:
                caller_deadline = _deadline.get()
                made = 0
                for attempt in range(attempts):
                    timeout = self.rpc.timeout_ms / 1000
                    if caller_deadline is not None:
                        timeout = min(timeout, caller_deadline - time.monotonic())
                        if timeout <= 0.001 and last is not None:
                            break  # the caller has given up; more attempts would be wasted work
                        timeout = max(timeout, 0.001)
                    made += 1
                    try:
                        reply = self._stub(method)(dict(request), timeout=timeout, metadata=metadata)
                        telemetry.RPC_CLIENT_REQUESTS.labels(self.service, self.peer, method, "OK").inc()
                        return reply
                    except grpc.RpcError as exc:
                        last = exc
                        code = exc.code()
                        telemetry.RPC_CLIENT_REQUESTS.labels(self.service, self.peer, method, code.name).inc()
                        if code == grpc.StatusCode.UNAVAILABLE:
                            self.refresh()
                        if code not in RETRYABLE or attempt == attempts - 1:
                            break
                        telemetry.RPC_CLIENT_RETRIES.labels(self.service, self.peer, method).inc()
                        delay = min(self.rpc.backoff_max_ms, self.rpc.backoff_ms * (2 ** attempt)) / 1000
                        time.sleep(delay * random.uniform(0.5, 1.0))
                assert last is not None
                code, details = last.code(), last.details() or ""
                telemetry.RPC_CLIENT_ERRORS.labels(self.service, self.peer, method, code.name).inc()
                span.set_status(trace.Status(trace.StatusCode.ERROR, f"{code.name}: {details}"))
                span.set_attribute("rpc.grpc.status_code", code.value[0])
                logs.error("rpc_failed", peer=self.peer, addr=self.addr, method=method,
                           attempts=made, error=f"{code}: {details}")
                raise RpcError(code, f"{self.peer} ({self.addr}) {method}: {code.name}: {details}")
            finally:
                telemetry.RPC_CLIENT_LATENCY.labels(self.service, self.peer, method).observe(
                    time.perf_counter() - start)

    def check_health(self, timeout: float = 0.5) -> str:
        """The peer's grpc.health.v1 status name, or the error that prevented asking."""
        try:
            reply = self._health.Check(health_pb2.HealthCheckRequest(service=""), timeout=timeout)
            return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
        except grpc.RpcError as exc:
            return f"{exc.code().name}: {exc.details()}"

    def close(self) -> None:
        for channel in [*self._retired, self.channel]:
            channel.close()
