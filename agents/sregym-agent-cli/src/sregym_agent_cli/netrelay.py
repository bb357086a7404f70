"""The host side of the CLI sandbox's network: the only ways out of its network namespace.

The sandbox runs in a fresh network namespace that holds nothing but loopback (``bwrap
--unshare-net``), so nothing on the host is reachable by address: not the cluster DNS, not a hidden
Service's ClusterIP, not any other listener on 127.0.0.0/8. Inside, :mod:`.forwarder` listens on the
same ``host:port`` as each allowed endpoint (the agent API, the MCP server, the cluster's API
server), so the URLs and the kubeconfig the agent is handed work unchanged. Each of those listeners
hands its connections over a Unix socket in the attempt's work directory (bind-mounted read-only) to
this relay, which connects to the one real address that socket stands for and to nothing else.

The model provider is reached through an HTTP ``CONNECT`` proxy on another Unix socket (``HTTPS_PROXY``
inside): it opens a tunnel only to a host name and port on its allowlist (the provider hosts of the
agent's configuration) and refuses everything else with ``403``, without connecting anywhere.

Works the same for a root and a non-root conductor: no capability is needed on either side.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import selectors
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlsplit

import attrs
import structlog

from .sandbox import SandboxError

log = structlog.get_logger()

#: where the proxy listens inside the sandbox (moved up when an endpoint already holds it)
PROXY_PORT = 3128
#: the longest CONNECT request head read before the tunnel is refused
MAX_HEAD = 8192
CONNECT_TIMEOUT_S = 15.0
#: the longest socket path used in place (sun_path holds 108 bytes with its terminating NUL)
MAX_SOCKET_PATH = 100


@attrs.frozen
class Endpoint:
    """An address the sandbox may reach: listened on inside, connected to outside."""

    host: str
    port: int
    what: str = ""


def endpoint_of(url: str, what: str) -> Endpoint:
    """The endpoint of ``url`` (``http://127.0.0.1:8000/mcp``, ``https://127.0.0.1:6443``).

    Only loopback addresses can be stood in for inside the namespace (its own loopback is all it
    has); anything else is refused with a hint."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    if host == "localhost":
        host = "127.0.0.1"
    try:
        loopback = ipaddress.ip_address(host).version == 4 and ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise SandboxError(f"the {what} at {url} is not on a 127.0.0.0/8 address, which the isolated sandbox "
                           "network can stand in for",
                           hints=("set the agent's network setting to host (the CLI then shares the host's "
                                  "network) or run the benchmark where the endpoint is on loopback",))
    return Endpoint(host=host, port=port, what=what)


def parse_allowlist(entries: Iterable[str]) -> frozenset[tuple[str, int]]:
    """``host`` (port 443) or ``host:port`` entries, lower-cased."""
    allowed = set()
    for entry in entries:
        text = str(entry).strip().lower()
        host, sep, port = text.rpartition(":")
        if not sep:
            host, port = text, "443"
        if not host or not port.isdigit():
            raise SandboxError(f"provider host {entry!r} is not host or host:port")
        allowed.add((host, int(port)))
    return frozenset(allowed)


class NetworkRelay:
    """The relay for one sandboxed run (:meth:`start` before the sandbox, :meth:`stop` after).

    :param directory: where the Unix sockets, the forwarder script and its spec are made (inside
        the attempt's work directory; the sandbox mounts it read-only).
    :param endpoints: the addresses the sandbox may reach, each at the same address inside.
    :param provider_hosts: the CONNECT proxy's allowlist (``host`` or ``host:port``); none, no proxy.
    """

    def __init__(self, directory: Path, endpoints: Iterable[Endpoint], provider_hosts: Iterable[str] = ()) -> None:
        self.directory = Path(directory)
        unique: dict[tuple[str, int], Endpoint] = {}
        for endpoint in endpoints:  # the MCP server often shares the API's port
            unique.setdefault((endpoint.host, endpoint.port), endpoint)
        self.endpoints = tuple(unique.values())
        self.allowlist = parse_allowlist(provider_hosts)
        taken = {e.port for e in self.endpoints}
        self.proxy_port = PROXY_PORT
        while self.proxy_port in taken:
            self.proxy_port += 1
        self.refused: list[str] = []  # proxy requests refused (for the trajectory)
        self._listeners: dict[socket.socket, tuple[str, Endpoint | None]] = {}
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._owned = False  # the directory is a temporary one of the relay's (removed by stop)

    @property
    def script(self) -> Path:
        return self.directory / "forwarder.py"

    @property
    def spec(self) -> Path:
        return self.directory / "forwards.json"

    @property
    def proxy_url(self) -> str | None:
        return f"http://127.0.0.1:{self.proxy_port}" if self.allowlist else None

    def env(self) -> dict[str, str]:
        """The proxy variables for inside (none without an allowlist); loopback never goes through it."""
        if self.proxy_url is None:
            return {}
        return {"HTTPS_PROXY": self.proxy_url, "https_proxy": self.proxy_url, "NO_PROXY": "127.0.0.1,localhost",
                "no_proxy": "127.0.0.1,localhost"}

    def start(self) -> NetworkRelay:
        if len(os.fsencode(self.directory / "proxy-000.sock")) > MAX_SOCKET_PATH:
            # a Unix socket's path is at most 107 bytes: deep work directories get a short one of their own
            self.directory = Path(tempfile.mkdtemp(prefix="sregym-net-"))
            self._owned = True
        self.directory.mkdir(parents=True, exist_ok=True)
        self.directory.chmod(0o755)
        shutil.copyfile(Path(__file__).with_name("forwarder.py"), self.script)
        self.script.chmod(0o644)
        forwards = []
        targets: list[tuple[str, Endpoint | None, int]] = [("ep", e, e.port) for e in self.endpoints]
        if self.allowlist:
            targets.append(("proxy", None, self.proxy_port))
        for index, (kind, endpoint, port) in enumerate(targets):
            path = self.directory / f"{kind}-{index}.sock"
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(str(path))
            listener.listen(64)
            listener.setblocking(False)
            # the sandbox's user (nobody for a root conductor) must be able to connect
            path.chmod(0o666)
            self._listeners[listener] = (kind, endpoint)
            forwards.append({"host": endpoint.host if endpoint else "127.0.0.1", "port": port, "socket": str(path)})
        self.spec.write_text(json.dumps({"forwards": forwards}, indent=1) + "\n")
        self.spec.chmod(0o644)
        self._thread = threading.Thread(target=self._accept_loop, name="sandbox-net-relay", daemon=True)
        self._thread.start()
        log.info("sandbox_network_relay", endpoints=[f"{e.host}:{e.port}" for e in self.endpoints],
                 provider_hosts=sorted(f"{h}:{p}" for h, p in self.allowlist))
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        for listener in self._listeners:
            listener.close()
        self._listeners.clear()
        with self._lock:
            for conn in list(self._open):
                with contextlib.suppress(OSError):
                    conn.close()
            self._open.clear()
        if self._owned:
            shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> NetworkRelay:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ------------------------------------------------------------------------------------- relay

    def _accept_loop(self) -> None:
        with selectors.DefaultSelector() as selector:
            for listener in self._listeners:
                selector.register(listener, selectors.EVENT_READ)
            while not self._stop.is_set():
                for key, _ in selector.select(timeout=0.2):
                    try:
                        conn, _ = key.fileobj.accept()
                    except OSError:
                        continue
                    conn.setblocking(True)
                    kind, endpoint = self._listeners[key.fileobj]
                    handler = self._tunnel if kind == "proxy" else self._relay
                    threading.Thread(target=handler, args=(conn, endpoint), daemon=True).start()

    def _track(self, *conns: socket.socket) -> None:
        with self._lock:
            self._open.update(conns)

    def _untrack(self, *conns: socket.socket) -> None:
        with self._lock:
            for conn in conns:
                self._open.discard(conn)
                with contextlib.suppress(OSError):
                    conn.close()

    def _relay(self, conn: socket.socket, endpoint: Endpoint) -> None:
        self._track(conn)
        try:
            upstream = socket.create_connection((endpoint.host, endpoint.port), timeout=CONNECT_TIMEOUT_S)
        except OSError:
            self._untrack(conn)
            return
        upstream.settimeout(None)
        self._splice(conn, upstream)

    def _splice(self, conn: socket.socket, upstream: socket.socket, first: bytes = b"") -> None:
        self._track(upstream)
        if first:
            with contextlib.suppress(OSError):
                upstream.sendall(first)
        back = threading.Thread(target=_pump, args=(upstream, conn), daemon=True)
        back.start()
        _pump(conn, upstream)
        back.join()
        self._untrack(conn, upstream)

    def _tunnel(self, conn: socket.socket, _endpoint: None) -> None:
        """One ``CONNECT host:port`` through the allowlist, or a refusal (no connection is made)."""
        self._track(conn)
        head = b""
        try:
            conn.settimeout(CONNECT_TIMEOUT_S)
            while b"\r\n\r\n" not in head and len(head) < MAX_HEAD:
                data = conn.recv(4096)
                if not data:
                    break
                head += data
            conn.settimeout(None)
        except OSError:
            self._untrack(conn)
            return
        request, _, rest = head.partition(b"\r\n\r\n")
        line = request.split(b"\r\n", 1)[0].decode("latin-1")
        method, target = (line.split() + ["", ""])[:2]
        host, _, port = target.rpartition(":")
        host = host.strip("[]").lower()
        allowed = method == "CONNECT" and port.isdigit() and (host, int(port)) in self.allowlist
        if not allowed:
            self.refused.append(line[:200])
            log.info("sandbox_proxy_refused", request=line[:200])
            reason = "only CONNECT to the model provider's hosts is allowed from the agent sandbox"
            with contextlib.suppress(OSError):
                conn.sendall(f"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: {len(reason)}\r\n"
                             f"Connection: close\r\n\r\n{reason}".encode())
            self._untrack(conn)
            return
        try:
            upstream = socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S)
        except OSError as exc:
            with contextlib.suppress(OSError):
                conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            log.info("sandbox_proxy_unreachable", host=host, port=port, error=str(exc))
            self._untrack(conn)
            return
        upstream.settimeout(None)
        with contextlib.suppress(OSError):
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        self._splice(conn, upstream, rest)


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)
