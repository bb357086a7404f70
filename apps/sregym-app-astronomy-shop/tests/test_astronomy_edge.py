"""The edge-filter ReDoS fault without a cluster: the ConfigMap round trip, and Debian's nginx
(the edge proxy's image) really burning CPU on the injected filter and not on the fixed one."""

from __future__ import annotations

import http.client
import shutil
import socket
import subprocess
import time
from pathlib import Path

import psutil
import pytest
from sregym_app_astronomy_shop import edgefilter
from sregym_app_astronomy_shop.app import app_spec
from sregym_app_astronomy_shop.manifests import NGINX_CONF
from sregym_app_astronomy_shop.scanner import PROBE_PATH, settings
from sregym_app_astronomy_shop.topology import WORKLOAD_NAMESPACE

from sregym_core.testing.recording import RecordingFaultContext
from sregym_core.types import Target


def _ctx(tmp_path):
    """A recorded cluster holding the shipped proxy configuration (it runs no pods: the wait for the
    restarted proxy is stubbed by the tests' ``no_pods`` fixture)."""
    spec = app_spec()
    ctx = RecordingFaultContext(kubeconfig=tmp_path / "kubeconfig", namespace=spec.namespace, app=spec).child()
    ctx._store({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "frontend-proxy-config",
                                                                      "namespace": spec.namespace},
                "data": {"nginx.conf": NGINX_CONF}})
    return spec, ctx, Target(app=spec, component=spec.component("frontend-proxy"), namespace=spec.namespace)


def _conf(ctx, spec):
    return ctx.objects[("ConfigMap", spec.namespace, "frontend-proxy-config")]["data"]["nginx.conf"]


@pytest.fixture
def no_pods(monkeypatch):
    monkeypatch.setattr(edgefilter.kube, "wait_until", lambda check, timeout=30.0, interval=0.5: True)


def test_inject_adds_the_filter_and_the_scanner_the_fix_rewrites_the_regex_recover_restores(tmp_path, no_pods):
    spec, ctx, target = _ctx(tmp_path)
    edgefilter.inject(ctx, target, {})
    conf = _conf(ctx, spec)
    assert edgefilter.BAD_PATTERN in conf and conf.index("location /api/") < conf.index("location / {")
    assert edgefilter.is_present(ctx, target, {})
    scanner = ctx.objects[("Deployment", WORKLOAD_NAMESPACE, "edge-scanner")]
    container = scanner["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == ["edge-scanner"] and container["resources"]["limits"]["cpu"] == "200m"
    assert any(c[:2] == ("delete", "pods") for c in ctx.calls)  # nginx restarted to load the filter

    edgefilter.reference_fix(ctx, target, {})
    fixed = _conf(ctx, spec)
    assert not edgefilter.is_present(ctx, target, {})
    assert edgefilter.GOOD_PATTERN in fixed and "location /api/" in fixed
    assert ("Deployment", WORKLOAD_NAMESPACE, "edge-scanner") in ctx.objects  # the fix leaves the attack running

    edgefilter.recover(ctx, target, {})
    assert _conf(ctx, spec) == NGINX_CONF
    assert ("Deployment", WORKLOAD_NAMESPACE, "edge-scanner") not in ctx.objects


def test_recover_without_saved_state_takes_the_filter_out(tmp_path, no_pods):
    spec, ctx, target = _ctx(tmp_path)
    edgefilter.inject(ctx, target, {})
    stateless = ctx.child()  # another process's recover: no saved original
    edgefilter.recover(stateless, target, {})
    assert _conf(stateless, spec) == NGINX_CONF


def test_the_scanner_is_bounded():
    conf = settings({"SCANNER_CONCURRENCY": "500", "SCANNER_RPS": "1e6", "SCANNER_DURATION_S": "1e9"})
    assert conf["concurrency"] == 8 and conf["rps"] == 20.0 and conf["duration_s"] == 6 * 3600
    assert settings({})["concurrency"] == 2 and settings({})["target"].startswith("http://frontend-proxy.")
    assert "%27%20OR%201=1" in PROBE_PATH


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _nginx(tmp_path: Path, conf: str):
    """The edge proxy's configuration on loopback: its own pid, log and temp paths, upstreams refused."""
    port, dead = _free_port(), _free_port()
    conf = (conf.replace("listen 8080;", f"listen 127.0.0.1:{port};")
            .replace("frontend:8080", f"127.0.0.1:{dead}").replace("image-provider:8081", f"127.0.0.1:{dead}")
            .replace("/tmp/", f"{tmp_path}/"))
    path = tmp_path / "nginx.conf"
    path.write_text(conf)
    proc = subprocess.Popen(["nginx", "-c", str(path), "-e", str(tmp_path / "error.log"), "-g", "daemon off;"],
                            stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    return proc, port


def _get(port: int, path: str) -> tuple[int, float]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    start = time.monotonic()
    conn.request("GET", path)
    status = conn.getresponse().status
    conn.close()
    return status, time.monotonic() - start


def _worker_cpu(proc) -> float:
    return sum(c.cpu_times().user + c.cpu_times().system for c in psutil.Process(proc.pid).children())


@pytest.mark.skipif(shutil.which("nginx") is None, reason="needs Debian's nginx (the edge proxy's image)")
@pytest.mark.parametrize("pattern", ["bad", "good"])
def test_nginx_backtracks_on_the_probe_with_the_injected_regex_and_not_with_the_fixed_one(tmp_path, pattern):
    regex = edgefilter.BAD_PATTERN if pattern == "bad" else edgefilter.GOOD_PATTERN
    proc, port = _nginx(tmp_path, edgefilter.with_filter(NGINX_CONF, regex))
    try:
        assert _get(port, "/healthz")[0] == 200
        # real users' paths pass the filter (and reach the upstream, refused here: 502)
        for path in ("/api/products/OLJCESPC7Z", "/api/orders/1b4e28ba-2fa1-11d2-883f-0016d3cca427", "/api/cart"):
            assert _get(port, path)[0] == 502, path
        before = _worker_cpu(proc)
        statuses = [_get(port, PROBE_PATH)[0] for _ in range(3)]
        burnt = (_worker_cpu(proc) - before) / 3
        if pattern == "bad":
            # PCRE2 gives up at its match limit: an internal error, after tenths of a second of CPU
            assert statuses == [500] * 3 and burnt > 0.05, (statuses, burnt)
            assert "pcre2_match() failed: -47" in (tmp_path / "error.log").read_text()
        else:
            # CPU time is counted in 10 ms clock ticks: three requests may be charged a tick each on a
            # busy machine; the injected regex costs ten times more than that
            assert statuses == [400] * 3 and burnt < 0.02, (statuses, burnt)
    finally:
        proc.terminate()
        proc.wait(10)
