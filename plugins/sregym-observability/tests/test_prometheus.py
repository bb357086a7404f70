"""Real Prometheus (/usr/bin/prometheus) with the generated config, rules and HTTP discovery.

A fake Kubernetes API (real HTTP) lists an annotated app pod whose metrics come from a local
prometheus_client server with a known request rate, and a crash-looping pod the exporter reports.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest
from fake_kube import ThreadedFakeKube, kubeconfig_text, make_pod
from obs_helpers import free_port, stop_process, wait_http
from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server
from sregym_observability import tools
from sregym_observability.prometheus_config import (
    PROMETHEUS_BINARY,
    PrometheusSettings,
    prometheus_args,
    supports_kubernetes_sd,
    write_config_dir,
)
from sregym_observability.tools import Endpoints

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not shutil.which(PROMETHEUS_BINARY), reason="prometheus is not installed")]

OK_PER_TICK, ERRORS_PER_TICK, TICK_S = 8, 2, 0.1  # 100 requests/s, 20 % errors


class Workload:
    """Counts its own requests, like the workload generator whose count the test checks against."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter("hotel_http_requests_total", "requests", ["service", "endpoint", "code"],
                                registry=registry)
        self.latency = Histogram("hotel_http_latency_seconds", "latency", ["service", "endpoint"],
                                 buckets=(0.05, 0.1, 0.25, 0.5, 1.0), registry=registry)
        self.sent = 0
        self.history: list[tuple[float, int]] = [(time.monotonic(), 0)]  # (when, sent so far)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        deadline = time.monotonic() + 120  # bounded even if the test hangs
        while not self.stop.is_set() and time.monotonic() < deadline:
            self.requests.labels("frontend", "/hotels", "200").inc(OK_PER_TICK)
            self.requests.labels("frontend", "/hotels", "500").inc(ERRORS_PER_TICK)
            for _ in range(OK_PER_TICK + ERRORS_PER_TICK):
                self.latency.labels("frontend", "/hotels").observe(0.3)
            self.sent += OK_PER_TICK + ERRORS_PER_TICK
            self.history.append((time.monotonic(), self.sent))
            time.sleep(TICK_S)

    def sent_at(self, when: float) -> int:
        """How many requests had been sent at monotonic time ``when`` (the generator's own count)."""
        return max((sent for at, sent in self.history if at <= when), default=0)


class Spans:
    """Sends the app's spans to the trace store as its OTLP exporter would: 20 % server errors in
    namespace hotel, and healthy spans of another namespace."""

    def __init__(self, url: str) -> None:
        self.url, self.stop = url, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _payload(self, tick: int) -> dict:
        def spans(namespace: str, errors: int) -> dict:
            return {"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "frontend"}},
                                                {"key": "service.namespace", "value": {"stringValue": namespace}}]},
                    "scopeSpans": [{"spans": [{
                        "traceId": f"{tick:016x}{index:08x}{len(namespace):08x}", "spanId": f"{tick:08x}{index:08x}",
                        "name": "GET /hotels", "kind": 2, "startTimeUnixNano": str(time.time_ns() - 300_000_000),
                        "endTimeUnixNano": str(time.time_ns()), "status": {"code": 2 if index < errors else 0}}
                        for index in range(OK_PER_TICK + ERRORS_PER_TICK)]}]}
        return {"resourceSpans": [spans("hotel", ERRORS_PER_TICK), spans("elsewhere", 0)]}

    def _run(self) -> None:
        deadline, tick = time.monotonic() + 120, 0  # bounded even if the test hangs
        while not self.stop.is_set() and time.monotonic() < deadline:
            tick += 1
            httpx.post(self.url + "/v1/traces", json=self._payload(tick), timeout=10).raise_for_status()
            time.sleep(TICK_S * 5)


def _query(url: str, promql: str) -> list[dict]:
    body = httpx.get(url + "/api/v1/query", params={"query": promql}, timeout=10).json()
    assert body["status"] == "success", body
    return body["data"]["result"]


def _eventually(check, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            result = check()
            if result:
                return result
        except (AssertionError, httpx.HTTPError, KeyError, IndexError) as err:
            last = err
        time.sleep(0.5)
    raise AssertionError(f"condition not met within {timeout}s (last error: {last})")


def test_generated_config_passes_promtool_in_the_supported_discovery_mode(tmp_path: Path) -> None:
    # Debian's build lacks kubernetes_sd_configs; that is why discovery="http" exists.
    has_k8s_sd = supports_kubernetes_sd()
    for mode in ("kubernetes", "http"):
        settings = PrometheusSettings(discovery=mode, api_server="https://127.0.0.1:6443", ca_file="/x/ca.crt",
                                      bearer_token_file="/x/token", app_namespaces=("hotel",))
        config = write_config_dir(tmp_path / mode, settings)
        check = subprocess.run(["promtool", "check", "config", str(config)], capture_output=True, text=True)
        valid = mode == "http" or has_k8s_sd
        assert (check.returncode == 0) == valid, check.stdout + check.stderr
        if valid:
            assert "28 rules found" in check.stdout + check.stderr  # ours, and 9 under upstream's names


def test_real_prometheus_rates_quantiles_alerts_and_discovery(tmp_path: Path, start_component) -> None:
    registry = CollectorRegistry()
    workload = Workload(registry)
    metrics_port = free_port()
    metrics_server, metrics_thread = start_http_server(metrics_port, addr="127.0.0.1", registry=registry)
    fake = ThreadedFakeKube()
    prometheus = None
    spans: Spans | None = None
    try:
        app_pod = make_pod("hotel", "frontend-1", app="frontend", containers={"frontend": {}})
        app_pod["metadata"]["annotations"] = {"prometheus.io/scrape": "true", "prometheus.io/port": str(metrics_port),
                                              "prometheus.io/path": "/metrics"}
        app_pod["status"]["podIP"] = "127.0.0.1"
        crashing = make_pod("hotel", "geo-1", app="geo", ready=False, containers={"geo": {
            "ready": False, "restartCount": 5, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}})
        unrelated = make_pod("elsewhere", "noise-1", app="noise", containers={"noise": {}})
        for pod in (app_pod, crashing, unrelated):
            fake.call(fake.kube.put_pod, pod)
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(kubeconfig_text(fake.url))
        exporter = start_component("exporters", "--kubeconfig", str(kubeconfig))
        exporter_hostport = exporter.url.removeprefix("http://")
        traces = start_component("traces")
        spans = Spans(traces.url)

        settings = PrometheusSettings(discovery="http", sd_url=exporter.url, exporter_targets=(exporter_hostport,),
                                      traces_targets=(traces.url.removeprefix("http://"),),
                                      scrape_interval="1s", evaluation_interval="1s", alert_for="2s",
                                      upstream_alert_for="2s", app_namespaces=("hotel",))
        config = write_config_dir(tmp_path / "prometheus", settings)
        port = free_port()
        log = open(tmp_path / "prometheus.log", "wb")
        prometheus = subprocess.Popen(
            [PROMETHEUS_BINARY, *prometheus_args(config_file=str(config), data_dir=str(tmp_path / "data"),
                                                 listen=f"127.0.0.1:{port}")],
            stdout=log, stderr=subprocess.STDOUT)
        log.close()
        url = f"http://127.0.0.1:{port}"
        wait_http(url + "/-/ready", prometheus, timeout=30)
        workload.thread.start()
        spans.thread.start()

        # Discovery: the annotated pod is scraped with namespace/pod/app target labels.
        up = _eventually(lambda: _query(url, 'up{job="kubernetes-pods"} == 1'))
        assert up[0]["metric"]["namespace"] == "hotel" and up[0]["metric"]["pod"] == "frontend-1"
        assert up[0]["metric"]["app"] == "frontend" and up[0]["metric"]["instance"] == f"127.0.0.1:{metrics_port}"
        assert len(_query(url, 'up{job="kubernetes-pods"}')) == 1  # the unannotated pod is not a target

        # rate(): ~100 requests/s over the last 10 s, as the workload generated them.
        def steady_rate():
            result = _query(url, 'sum(rate(hotel_http_requests_total{namespace="hotel"}[10s]))')
            return result and float(result[0]["value"][1]) > 0 and time.monotonic() - started > 12 and result

        started = time.monotonic()
        result = _eventually(steady_rate)
        now = time.monotonic()
        # Compare with what the generator itself counted over the same window (a busy machine slows it).
        achieved = (workload.sent_at(now) - workload.sent_at(now - 10)) / 10
        assert achieved > 0
        assert abs(float(result[0]["value"][1]) - achieved) < 0.3 * achieved, (result, achieved)

        # The scraped counter matches the workload's own count, less what arrived since the last scrape.
        asked = time.monotonic()
        total = float(_query(url, 'sum(hotel_http_requests_total{namespace="hotel"})')[0]["value"][1])
        assert workload.sent_at(asked - 4) <= total <= workload.sent, (total, workload.sent)

        ratio = float(_query(url, 'sum(rate(hotel_http_requests_total{code=~"5.."}[10s])) / '
                                  'sum(rate(hotel_http_requests_total[10s]))')[0]["value"][1])
        assert 0.15 < ratio < 0.25

        p95 = float(_query(url, "histogram_quantile(0.95, sum by (le) "
                                "(rate(hotel_http_latency_seconds_bucket[10s])))")[0]["value"][1])
        assert 0.25 < p95 <= 0.5  # suite-rules: synthetic (every request observes 0.3 s; nothing is timed)

        # kube-state-metrics names through the exporter job.
        restarts = _eventually(lambda: _query(url, 'kube_pod_container_status_restarts_total{pod="geo-1"}'))
        assert float(restarts[0]["value"][1]) == 5 and restarts[0]["metric"]["namespace"] == "hotel"

        # Alerts: the golden-signal and workload-health rules fire for the app namespace only.
        def firing():
            alerts = httpx.get(url + "/api/v1/alerts", timeout=10).json()["data"]["alerts"]
            names = {(a["labels"]["alertname"], a["state"]) for a in alerts}
            needed = {("HighErrorRate", "firing"), ("KubePodCrashLooping", "firing"), ("KubePodNotReady", "firing"),
                      # the same conditions under upstream's names: the waiting reason, the span error share
                      ("PodStatusError", "firing"), ("HighRequestErrorRate", "firing")}
            return needed <= names and alerts

        alerts = _eventually(firing, timeout=60)
        status_error = next(a for a in alerts if a["labels"]["alertname"] == "PodStatusError")
        assert status_error["labels"]["pod"] == "geo-1" and status_error["labels"]["reason"] == "CrashLoopBackOff"
        span_errors = next(a for a in alerts if a["labels"]["alertname"] == "HighRequestErrorRate")
        assert (span_errors["labels"]["namespace"], span_errors["labels"]["service_name"]) == ("hotel", "frontend")
        assert span_errors["labels"]["severity"] == "critical"
        # the app's request metrics under upstream's span-metric names, in the app's namespace
        calls = _query(url, 'sum by (namespace, status_code) (traces_span_metrics_calls_total{service_name="frontend"})')
        assert {(c["metric"]["namespace"], c["metric"]["status_code"]) for c in calls} == {
            ("hotel", "STATUS_CODE_ERROR"), ("hotel", "STATUS_CODE_UNSET"), ("elsewhere", "STATUS_CODE_UNSET")}
        error_alert = next(a for a in alerts if a["labels"]["alertname"] == "HighErrorRate")
        assert error_alert["labels"]["namespace"] == "hotel" and error_alert["labels"]["service"] == "frontend"
        assert "fail" in error_alert["annotations"]["summary"]
        assert not any(a["labels"].get("namespace") == "elsewhere" for a in alerts)

        # The agents' tools over the same Prometheus.
        endpoints = Endpoints(prometheus_url=url)
        alert_text = tools.get_alerts(endpoints)
        assert alert_text.splitlines()[1].startswith("[firing] ")
        assert "HighErrorRate (critical)" in alert_text and "pod=geo-1" in alert_text
        metrics_text = tools.get_metrics(endpoints, 'sum by (code) (rate(hotel_http_requests_total[10s]))')
        assert metrics_text.startswith("2 series (largest first):")
        assert metrics_text.splitlines()[1].startswith('{code="200"}')
        assert "bad_data" in tools.get_metrics(endpoints, "rate(hotel_http_requests_total)")
        assert tools.get_metrics(endpoints, "no_such_metric").startswith("No series matched")
    finally:
        workload.stop.set()
        if spans is not None:
            spans.stop.set()
        if prometheus is not None:
            stop_process(prometheus)
        metrics_server.shutdown()
        fake.close()
