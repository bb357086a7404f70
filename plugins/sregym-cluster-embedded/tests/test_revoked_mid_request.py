"""An identity revoked while its request is still on the wire (red-team round 9, issue #34).

The API server decides who calls, and whether RBAC allows it, from the request's headers. A client
that sent the headers during its attempt and held the body's last byte back wrote after the
conductor had revoked its identity, past the grant guard's last look; a watch opened during the
attempt streamed the next attempts' objects for 21 minutes. Here, against a real API server and the
conductor's own identity code, over a raw TLS connection (the bytes kubectl would send, only slower):
the body that completes after the revocation is refused and stores nothing, the same body with the
identity still alive is stored, and a watch ends once its identity is gone."""

from __future__ import annotations

import base64
import json
import socket
import ssl
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

import yaml

from sregym_core.conductor.agent_access import grant_agent_access, revoke_agent_access
from sregym_core.conductor.kube import Kube

#: only catches a hang: the events waited for come in well under a second
HANG_S = 30.0


def running_pod(api, namespace: str, name: str) -> None:
    """This directory's conftest helper, loaded by path: in a run of several test directories the module named
    ``conftest`` may be another directory's."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_embedded_tests_conftest", Path(__file__).with_name("conftest.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.running_pod(api, namespace, name)


def _identity(kubeconfig: Path) -> tuple[str, int, ssl.SSLContext, str]:
    """(host, port, TLS context trusting the cluster's CA, bearer token) of an agent kubeconfig."""
    config = yaml.safe_load(kubeconfig.read_text())
    cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
    url = urlparse(cluster["server"])
    context = ssl.create_default_context()
    with tempfile.NamedTemporaryFile("wb", suffix=".crt", delete=False) as ca:
        ca.write(base64.b64decode(cluster["certificate-authority-data"]))
    context.load_verify_locations(ca.name)
    Path(ca.name).unlink()
    context.check_hostname = False
    return url.hostname or "127.0.0.1", url.port or 443, context, user["token"]


def _open(kubeconfig: Path) -> tuple[ssl.SSLSocket, str, str]:
    host, port, context, token = _identity(kubeconfig)
    raw = socket.create_connection((host, port), timeout=HANG_S)
    return context.wrap_socket(raw, server_hostname=host), host, token


def _status(sock: ssl.SSLSocket) -> int:
    """The HTTP status of the response on ``sock``."""
    line = b""
    while not line.endswith(b"\r\n"):
        line += sock.recv(1)
    return int(line.split()[1])


def _stream(kubeconfig: Path, path: str) -> ssl.SSLSocket:
    """A GET of ``path`` with the identity of ``kubeconfig`` whose response streams (a watch, a followed log): its
    socket, past the status line, which must be 200."""
    sock, host, token = _open(kubeconfig)
    sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
                  f"Connection: close\r\n\r\n").encode())
    assert _status(sock) == 200
    return sock


def _until_the_stream_ends(sock: ssl.SSLSocket, received: bytes, what: str) -> bytes:
    """Read until the chunked stream's end (the server closed it) or the socket closes; fail if it still streams."""
    deadline = time.monotonic() + HANG_S
    while not received.endswith(b"0\r\n\r\n"):
        assert time.monotonic() < deadline, f"{what} still streams {HANG_S:g} s after the revocation"
        chunk = sock.recv(65536)
        if not chunk:
            break
        received += chunk
    return received


def _held_back_patch(kubeconfig: Path, namespace: str, value: str) -> tuple[ssl.SSLSocket, bytes]:
    """A merge patch of ConfigMap ``held`` whose headers and all but the last byte of its body are sent."""
    sock, host, token = _open(kubeconfig)
    body = json.dumps({"data": {"k": value}}).encode()
    head = (f"PATCH /api/v1/namespaces/{namespace}/configmaps/held HTTP/1.1\r\nHost: {host}\r\n"
            f"Authorization: Bearer {token}\r\nContent-Type: application/merge-patch+json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    sock.sendall(head + body[:-1])
    return sock, body[-1:]


def test_a_body_held_back_past_the_revocation_is_refused_and_stores_nothing(api_server, namespace, tmp_path):
    kube = Kube(api_server.kubeconfig)
    kube.request("POST", f"/api/v1/namespaces/{namespace}/configmaps",
                 {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "held"}, "data": {"k": "before"}})
    alive = grant_agent_access(kube, [namespace], tmp_path / "alive", account="agent-heldalive", expiration_seconds=600)
    gone = grant_agent_access(kube, [namespace], tmp_path / "gone", account="agent-heldgone1", expiration_seconds=600)
    try:
        # the control: an identity that still holds when its last byte arrives writes
        sock, last = _held_back_patch(alive, namespace, "written by a live identity")
        time.sleep(0.5)  # the server has the headers (a later arrival is only the ordinary case)
        sock.sendall(last)
        assert _status(sock) == 200
        sock.close()
        assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/held")["data"]["k"] == "written by a live identity"

        sock, last = _held_back_patch(gone, namespace, "written after the revocation")
        time.sleep(0.5)
        revoke_agent_access(kube, [namespace], "agent-heldgone1")  # the attempt ends
        sock.sendall(last)
        assert _status(sock) == 401
        sock.close()
        assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/held")["data"]["k"] == "written by a live identity"
    finally:
        revoke_agent_access(kube, [namespace], "agent-heldalive")
        revoke_agent_access(kube, [namespace], "agent-heldgone1")


def test_a_watch_ends_once_its_identity_is_revoked(api_server, namespace, tmp_path):
    kube = Kube(api_server.kubeconfig)
    agent = grant_agent_access(kube, [namespace], tmp_path / "watcher", account="agent-watcher01", expiration_seconds=600)
    try:
        sock = _stream(agent, f"/api/v1/namespaces/{namespace}/configmaps?watch=1&timeoutSeconds=1800")
        kube.request("POST", f"/api/v1/namespaces/{namespace}/configmaps",
                     {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "seen-while-alive"}})
        revoke_agent_access(kube, [namespace], "agent-watcher01")
        kube.request("POST", f"/api/v1/namespaces/{namespace}/configmaps",
                     {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "the-next-attempts"}})
        received = _until_the_stream_ends(sock, b"", "the watch")
        sock.close()
        assert b"seen-while-alive" in received
        # a watch may deliver what was already queued for it, but it ends: not a stream into later attempts
    finally:
        revoke_agent_access(kube, [namespace], "agent-watcher01")


def test_a_followed_log_ends_once_its_identity_is_revoked(api_server, namespace, tmp_path, monkeypatch):
    """Red-team round 10: ``kubectl logs -f`` opened during an attempt streamed the next attempts' errors for 19 minutes."""
    import asyncio

    async def endless(*_args, **kwargs):  # a container that keeps logging, as an app's pods do
        async def gen():
            n = 0
            while True:
                n += 1
                yield f"line {n}\n".encode()
                await asyncio.sleep(0.2)
        return gen()

    monkeypatch.setattr(api_server.runtime, "read_log", endless)
    running_pod(api_server, namespace, "chatty")
    kube = Kube(api_server.kubeconfig)
    agent = grant_agent_access(kube, [namespace], tmp_path / "follower", account="agent-follower1", expiration_seconds=600)
    try:
        sock = _stream(agent, f"/api/v1/namespaces/{namespace}/pods/chatty/log?follow=true")
        received = b""
        while b"line 2" not in received:  # it streams while the identity lives
            received += sock.recv(65536)
        revoke_agent_access(kube, [namespace], "agent-follower1")
        _until_the_stream_ends(sock, received, "the log")
        sock.close()
    finally:
        revoke_agent_access(kube, [namespace], "agent-follower1")


def test_an_exec_session_ends_once_its_identity_is_revoked(api_server, namespace, tmp_path):
    """Red-team round 10: exec sessions ran on past the revocation until the reset deleted their pods."""
    import asyncio

    import aiohttp

    running_pod(api_server, namespace, "shell")
    kube = Kube(api_server.kubeconfig)
    agent = grant_agent_access(kube, [namespace], tmp_path / "execer", account="agent-execer01", expiration_seconds=600)
    host, port, context, token = _identity(agent)

    async def session() -> tuple[bytes, bool]:
        url = (f"https://{host}:{port}/api/v1/namespaces/{namespace}/pods/shell/exec?container=main&stdout=true"
               f"&command=sh&command=-c&command=while+true%3B+do+echo+tick%3B+sleep+0.2%3B+done")
        received = b""
        async with aiohttp.ClientSession() as http, http.ws_connect(
                url, ssl=context, protocols=("v4.channel.k8s.io",), headers={"Authorization": f"Bearer {token}"}) as ws:
            while b"tick" not in received:  # it runs while the identity lives
                received += (await asyncio.wait_for(ws.receive(), HANG_S)).data or b""
            revoke_agent_access(kube, [namespace], "agent-execer01")
            deadline = time.monotonic() + HANG_S
            while time.monotonic() < deadline:
                msg = await asyncio.wait_for(ws.receive(), HANG_S)
                if msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING):
                    return received, True
            return received, False

    try:
        received, closed = asyncio.run(session())
        assert b"tick" in received
        assert closed, f"the exec session still runs {HANG_S:g} s after the revocation"
    finally:
        revoke_agent_access(kube, [namespace], "agent-execer01")
