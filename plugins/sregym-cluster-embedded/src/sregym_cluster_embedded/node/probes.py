"""Liveness, readiness and startup probes: httpGet, tcpSocket, exec and grpc (health v1).

Each ``run_*`` returns ``(ok, message)``; the message is what the kubelet puts after
"Liveness probe failed: ". Probes only ever dial 127.0.0.0/8: a probe host elsewhere fails
without sending anything (the embedded cluster never routes traffic off the machine).
"""

from __future__ import annotations

import asyncio
import ipaddress
import ssl
from collections.abc import Awaitable, Callable

from sregym_core.errors import ClusterError


def resolve_port(port, container: dict) -> int | None:
    if isinstance(port, int) or (isinstance(port, str) and port.isdigit()):
        return int(port)
    for item in container.get("ports") or []:
        if item.get("name") == port:
            return int(item.get("containerPort"))
    return None


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host) in ipaddress.ip_network("127.0.0.0/8")
    except ValueError:
        return host == "localhost"


async def run_http(host: str, port: int, action: dict, timeout: float) -> tuple[bool, str]:
    scheme = (action.get("scheme") or "HTTP").lower()
    path = action.get("path") or "/"
    if not path.startswith("/"):
        path = "/" + path
    url = f"{scheme}://{host}:{port}{path}"
    if not _loopback(host):
        return False, f'Get "{url}": dial tcp {host}:{port}: connect: network is unreachable'
    headers = {"Host": f"{host}:{port}", "User-Agent": "kube-probe/1.37", "Accept": "*/*", "Connection": "close"}
    for header in action.get("httpHeaders") or []:
        headers[header.get("name", "")] = header.get("value", "")
    context = None
    if scheme == "https":
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port, ssl=context), timeout)
    except TimeoutError:
        return False, f'Get "{url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)'
    except OSError as exc:
        return False, f'Get "{url}": dial tcp {host}:{port}: connect: {_reason(exc)}'
    try:
        request = f"GET {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
        writer.write(request.encode())
        await writer.drain()
        status_line = await asyncio.wait_for(reader.readline(), timeout)
        if not status_line:
            return False, f'Get "{url}": EOF'
        parts = status_line.decode("latin-1").split()
        code = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
        if 200 <= code < 400:
            return True, ""
        return False, f"HTTP probe failed with statuscode: {code}"
    except TimeoutError:
        return False, f'Get "{url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)'
    except OSError as exc:
        return False, f'Get "{url}": read tcp {host}:{port}: {_reason(exc)}'
    finally:
        writer.close()


def _reason(exc: OSError) -> str:
    import errno
    return {errno.ECONNREFUSED: "connection refused", errno.ECONNRESET: "connection reset by peer",
            errno.ENETUNREACH: "network is unreachable", errno.EHOSTUNREACH: "no route to host"}.get(
        exc.errno or 0, (exc.strerror or str(exc)).lower())


async def run_tcp(host: str, port: int, timeout: float) -> tuple[bool, str]:
    if not _loopback(host):
        return False, f"dial tcp {host}:{port}: connect: network is unreachable"
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    except TimeoutError:
        return False, f"dial tcp {host}:{port}: i/o timeout"
    except OSError as exc:
        return False, f"dial tcp {host}:{port}: connect: {_reason(exc)}"
    writer.close()
    return True, ""


_GRPC_STATUS = {0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}


def _grpc():
    """grpcio, the ``grpc`` extra: only a pod with a grpc probe needs it."""
    try:
        import grpc
    except ImportError as exc:
        raise ClusterError("a grpc probe needs grpcio, which is not installed",
                           hints=("pip install 'sregym-cluster-embedded[grpc]'",)) from exc
    return grpc


async def run_grpc(host: str, port: int, service: str, timeout: float) -> tuple[bool, str]:
    target = f"{host}:{port}"
    if not _loopback(host):
        return False, f'timeout: failed to connect service "{target}" within {timeout:g}s: network is unreachable'
    grpc = _grpc()
    request = b""
    if service:
        encoded = service.encode()
        request = b"\x0a" + bytes([len(encoded)]) + encoded
    async with grpc.aio.insecure_channel(target) as channel:
        check = channel.unary_unary("/grpc.health.v1.Health/Check",
                                    request_serializer=lambda b: b, response_deserializer=lambda b: b)
        try:
            response = await check(request, timeout=timeout)
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED or exc.code() == grpc.StatusCode.UNAVAILABLE:
                return False, f'timeout: failed to connect service "{target}" within {timeout:g}s: context deadline exceeded'
            return False, f"rpc error: code = {exc.code().name.title().replace('_', '')} desc = {exc.details()}"
    status = response[1] if len(response) >= 2 and response[0] == 0x08 else 0
    if status == 1:
        return True, ""
    return False, f'service unhealthy (responded with "{_GRPC_STATUS.get(status, "UNKNOWN")}")'


async def run_probe(probe: dict, container: dict, pod_ip: str,
                    exec_fn: Callable[[list[str], float], Awaitable[tuple[int | None, bytes]]]) -> tuple[bool, str]:
    """Run one probe attempt; ``exec_fn(command, timeout)`` returns (exit code or None on timeout, output)."""
    timeout = float(probe.get("timeoutSeconds") or 1)
    if "httpGet" in probe:
        action = probe["httpGet"]
        port = resolve_port(action.get("port"), container)
        if port is None:
            return False, f"unable to find port {action.get('port')!r}"
        return await run_http(action.get("host") or pod_ip, port, action, timeout)
    if "tcpSocket" in probe:
        action = probe["tcpSocket"]
        port = resolve_port(action.get("port"), container)
        if port is None:
            return False, f"unable to find port {action.get('port')!r}"
        return await run_tcp(action.get("host") or pod_ip, port, timeout)
    if "grpc" in probe:
        action = probe["grpc"]
        return await run_grpc(pod_ip, int(action.get("port")), action.get("service") or "", timeout)
    if "exec" in probe:
        command = (probe["exec"] or {}).get("command") or []
        code, output = await exec_fn(list(command), timeout)
        if code is None:
            return False, f"command {command!r} timed out"
        if code != 0:
            text = output.decode("utf-8", "replace")
            return False, text if text else f"command {command!r} exited with {code}"
        return True, ""
    return False, "probe has no handler"
