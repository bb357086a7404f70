"""The ingress controller's nginx configuration: which Ingresses a class serves, and what Debian's
nginx really does with the rendered configuration (routing by host and path type, 503 for a missing
Service, the default server's 404, TLS from the Ingress's Secret). No cluster: nginx runs on
127.0.0.1 in front of a local HTTP server, started and stopped by PID here."""

from __future__ import annotations

import http.client
import http.server
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest

from sregym_cluster_embedded.ingress import render
from sregym_cluster_embedded.ingress.controller import default_certificate

CLASSES = [{"metadata": {"name": "nginx", "annotations": {}}, "spec": {"controller": render.CONTROLLER}},
           {"metadata": {"name": "other"}, "spec": {"controller": "example.com/other"}}]


def _ingress(name, *, cls="nginx", rules=(), tls=(), created="2026-01-01T00:00:00Z", annotations=None, ns="shop"):
    return {"metadata": {"name": name, "namespace": ns, "creationTimestamp": created, "uid": name,
                         "annotations": annotations or {}},
            "spec": {**({"ingressClassName": cls} if cls else {}), "rules": list(rules), "tls": list(tls)}}


def _rule(host, *paths):
    return {"host": host, "http": {"paths": [{"path": p, "pathType": t, "backend": {"service": {
        "name": s, "port": {"number": port} if isinstance(port, int) else {"name": port}}}} for p, t, s, port in paths]}}


def test_a_controller_serves_its_classes_and_the_default_class_only():
    mine, theirs, none = _ingress("a"), _ingress("b", cls="other"), _ingress("c", cls=None)
    legacy = _ingress("d", cls=None, annotations={render.CLASS_ANNOTATION: "nginx"})
    assert [i["metadata"]["name"] for i in render.served([mine, theirs, none, legacy], CLASSES)] == ["a", "d"]
    default = [{**CLASSES[0], "metadata": {"name": "nginx", "annotations": {render.DEFAULT_CLASS_ANNOTATION: "true"}}}]
    assert [i["metadata"]["name"] for i in render.served([mine, none], default)] == ["a", "c"]
    assert render.served([_ingress("e", cls="nginx-internal")], CLASSES) == []


def test_backends_resolve_service_ports_by_number_or_name():
    services = {"shop/web": {"spec": {"clusterIP": "127.9.0.5", "ports": [{"name": "http", "port": 8080}]}}}
    assert render.resolve_backend("shop", {"service": {"name": "web", "port": {"name": "http"}}}, services).address \
        == "127.9.0.5:8080"
    assert render.resolve_backend("shop", {"service": {"name": "web", "port": {"number": 9}}}, services).address is None
    assert render.resolve_backend("shop", {"service": {"name": "gone", "port": {"number": 80}}}, services).address is None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Echo(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - the stdlib's name
        body = f"{self.server.server_port} {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def backends():
    servers = [http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Echo) for _ in range(2)]
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    yield [s.server_port for s in servers]
    for s in servers:
        s.shutdown()
        s.server_close()


def _get(url: str, host: str, context: ssl.SSLContext | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url, headers={"Host": host})
    try:
        with urllib.request.urlopen(req, timeout=5, context=context) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.mark.skipif(shutil.which("nginx", path="/usr/sbin:/usr/bin") is None, reason="Debian's nginx is not installed")
def test_nginx_routes_what_the_ingresses_say(tmp_path, backends):
    web, api = backends
    services = {"shop/web": {"spec": {"clusterIP": "127.0.0.1", "ports": [{"name": "http", "port": web}]}},
                "shop/api": {"spec": {"clusterIP": "127.0.0.1", "ports": [{"port": api}]}}}
    cert = default_certificate(tmp_path / "default.pem")
    ingresses = [_ingress("shop", rules=[_rule("shop.test", ("/", "Prefix", "web", "http"),
                                               ("/api", "Prefix", "api", api), ("/exact", "Exact", "api", api),
                                               ("/missing", "Prefix", "gone", 80))],
                          tls=[{"hosts": ["shop.test"], "secretName": "shop-tls"}]),
                 # a later Ingress claiming the same host and path loses
                 _ingress("late", created="2026-02-01T00:00:00Z", rules=[_rule("shop.test", ("/", "Prefix", "api", api))])]
    http_port, https_port = _free_port(), _free_port()
    text = render.render(render.servers(render.served(ingresses, CLASSES), services, {"shop/shop-tls": cert}, cert),
                         run_dir=str(tmp_path), access_log=str(tmp_path / "access.log"), http_port=http_port,
                         https_port=https_port).replace(f"listen {render.HEALTH_PORT};", f"listen 127.0.0.1:{_free_port()};")
    text = text.replace(f"listen {http_port}", f"listen 127.0.0.1:{http_port}").replace(
        f"listen {https_port}", f"listen 127.0.0.1:{https_port}")
    conf = tmp_path / "nginx.conf"
    conf.write_text(text)
    nginx = shutil.which("nginx", path="/usr/sbin:/usr/bin")
    check = subprocess.run([nginx, "-t", "-c", str(conf), "-e", "stderr"], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    proc = subprocess.Popen([nginx, "-c", str(conf), "-e", str(tmp_path / "error.log"), "-g", "daemon off;"])
    try:
        base = f"http://127.0.0.1:{http_port}"
        for _ in range(50):
            try:
                socket.create_connection(("127.0.0.1", https_port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        context = ssl.create_default_context(cafile=cert)
        context.check_hostname = False  # the fake certificate names ingress.local
        https = f"https://127.0.0.1:{https_port}"
        assert _get(f"{https}/hotels?x=1", "shop.test", context) == (200, f"{web} /hotels?x=1")
        assert _get(f"{https}/api", "shop.test", context) == (200, f"{api} /api")
        assert _get(f"{https}/api/v1", "shop.test", context) == (200, f"{api} /api/v1")
        assert _get(f"{https}/apiary", "shop.test", context) == (200, f"{web} /apiary")  # whole path elements
        assert _get(f"{https}/exact", "shop.test", context)[1].startswith(str(api))
        assert _get(f"{https}/exact/more", "shop.test", context)[1].startswith(str(web))
        assert _get(f"{https}/missing/x", "shop.test", context)[0] == 503
        assert _get(f"{base}/", "other.test") == (404, "default backend - 404\n")
        # plain HTTP to a TLS host: redirected to HTTPS
        conn = http.client.HTTPConnection("127.0.0.1", http_port, timeout=5)
        conn.request("GET", "/hotels", headers={"Host": "shop.test"})
        resp = conn.getresponse()
        assert (resp.status, resp.getheader("Location")) == (308, "https://shop.test/hotels")
        conn.close()
    except urllib.error.URLError as exc:
        pytest.fail(f"nginx did not answer: {exc}: {(tmp_path / 'error.log').read_text()[-2000:]}")
    finally:
        proc.send_signal(signal.SIGQUIT)
        proc.wait(timeout=10)


class _FakeApi:
    """The API calls the controller makes, answered from dicts and recorded."""

    def __init__(self, ingresses, service):
        self.ingresses, self.service, self.calls = ingresses, service, []

    def request(self, method, path, body=None, content_type="application/json"):
        self.calls.append((method, path, body))
        if method == "GET" and path.endswith("/services/ingress-nginx-controller"):
            return self.service
        return {}

    def items(self, path):
        return self.ingresses if "ingresses" in path else CLASSES if "ingressclasses" in path else []


def test_the_controller_publishes_its_address_clears_it_when_dropped_and_records_sync_once():
    import argparse

    from sregym_cluster_embedded.ingress.controller import Controller

    address = [{"ip": "127.46.1.1"}]
    served = _ingress("served")
    dropped = _ingress("dropped", cls="nginx-internal")
    dropped["status"] = {"loadBalancer": {"ingress": address}}  # published before the class changed
    foreign = _ingress("foreign", cls="other")
    foreign["status"] = {"loadBalancer": {"ingress": [{"ip": "10.0.0.9"}]}}  # another controller's
    api = _FakeApi([served, dropped, foreign], {"status": {"loadBalancer": {"ingress": address}}})
    args = argparse.Namespace(controller_class=render.CONTROLLER, ingress_class="nginx",
                              publish_service="ingress-nginx/ingress-nginx-controller")
    controller = Controller(api, args, "nginx")
    mine = render.served(api.ingresses, CLASSES)
    controller.status(api.ingresses, mine)
    patches = {path.split("/")[-2]: body for method, path, body in api.calls if method == "PATCH"}
    assert patches == {"served": {"status": {"loadBalancer": {"ingress": address}}},
                       "dropped": {"status": {"loadBalancer": {"ingress": None}}}}
    controller.events(mine)
    controller.events(mine)
    events = [body for method, path, body in api.calls if method == "POST" and path.endswith("/events")]
    assert [(e["reason"], e["message"], e["involvedObject"]["name"], e["source"]["component"]) for e in events] == [
        ("Sync", "Scheduled for sync", "served", "nginx-ingress-controller")]


def test_nothing_outside_the_host_and_path_grammar_reaches_nginx_conf(tmp_path):
    """Defence in depth behind the API server's validation (issue 34, attack 3): a host or path that
    would add nginx directives (a location serving the controller's token) is never rendered."""
    token_dir = "/var/run/secrets/kubernetes.io/serviceaccount"
    host = f"evil.test; location /t {{ alias {token_dir}/; }} server_name x"
    ingress = _ingress("evil", rules=[_rule(host, ("/", "Prefix", "web", 80)),
                                      _rule("ok.test", ("/a;alias /etc/;#", "Prefix", "web", 80),
                                            ("/fine", "Prefix", "web", 80))],
                       annotations={render.REWRITE_ANNOTATION: '/x"; alias /etc; #'})
    services = {"shop/web": {"spec": {"clusterIP": "127.0.0.1", "ports": [{"port": 80}]}}}
    text = render.render(render.servers(render.served([ingress], CLASSES), services, {}, "/d.pem"),
                         run_dir=str(tmp_path), access_log=str(tmp_path / "a.log"))
    assert token_dir not in text and "evil.test" not in text
    # the annotation stays one quoted token (nginx reads ';' and '#' inside quotes literally)
    assert '"/x;alias/etc;#" break;' in text and not any(line.strip().startswith("alias") for line in text.splitlines())
    assert "server_name ok.test;" in text and '"/fine/"' in text
    assert render.valid_host("*.shop.test") and not render.valid_host("*shop.test")
    assert not render.valid_path("/a b") and not render.valid_path("/a{") and render.valid_path("/api/v1")
