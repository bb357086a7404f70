"""End to end with the real Hotel Reservation app (local processes, real PostgreSQL and memcached).

Traces go over OTLP/HTTP to the trace store, every service's stdout is shipped to the log store
with the Loki push API, and real Prometheus discovers the services through the exporter's HTTP SD
(pods listed by a Kubernetes API stand-in). A fault (geo is stopped) must be visible through each
of the four signals, naming geo, and the same tools must show a healthy system after the fix.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from fake_kube import ThreadedFakeKube, kubeconfig_text, make_pod
from obs_helpers import free_port, stop_process, wait_http
from sregym_observability import tools
from sregym_observability.prometheus_config import (
    PROMETHEUS_BINARY,
    GoldenSignals,
    PrometheusSettings,
    prometheus_args,
    write_config_dir,
)
from sregym_observability.tools import Endpoints

localrun = pytest.importorskip("sregym_app_hotel_reservation.localrun")
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not shutil.which(PROMETHEUS_BINARY), reason="prometheus is not installed"),
              pytest.mark.skipif(not shutil.which("memcached"), reason="memcached is not installed")]

NAMESPACE = "hotel-reservation"


class LogShipper:
    """Tails each service's log file and pushes new lines to the Loki push API (a stand-in for the
    collector, which needs pods)."""

    def __init__(self, app, loki_url: str) -> None:
        self.app, self.url = app, loki_url
        self.offsets: dict[str, int] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        deadline = time.monotonic() + 600
        while not self.stop.is_set() and time.monotonic() < deadline:
            streams = []
            for name in localrun.SERVICE_ORDER:
                path = self.app.log_path(name)
                if not path.exists():
                    continue
                with open(path, "rb") as handle:
                    handle.seek(self.offsets.get(name, 0))
                    data = handle.read(4 * 2**20)
                cut = data.rfind(b"\n") + 1
                self.offsets[name] = self.offsets.get(name, 0) + cut
                lines = data[:cut].decode("utf-8", "replace").splitlines()
                if lines:
                    now = time.time_ns()
                    streams.append({"stream": {"namespace": NAMESPACE, "app": name, "pod": f"{name}-0",
                                               "container": name},
                                    "values": [[str(now + i), line] for i, line in enumerate(lines)]})
            if streams:
                try:
                    httpx.post(self.url + "/loki/api/v1/push", json={"streams": streams}, timeout=30)
                except httpx.HTTPError:
                    pass  # a busy machine; the lines are lost like a real agent would lose them
            self.stop.wait(0.3)


def _eventually(check, timeout: float = 60.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.5)
    raise AssertionError(f"{what} not met within {timeout}s; last: {last!r}")


def _workload(target: str, tmp: Path, *flags: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    log = open(tmp / f"workload-{port}.log", "wb")
    process = subprocess.Popen([sys.executable, "-m", "sregym_app_hotel_reservation.serve", "workload", "--target",
                                target, "--host", "127.0.0.1", "--port", str(port), "--distribution", "constant",
                                *flags], stdout=log, stderr=subprocess.STDOUT)
    log.close()
    url = f"http://127.0.0.1:{port}"
    wait_http(url + "/healthz", process)
    return process, url


def test_fault_is_found_through_every_signal_and_clears_after_the_fix(tmp_path: Path, start_component) -> None:
    logs = start_component("logs", "--no-collector")
    traces = start_component("traces")
    app = localrun.LocalApp(tmp_path / "hotel", otlp_endpoint=traces.url)
    fake = prometheus = shipper = None
    workloads: list[subprocess.Popen] = []
    try:
        app.start()
        shipper = LogShipper(app, logs.url)
        shipper.thread.start()
        fake = ThreadedFakeKube()
        for name in localrun.SERVICE_ORDER:
            pod = make_pod(NAMESPACE, f"{name}-0", app=name, containers={name: {}})
            pod["metadata"]["annotations"] = {"prometheus.io/scrape": "true",
                                              "prometheus.io/port": str(app.admin_ports[name])}
            pod["status"]["podIP"] = "127.0.0.1"
            fake.call(fake.kube.put_pod, pod)
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(kubeconfig_text(fake.url))
        exporter = start_component("exporters", "--kubeconfig", str(kubeconfig))
        settings = PrometheusSettings(discovery="http", sd_url=exporter.url,
                                      exporter_targets=(exporter.url.removeprefix("http://"),),
                                      scrape_interval="2s", evaluation_interval="1s", alert_for="2s",
                                      rate_window="10s", app_namespaces=(NAMESPACE,),
                                      # CI machines are busy; only the fault should raise alerts here.
                                      signals=GoldenSignals(latency_p95_s=5.0))
        config = write_config_dir(tmp_path / "prometheus", settings)
        port = free_port()
        with open(tmp_path / "prometheus.log", "wb") as log:
            prometheus = subprocess.Popen([PROMETHEUS_BINARY, *prometheus_args(
                config_file=str(config), data_dir=str(tmp_path / "tsdb"), listen=f"127.0.0.1:{port}")],
                stdout=log, stderr=subprocess.STDOUT)
        endpoints = Endpoints(prometheus_url=f"http://127.0.0.1:{port}", loki_url=logs.url, jaeger_url=traces.url)
        wait_http(endpoints.prometheus_url + "/-/ready", prometheus, timeout=30)
        _eventually(lambda: "8 series" in tools.get_metrics(endpoints, f'up{{namespace="{NAMESPACE}"}} == 1'),
                    what="all eight services scraped")

        # Healthy: a bounded workload; Prometheus' count of frontend requests equals the generator's own.
        # How many of them a loaded machine answers in time is not graded here (validation runs do).
        first, first_url = _workload(app.frontend_url, tmp_path, "--rate", "40", "--max-requests", "300")
        workloads.append(first)
        done = _eventually(lambda: (s := httpx.get(first_url + "/stats?window=600").json())["count"] >= 300 and s,
                           timeout=300, what="first workload finished")  # an outer bound against hangs
        assert done["content_errors"] == 0, done
        sent = done["count"]
        promql = f'sum(hotel_http_requests_total{{namespace="{NAMESPACE}", app="frontend"}})'
        _eventually(lambda: f"= {sent}" in tools.get_metrics(endpoints, promql), timeout=60,
                    what=f"Prometheus counting {sent} frontend requests")
        healthy = tools.get_alerts(endpoints)
        # state alerts only: the rate alerts (HighErrorRate, DownstreamCallsFailing) can fire on a loaded
        # machine's timeouts, which is the machine, not the app
        assert not any(f"[firing] {name}" in healthy for name in ("TargetDown", "KubePodNotReady")), healthy
        assert "search -> geo" in tools.get_dependency_graph(endpoints, 5)

        # Fault: geo goes away while traffic continues.
        steady, steady_url = _workload(app.frontend_url, tmp_path, "--rate", "10", "--duration", "240")
        workloads.append(steady)
        app.stop_service("geo")
        def geo_alerts() -> str | None:
            text = tools.get_alerts(endpoints)
            calls_to_geo = any(line.startswith("[firing] DownstreamCallsFailing") and "peer=geo" in line
                               for line in text.splitlines())
            return text if "[firing] TargetDown" in text and calls_to_geo else None

        # The failure cascades (frontend -> search also fails), but the alerts point at geo.
        alerts = _eventually(geo_alerts, timeout=90, what="alerts naming geo")
        target_down = next(line for line in alerts.splitlines() if "TargetDown" in line)
        assert "app=geo" in target_down and target_down.startswith("[firing]")
        failing_calls = (f"sum by (service, peer) (rate(hotel_rpc_client_errors_total"
                         f'{{namespace="{NAMESPACE}"}}[10s])) > 0')
        _eventually(lambda: (t := tools.get_metrics(endpoints, failing_calls)) and 'peer="geo"' in t
                    and 'service="search"' in t, timeout=30, what="error-rate metric naming geo")
        log_text = _eventually(lambda: (t := tools.get_logs(endpoints, f'{{namespace="{NAMESPACE}"}} |= "error"', 5))
                               and '"peer":"geo"' in t and t, timeout=60, what="error log naming geo")
        assert f"{NAMESPACE}/search-0" in log_text
        trace_text = _eventually(lambda: (t := tools.get_traces(endpoints, "search", 5)) and "Error spans" in t and t,
                                 timeout=60, what="error spans")
        error_lines = trace_text.split("Error spans")[1].split("Slowest spans")[0]
        assert "search / " in error_lines and "geo" in error_lines

        # Fix: geo is back; every signal turns healthy.
        app.start_service("geo")
        app.wait_ready(("geo",))
        fixed_at = time.time()
        _eventually(lambda: "TargetDown" not in (t := tools.get_alerts(endpoints))
                    and "DownstreamCallsFailing" not in t, timeout=90, what="alerts resolving")
        time.sleep(3)
        _eventually(lambda: "No series" in tools.get_metrics(endpoints, failing_calls), timeout=30,
                    what="error-rate metric back to zero")
        # callers' gRPC channels reconnect with backoff, so a failure can still be logged a few seconds
        # after geo is back: the quiet window opens once the 10 s error rate reads zero
        healthy_at = time.time()
        time.sleep(3)  # lines and spans of the window reach the stores
        since = {"start": str(int(healthy_at * 1e9)), "query": f'{{namespace="{NAMESPACE}"}} |= "rpc_failed"'}
        assert httpx.get(logs.url + "/loki/api/v1/query_range", params=since).json()["data"]["result"] == []
        recent = httpx.get(traces.url + "/api/traces", params={
            "service": "search", "start": str(int(healthy_at * 1e6)), "tags": '{"error":"true"}'}).json()
        assert recent["data"] == []
        ok = httpx.get(traces.url + "/api/traces", params={"service": "search", "start": str(int((fixed_at + 2) * 1e6))})
        assert ok.json()["data"], "traffic keeps flowing after the fix"
        def steady_recovered() -> dict | None:
            # the event: the steady workload's requests succeed again (3 or more in the last 5 s)
            stats = httpx.get(steady_url + "/stats?window=5").json()
            return stats if (stats["success_rate"] or 0) * (stats["count"] or 0) >= 3 else None

        assert _eventually(steady_recovered, timeout=120, what="the steady workload recovering")
    finally:
        for process in workloads:
            stop_process(process)
        if shipper is not None:
            shipper.stop.set()
            shipper.thread.join(5)
        if prometheus is not None:
            stop_process(prometheus)
        app.close()
        if fake is not None:
            fake.close()
