"""The in-pod connect probe, run here as a plain process against a real listener."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading

from sregym_core.testing.reach import connect_args, reach


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_the_probe_tells_an_open_port_from_a_closed_one():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        open_target = f"127.0.0.1:{listener.getsockname()[1]}"
        closed_target = f"127.0.0.1:{_closed_port()}"
        out = subprocess.run(connect_args(sys.executable, open_target, closed_target), capture_output=True,
                             text=True, timeout=60)
    assert reach(out.stdout) == {open_target: "open", closed_target: "refused"}


def test_with_get_the_probe_says_whether_the_server_answered():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)

        def serve() -> None:
            conn, _ = listener.accept()
            with conn:
                assert conn.recv(1024).startswith(b"GET /stats HTTP/1.0")
                conn.sendall(b"HTTP/1.0 200 OK\r\n\r\n")

        server = threading.Thread(target=serve, daemon=True)
        server.start()
        target = f"127.0.0.1:{listener.getsockname()[1]}"
        out = subprocess.run(connect_args(sys.executable, target, get="/stats"), capture_output=True, text=True,
                             timeout=60)
        server.join(timeout=30)
    assert reach(out.stdout) == {target: "answered"}
