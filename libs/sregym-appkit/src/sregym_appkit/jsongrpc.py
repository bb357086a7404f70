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
from collections.abc import Callable
from typing import Any

import grpc
from opentelemetry import trace

from . import logs

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
