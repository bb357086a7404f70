"""Apache Thrift RPC: a threaded server and a pooled, retrying client (binary protocol, framed transport).

DeathStarBench's services talk ``TBinaryProtocol`` over ``TFramedTransport``; so do these. The trace
context travels in each call's ``carrier`` argument (W3C ``traceparent``), as in the original.

A handler is any object with one method per Thrift method, called as
``handler.Method(req_id, *args, carrier)``; raising :class:`idl.ServiceException` sends it to the
caller as the declared exception. Any other exception becomes ``SE_THRIFT_HANDLER_ERROR``.
"""

from __future__ import annotations

import queue
import random
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from opentelemetry import trace
from thrift.protocol import TBinaryProtocol
from thrift.Thrift import TApplicationException, TMessageType
from thrift.transport import TSocket, TTransport

from sregym_appkit import logs

from . import idl, telemetry

_PROTOCOL = TBinaryProtocol.TBinaryProtocolAcceleratedFactory()
MAX_CONN_AGE_S = 10.0
_TRANSPORT = TTransport.TFramedTransportFactory()


class RpcError(Exception):
    """A call that failed after its retries: ``kind`` is ``timeout``, ``unavailable`` or ``service``."""

    def __init__(self, peer: str, addr: str, method: str, kind: str, message: str, code: int | None = None) -> None:
        super().__init__(f"{peer} ({addr}) {method}: {kind}: {message}")
        self.peer, self.addr, self.method, self.kind, self.message, self.code = peer, addr, method, kind, message, code


def service_error(code: int, message: str) -> Exception:
    return idl.ServiceException(errorCode=code, message=message)


# ----------------------------------------------------------------------------------------- server

class Processor:
    """Dispatches one Thrift message to the handler and writes the reply."""

    def __init__(self, service_name: str, thrift_service: str, handler: Any) -> None:
        self.service_name, self.thrift_service, self.handler = service_name, thrift_service, handler
        self.methods = idl.SERVICES[thrift_service]

    def process(self, iprot: Any, oprot: Any) -> None:
        name, _mtype, seqid = iprot.readMessageBegin()
        if name not in self.methods:
            iprot.skip(12)  # TType.STRUCT
            iprot.readMessageEnd()
            self._send(oprot, name, seqid, TMessageType.EXCEPTION,
                       TApplicationException(TApplicationException.UNKNOWN_METHOD, f"unknown method {name}"))
            return
        args_cls, result_cls = idl.MESSAGES[(self.thrift_service, name)]
        args = args_cls()
        args.read(iprot)
        iprot.readMessageEnd()
        result = result_cls()
        started = time.perf_counter()
        code = "ok"
        carrier = args.carrier or {}
        telemetry.RPC_SERVER_INFLIGHT.labels(self.service_name).inc()
        with telemetry.tracer().start_as_current_span(
                f"{self.thrift_service}.{name}", context=telemetry.extract(carrier),
                kind=trace.SpanKind.SERVER,
                attributes={"rpc.system": "thrift", "rpc.service": self.thrift_service, "rpc.method": name,
                            "req_id": args.req_id or 0}) as span:
            try:
                values = [getattr(args, n) for n in idl.arg_names(self.thrift_service, name)]
                value = getattr(self.handler, name)(args.req_id or 0, *values, carrier)
                if idl.has_result(self.thrift_service, name):
                    result.success = value
            except idl.ServiceException as exc:
                result.se = exc
                code = idl.ERROR_CODES.get(exc.errorCode, str(exc.errorCode))
                span.set_status(trace.Status(trace.StatusCode.ERROR, exc.message))
                span.set_attribute("error.code", code)
            except Exception as exc:  # noqa: BLE001 - a handler bug is answered, not a dropped connection
                result.se = idl.ServiceException(errorCode=idl.SE_THRIFT_HANDLER_ERROR,
                                                 message=f"{type(exc).__name__}: {exc}")
                code = "SE_THRIFT_HANDLER_ERROR"
                span.record_exception(exc)
                span.set_status(trace.Status(trace.StatusCode.ERROR, str(exc)))
                logs.error("handler_failed", method=name, req_id=args.req_id, error=f"{type(exc).__name__}: {exc}")
            finally:
                telemetry.RPC_SERVER_INFLIGHT.labels(self.service_name).dec()
        telemetry.RPC_SERVER_REQUESTS.labels(self.service_name, name, code).inc()
        telemetry.RPC_SERVER_LATENCY.labels(self.service_name, name).observe(time.perf_counter() - started)
        if code != "ok":
            logs.warning("rpc_failed", method=name, req_id=args.req_id, code=code,
                         error=result.se.message if result.se else "")
        self._send(oprot, name, seqid, TMessageType.REPLY, result)

    @staticmethod
    def _send(oprot: Any, name: str, seqid: int, mtype: int, body: Any) -> None:
        oprot.writeMessageBegin(name, mtype, seqid)
        body.write(oprot)
        oprot.writeMessageEnd()
        oprot.trans.flush()


class ThriftServer:
    """Accepts connections and serves each on a worker thread (at most ``workers`` at a time)."""

    def __init__(self, host: str, port: int, processor: Processor, workers: int = 16) -> None:
        self.processor = processor
        self.sock = socket.create_server((host, port), reuse_port=False, backlog=128)
        self.slots = threading.BoundedSemaphore(workers)
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._accept, name="thrift-accept", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.slots.acquire()
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        wrapped = TSocket.TSocket()
        wrapped.setHandle(conn)
        trans = _TRANSPORT.getTransport(wrapped)
        iprot = _PROTOCOL.getProtocol(trans)
        oprot = _PROTOCOL.getProtocol(trans)
        try:
            while not self.stopping.is_set():
                self.processor.process(iprot, oprot)
        except (TTransport.TTransportException, OSError, EOFError):
            pass  # the client closed the connection
        except Exception as exc:  # noqa: BLE001 - a malformed frame closes that connection only
            logs.warning("connection_error", error=f"{type(exc).__name__}: {exc}")
        finally:
            trans.close()
            self.slots.release()

    def stop(self) -> None:
        self.stopping.set()
        try:
            self.sock.close()
        except OSError:
            pass


# ----------------------------------------------------------------------------------------- client

class RpcPolicy:
    """Timeout and retry settings of a client (env ``RPC_TIMEOUT_MS``, ``RPC_RETRIES``, ``RPC_BACKOFF_MS``)."""

    def __init__(self, timeout_ms: int = 2000, retries: int = 1, backoff_ms: int = 20) -> None:
        self.timeout_ms, self.retries, self.backoff_ms = timeout_ms, retries, backoff_ms


class _Conn:
    def __init__(self, host: str, port: int, timeout_ms: int) -> None:
        sock = TSocket.TSocket(host, port)
        sock.setTimeout(timeout_ms)
        self.trans = _TRANSPORT.getTransport(sock)
        self.proto = _PROTOCOL.getProtocol(self.trans)
        self.trans.open()
        self.seqid = 0
        self.opened = time.monotonic()


class Client:
    """Calls one peer service; connections are pooled and reused (one call per connection at a time)."""

    def __init__(self, service: str, peer: str, thrift_service: str, addr: str, policy: RpcPolicy,
                 pool_size: int = 16) -> None:
        self.service, self.peer, self.thrift_service, self.addr, self.policy = service, peer, thrift_service, addr, policy
        host, _, port = addr.rpartition(":")
        self.host, self.port = host, int(port)
        self.pool: queue.LifoQueue[_Conn] = queue.LifoQueue(maxsize=pool_size)

    def __getattr__(self, method: str) -> Callable[..., Any]:
        if method not in idl.SERVICES.get(self.thrift_service, {}):
            raise AttributeError(method)
        return lambda req_id, *args: self.call(method, req_id, *args)

    def _take(self) -> _Conn:
        # a pooled connection is reused for at most MAX_CONN_AGE_S: then the peer's name is resolved and
        # connected afresh, as pooled Thrift clients recycle idle connections (a moved or renamed peer shows)
        while True:
            try:
                conn = self.pool.get_nowait()
            except queue.Empty:
                return _Conn(self.host, self.port, self.policy.timeout_ms)
            if time.monotonic() - conn.opened < MAX_CONN_AGE_S:
                return conn
            conn.trans.close()

    def _give(self, conn: _Conn) -> None:
        try:
            self.pool.put_nowait(conn)
        except queue.Full:
            conn.trans.close()

    def close(self) -> None:
        while True:
            try:
                self.pool.get_nowait().trans.close()
            except queue.Empty:
                return

    def _once(self, method: str, req_id: int, args: tuple[Any, ...]) -> Any:
        args_cls, result_cls = idl.MESSAGES[(self.thrift_service, method)]
        carrier = telemetry.carrier()
        message = args_cls(req_id=req_id, carrier=carrier,
                           **dict(zip(idl.arg_names(self.thrift_service, method), args, strict=True)))
        conn = self._take()
        try:
            conn.seqid += 1
            conn.proto.writeMessageBegin(method, TMessageType.CALL, conn.seqid)
            message.write(conn.proto)
            conn.proto.writeMessageEnd()
            conn.trans.flush()
            _name, mtype, _seq = conn.proto.readMessageBegin()
            if mtype == TMessageType.EXCEPTION:
                exc = TApplicationException()
                exc.read(conn.proto)
                conn.proto.readMessageEnd()
                raise RpcError(self.peer, self.addr, method, "service", str(exc.message))
            result = result_cls()
            result.read(conn.proto)
            conn.proto.readMessageEnd()
        except BaseException:
            conn.trans.close()  # a half-read connection cannot be reused
            raise
        self._give(conn)
        if result.se is not None:
            raise RpcError(self.peer, self.addr, method, "service", result.se.message, result.se.errorCode)
        return getattr(result, "success", None)

    def call(self, method: str, req_id: int, *args: Any) -> Any:
        started = time.perf_counter()
        attempts = 1 + max(0, self.policy.retries)
        with telemetry.tracer().start_as_current_span(
                f"{self.thrift_service}.{method}", kind=trace.SpanKind.CLIENT,
                attributes={"rpc.system": "thrift", "rpc.service": self.thrift_service, "rpc.method": method,
                            "peer.service": self.peer, "net.peer.name": self.addr}) as span:
            try:
                for attempt in range(attempts):
                    try:
                        value = self._once(method, req_id, args)
                        telemetry.RPC_CLIENT_REQUESTS.labels(self.service, self.peer, method, "ok").inc()
                        return value
                    except RpcError as exc:
                        telemetry.RPC_CLIENT_REQUESTS.labels(self.service, self.peer, method, "service_error").inc()
                        span.set_status(trace.Status(trace.StatusCode.ERROR, exc.message))
                        telemetry.RPC_CLIENT_ERRORS.labels(self.service, self.peer, method, "service_error").inc()
                        raise  # the peer answered: retrying would repeat its answer
                    except (TTransport.TTransportException, OSError, EOFError) as exc:
                        kind = "timeout" if "timed out" in str(exc).lower() else "unavailable"
                        telemetry.RPC_CLIENT_REQUESTS.labels(self.service, self.peer, method, kind).inc()
                        if attempt + 1 < attempts:
                            telemetry.RPC_CLIENT_RETRIES.labels(self.service, self.peer, method).inc()
                            time.sleep(self.policy.backoff_ms / 1000 * (2 ** attempt) * (0.5 + random.random()))
                            continue
                        message = str(exc) or type(exc).__name__
                        telemetry.RPC_CLIENT_ERRORS.labels(self.service, self.peer, method, kind).inc()
                        span.set_status(trace.Status(trace.StatusCode.ERROR, message))
                        logs.error("rpc_client_failed", peer=self.peer, addr=self.addr, method=method, req_id=req_id,
                                   kind=kind, attempts=attempts, error=message)
                        raise RpcError(self.peer, self.addr, method, kind, message) from exc
            finally:
                telemetry.RPC_CLIENT_LATENCY.labels(self.service, self.peer, method).observe(
                    time.perf_counter() - started)
        raise AssertionError("unreachable")


def upstream_failure(exc: RpcError) -> Exception:
    """What a service raises to its own caller when a peer failed: the DeathStarBench error code."""
    code = exc.code if exc.kind == "service" and exc.code is not None else idl.SE_THRIFT_CONN_ERROR
    return service_error(code, f"{exc.peer}: {exc.message}" if exc.kind == "service"
                         else f"failed to connect to {exc.peer} ({exc.addr}): {exc.message}")
