"""A small async Kubernetes API client (list, watch, log streaming) over aiohttp.

The collector and exporters only read a handful of resources; this client speaks the plain REST
API with a bearer token or client certificate, so the same code runs against the embedded API
server and a real cluster. Credentials come from an explicit kubeconfig, ``$KUBECONFIG``, or the
in-cluster service-account files.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import json
import os
import ssl
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import attrs
import yaml

from sregym_core.errors import ClusterError

SA_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


@attrs.frozen(kw_only=True)
class KubeAccess:
    """Where the API server is and how to authenticate to it."""

    server: str
    token: str | None = None
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    insecure: bool = False

    def ssl_context(self) -> ssl.SSLContext | bool:
        if not self.server.startswith("https://"):
            return False
        if self.insecure:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        else:
            ctx = ssl.create_default_context(cafile=self.ca_file)
        if self.cert_file and self.key_file:
            ctx.load_cert_chain(self.cert_file, self.key_file)
        return ctx

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}


def _materialize(data_b64: str, suffix: str) -> str:
    """Write base64 ``*-data`` from a kubeconfig to a private temp file (ssl wants paths)."""
    fd, path = tempfile.mkstemp(prefix="sregym-obs-", suffix=suffix)
    with os.fdopen(fd, "wb") as handle:
        handle.write(base64.b64decode(data_b64))
    atexit.register(_remove_quietly, path)  # key material must not outlive the process
    return path


def _remove_quietly(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def access_from_kubeconfig(path: str | os.PathLike[str], context: str | None = None) -> KubeAccess:
    try:
        config = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as err:
        raise ClusterError(f"cannot read kubeconfig {path}: {err}",
                           hints=["pass --kubeconfig PATH or set KUBECONFIG"]) from None
    try:
        name = context or config.get("current-context")
        ctx = next(c["context"] for c in config["contexts"] if c["name"] == name)
        cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == ctx["cluster"])
        user: dict[str, Any] = next((u["user"] for u in config.get("users", []) if u["name"] == ctx.get("user")), {}) or {}
    except (KeyError, StopIteration, TypeError) as err:
        raise ClusterError(f"kubeconfig {path} has no usable context {context or ''!r} ({err})") from None
    base = Path(path).parent
    ca_file = cluster.get("certificate-authority")
    if ca_file:
        ca_file = str(base / ca_file)
    elif cluster.get("certificate-authority-data"):
        ca_file = _materialize(cluster["certificate-authority-data"], ".crt")
    cert_file, key_file = user.get("client-certificate"), user.get("client-key")
    if user.get("client-certificate-data") and user.get("client-key-data"):
        cert_file = _materialize(user["client-certificate-data"], ".crt")
        key_file = _materialize(user["client-key-data"], ".key")
    token = user.get("token")
    if not token and user.get("tokenFile"):
        token = Path(user["tokenFile"]).read_text().strip()
    return KubeAccess(server=cluster["server"].rstrip("/"), token=token, ca_file=ca_file, cert_file=cert_file,
                      key_file=key_file, insecure=bool(cluster.get("insecure-skip-tls-verify")))


def access_in_cluster(sa_dir: Path = SA_DIR) -> KubeAccess:
    host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT", "443")
    if not host:
        raise ClusterError("not running in a cluster: KUBERNETES_SERVICE_HOST is not set",
                           hints=["pass --kubeconfig PATH or set KUBECONFIG"])
    token_file, ca_file = sa_dir / "token", sa_dir / "ca.crt"
    if not token_file.exists():
        raise ClusterError(f"running in a cluster (KUBERNETES_SERVICE_HOST={host}) but no service-account token "
                           f"is mounted at {token_file}",
                           hints=["mount the pod's service-account token (automountServiceAccountToken)",
                                  "or pass --kubeconfig / --api-server with --token-file and --ca-file"])
    token = token_file.read_text().strip()
    host = f"[{host}]" if ":" in host else host
    return KubeAccess(server=f"https://{host}:{port}", token=token,
                      ca_file=str(ca_file) if ca_file.exists() else None)


def resolve_access(kubeconfig: str | None = None, *, server: str | None = None, token_file: str | None = None,
                   ca_file: str | None = None, sa_dir: str | None = None) -> KubeAccess:
    """Explicit server+token, then a kubeconfig (argument or ``$KUBECONFIG``), then in-cluster."""
    if server:
        token = Path(token_file).read_text().strip() if token_file else None
        return KubeAccess(server=server.rstrip("/"), token=token, ca_file=ca_file)
    path = kubeconfig or os.environ.get("KUBECONFIG")
    if path:
        return access_from_kubeconfig(path.split(os.pathsep)[0])
    return access_in_cluster(Path(sa_dir) if sa_dir else SA_DIR)


class KubeApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status


class KubeClient:
    """Async REST client; use as ``async with KubeClient(access) as kube:``."""

    def __init__(self, access: KubeAccess) -> None:
        self.access = access
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> KubeClient:
        connector = aiohttp.TCPConnector(ssl=self.access.ssl_context(), limit=0)
        self._session = aiohttp.ClientSession(connector=connector, headers=self.access.headers())
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("KubeClient used outside 'async with'")
        return self._session

    async def get_json(self, path: str, params: dict[str, str] | None = None, timeout: float = 30.0) -> Any:
        url = self.access.server + path
        async with self.session.get(url, params=params, timeout=aiohttp.ClientTimeout(total=timeout)) as resp:
            body = await resp.read()
            if resp.status >= 400:
                raise KubeApiError(resp.status, _status_message(body))
            return json.loads(body)

    async def list_items(self, path: str) -> list[dict]:
        return list((await self.get_json(path)).get("items") or [])

    async def watch(self, path: str, resource_version: str, timeout_s: int = 300) -> AsyncIterator[dict]:
        """Yield watch events (``{"type": ..., "object": ...}``) until the server ends the watch."""
        params = {"watch": "true", "resourceVersion": resource_version, "timeoutSeconds": str(timeout_s),
                  "allowWatchBookmarks": "true"}
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=timeout_s + 30)
        async with self.session.get(self.access.server + path, params=params, timeout=timeout) as resp:
            if resp.status >= 400:
                raise KubeApiError(resp.status, _status_message(await resp.read()))
            async for line in iter_lines(resp.content):
                if line.strip():
                    yield json.loads(line)

    async def stream_line_batches(self, path: str, params: dict[str, str]) -> AsyncIterator[list[str]]:
        """Yield the complete lines of each chunk as it arrives (a follow stream never ends on its own)."""
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=None)
        async with self.session.get(self.access.server + path, params=params, timeout=timeout) as resp:
            if resp.status >= 400:
                raise KubeApiError(resp.status, _status_message(await resp.read()))
            async for batch in iter_line_batches(resp.content):
                yield batch


async def iter_line_batches(content: aiohttp.StreamReader, max_line: int = 256 * 1024) -> AsyncIterator[list[str]]:
    """Split a byte stream into text lines, one list per received chunk.

    An overlong line is cut rather than buffered without bound.
    """
    buffer = b""
    async for chunk in content.iter_any():
        buffer += chunk
        lines: list[str] = []
        while True:
            cut = buffer.find(b"\n")
            if cut < 0:
                if len(buffer) > max_line:
                    lines.append(buffer[:max_line].decode("utf-8", "replace"))
                    buffer = b""
                break
            lines.append(buffer[:cut].decode("utf-8", "replace"))
            buffer = buffer[cut + 1 :]
        if lines:
            yield lines
    if buffer:
        yield [buffer.decode("utf-8", "replace")]


async def iter_lines(content: aiohttp.StreamReader) -> AsyncIterator[str]:
    async for batch in iter_line_batches(content):
        for line in batch:
            yield line


def _status_message(body: bytes) -> str:
    try:
        return str(json.loads(body).get("message") or body[:200])
    except ValueError:
        return body[:200].decode("utf-8", "replace")
