"""The load generator's route through an Ingress: the public name pinned to the controller, the
certificate verified against the app's CA (a local TLS server stands in for the controller)."""

from __future__ import annotations

import datetime as dt
import http.server
import ssl
import threading
import urllib.error
import urllib.request

import pytest
from sregym_appkit import ingress

from sregym_app_train_ticket.workload import route_opener


class _Ok(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        body = self.headers["Host"].encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("expired", [False, True])
def test_users_reach_the_pinned_name_only_with_a_valid_certificate(tmp_path, expired):
    ca_cert, ca_key = ingress.new_ca("test CA")
    now = dt.datetime.now(dt.UTC)
    dates = {"not_before": now - dt.timedelta(days=40), "not_after": now - dt.timedelta(days=3)} if expired else {}
    cert, key = ingress.issue(ca_cert, ca_key, ["trains.test"], **dates)
    (tmp_path / "c.pem").write_bytes(cert + key)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(tmp_path / "c.pem")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base, opener = route_opener({"url": "https://trains.test/", "connect": f"127.0.0.1:{server.server_port}",
                                     "ca": ca_cert.decode()})
        assert base == "https://trains.test"
        if expired:
            with pytest.raises(urllib.error.URLError, match="certificate has expired"):
                opener.open(base + "/api", timeout=5)
        else:
            with opener.open(base + "/api", timeout=5) as resp:
                assert (resp.status, resp.read()) == (200, b"trains.test")
    finally:
        server.shutdown()
        server.server_close()


def test_bad_routes_are_refused():
    for route in ({"url": "https://x"}, {"url": "ftp://x", "connect": "a:1"}, {"url": "https://x", "connect": "a:1", "z": 1}):
        with pytest.raises(ValueError):
            route_opener(route)
