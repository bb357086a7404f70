"""gRPC with a JSON codec, as the apps' gRPC services speak it (real gRPC over HTTP/2, no protoc step).

Requests and responses are JSON objects (:func:`encode`, :func:`decode`). A handler fails a call by
raising :class:`RpcError` with a status code; :func:`answer` runs a handler inside the server's span
and turns what it raised into the gRPC status the caller sees: an ``RpcError`` its code, any other
exception ``INTERNAL`` with the exception named (span error, ``handler_crashed`` log line), so a
fault's failures are visible in traces and logs as well as at the caller.

Needs ``grpcio`` (``sregym-appkit[grpc]``), which the images of apps with gRPC services install.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from concurrent import futures
from typing import Any

import grpc
from opentelemetry import context as otel_context
from opentelemetry import trace

from . import logs
from .tracing import extract

Handler = Callable[[dict[str, Any]], dict[str, Any]]


class RpcError(Exception):
    """A failure with a gRPC status code (raised by handlers, and by clients after their retries)."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def encode(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def decode(data: bytes) -> Any:
    return json.loads(data) if data else {}


class Call:
    """The outcome of one served call: ``code`` is the status the caller gets (for the metrics)."""

    def __init__(self) -> None:
        self.code = grpc.StatusCode.OK


def answer(fn: Handler, request: Any, context: grpc.ServicerContext, span: Any, method: str, call: Call, *,
           log_rpc_errors: bool = False) -> Any:
    """``fn(request)``'s reply, or the call aborted with the status of what it raised (see the module).

    ``log_rpc_errors``: also log an ``RpcError`` (``request_failed``) and put its code on the span."""
    try:
        return fn(request if isinstance(request, dict) else {})
    except RpcError as exc:
        call.code = exc.code
        span.set_status(trace.Status(trace.StatusCode.ERROR, exc.message))
        if log_rpc_errors:
            span.set_attribute("rpc.grpc.status_code", exc.code.value[0])
            logs.error("request_failed", method=method, code=exc.code.name, error=exc.message)
        context.abort(exc.code, exc.message)
    except Exception as exc:
        if isinstance(exc, grpc.RpcError) or type(exc).__name__ == "_AbortError":
            raise
        call.code = grpc.StatusCode.INTERNAL
        span.record_exception(exc)
        span.set_status(trace.Status(trace.StatusCode.ERROR, str(exc)))
        logs.error("handler_crashed", method=method, error=f"{type(exc).__name__}: {exc}")
        context.abort(grpc.StatusCode.INTERNAL, f"{type(exc).__name__}: {exc}")


#: the options of the apps' gRPC servers: connection age capped as production gRPC servers do, so a
#: caller reconnects (through the Service) and notices when it lost its endpoints, instead of keeping
#: a connection opened before a fault for as long as the pod lives
SERVER_OPTIONS = [("grpc.so_reuseport", 0), ("grpc.max_connection_age_ms", 20000),
                  ("grpc.max_connection_age_grace_ms", 5000)]


class JsonGrpcServer:
    """A gRPC server of one service's JSON methods, ``/<path>/<Method>``, plus ``grpc.health.v1``,
    listening on ``address`` (host:port; OSError when it cannot).

    Every call runs with the caller's trace context attached, inside a server span ``<path>/<method>``
    (``rpc.*`` attributes), through :func:`answer` (``log_rpc_errors`` as the class says), and ends in
    :meth:`record`. A subclass gives its :meth:`tracer` and metrics, and may hold something for the
    call's length (:meth:`enter`, :meth:`leave`) and admit it inside its span (:meth:`admit`)."""

    #: :func:`answer`'s ``log_rpc_errors``
    log_rpc_errors = False

    def __init__(self, path: str, handlers: Mapping[str, Handler], address: str, *, executor: futures.Executor,
                 options: list[tuple[str, Any]] | None = None, maximum_concurrent_rpcs: int | None = None) -> None:
        from grpc_health.v1 import health, health_pb2_grpc

        self.path = path
        self.health = health.HealthServicer()
        self.server = grpc.server(executor, maximum_concurrent_rpcs=maximum_concurrent_rpcs,
                                  options=SERVER_OPTIONS if options is None else options)
        methods = {name: grpc.unary_unary_rpc_method_handler(self._handler(name, fn), request_deserializer=decode,
                                                             response_serializer=encode)
                   for name, fn in handlers.items()}
        self.server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(path, methods),))
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        self.bound = self.server.add_insecure_port(address)
        if not self.bound:
            raise OSError(self.listen_error(address))

    def listen_error(self, address: str) -> str:
        return f"cannot listen on {address}"

    def tracer(self) -> trace.Tracer:
        raise NotImplementedError

    def enter(self, context: grpc.ServicerContext) -> Any:
        """Before the call (its deadline, an in-flight count): what :meth:`leave` gets back."""
        return None

    def leave(self, entered: Any) -> None:
        """After the call, whatever its end (the trace context already detached)."""

    def admit(self, span: Any) -> None:
        """Inside the span, before the handler runs (a rate limit's wait)."""

    def record(self, method: str, code: str, seconds: float) -> None:
        """Count one served call: ``code`` the status the caller got (``OK``, ``NOT_FOUND``, ...)."""

    def _handler(self, method: str, fn: Handler) -> Callable[[Any, grpc.ServicerContext], Any]:
        def handle(request: Any, context: grpc.ServicerContext) -> Any:
            start = time.perf_counter()
            token = otel_context.attach(extract(context.invocation_metadata()))
            entered = self.enter(context)
            call = Call()
            try:
                with self.tracer().start_as_current_span(
                        f"{self.path}/{method}", kind=trace.SpanKind.SERVER,
                        attributes={"rpc.system": "grpc", "rpc.service": self.path, "rpc.method": method}) as span:
                    self.admit(span)
                    return answer(fn, request, context, span, method, call, log_rpc_errors=self.log_rpc_errors)
            finally:
                otel_context.detach(token)
                self.leave(entered)
                self.record(method, call.code.name, time.perf_counter() - start)

        return handle

    def start(self) -> None:
        """Serve, and answer the health service's overall check SERVING."""
        from grpc_health.v1 import health_pb2

        self.server.start()
        self.health.set("", health_pb2.HealthCheckResponse.SERVING)
