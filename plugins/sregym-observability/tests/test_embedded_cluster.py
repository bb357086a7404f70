"""The log collector, exporters and HTTP SD against the real embedded cluster's API server.

Skipped when ``sregym_cluster_embedded`` is not installed. The observability servers run as local
processes with the cluster's admin kubeconfig (as they would with a service-account token in a pod).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from sregym_observability import tools
from sregym_observability.tools import Endpoints

cluster = pytest.importorskip("sregym_cluster_embedded.cluster")
pytestmark = [pytest.mark.slow, pytest.mark.apps]  # a cluster with the observability stack: the live lane

KUBECTL = str(Path(__file__).resolve().parents[3] / ".venv" / "bin" / "kubectl")


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    home = tmp_path_factory.mktemp("sregym-home")
    previous = os.environ.get("SREGYM_HOME")
    os.environ["SREGYM_HOME"] = str(home)
    name = f"obs{os.getpid() % 100000}"
    try:
        try:
            info = cluster.up(name, 1, timeout=90)
        except Exception as err:  # noqa: BLE001 - an embedded cluster that cannot start here is a skip
            pytest.skip(f"embedded cluster did not start: {err}")
        yield str(info.kubeconfig)
    finally:
        try:
            cluster.down(name, forget=True)
        finally:
            if previous is None:
                os.environ.pop("SREGYM_HOME", None)
            else:
                os.environ["SREGYM_HOME"] = previous


def _kubectl(kubeconfig: str, *args: str, stdin: str | None = None) -> str:
    kubectl = KUBECTL if Path(KUBECTL).exists() else "kubectl"
    result = subprocess.run([kubectl, "--kubeconfig", kubeconfig, *args], input=stdin, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def _wait(check, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.3)
    raise AssertionError(f"condition not met within {timeout}s")


def test_collector_exporters_and_sd_on_the_embedded_cluster(embedded: str, start_component) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "talker", "namespace": "default", "labels": {"app": "talker"},
                        "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9999"}},
           "spec": {"containers": [{"name": "main", "image": "busybox", "command": [
               "sh", "-c", "for i in 1 2 3 4 5; do echo \"request $i failed: connection refused\"; sleep 0.2; done; "
                           "sleep 600"]}]}}
    _kubectl(embedded, "apply", "-f", "-", stdin=json.dumps(pod))
    logs = start_component("logs", "--kubeconfig", embedded)
    exporters = start_component("exporters", "--kubeconfig", embedded)

    endpoints = Endpoints(loki_url=logs.url)
    text = _wait(lambda: (t := tools.get_logs(endpoints, "talker", 5)) and "request 5 failed" in t and t)
    assert "default/talker[main]" in text and "5 lines" in text
    labels = httpx.get(logs.url + "/loki/api/v1/label/node/values").json()["data"]
    assert labels and all(v.startswith("node-") for v in labels)

    def restarts_series():
        body = httpx.get(exporters.url + "/metrics").text
        return [line for line in body.splitlines()
                if line.startswith("kube_pod_container_status_restarts_total{") and 'pod="talker"' in line]

    assert _wait(restarts_series)[0].endswith(" 0")
    metrics = httpx.get(exporters.url + "/metrics").text
    assert 'kube_node_status_condition{node="node-1",condition="Ready",status="true"} 1' in metrics
    assert 'kube_namespace_status_phase{namespace="default",phase="Active"} 1' in metrics

    groups = httpx.get(exporters.url + "/sd/pods", params={"namespace": "default"}).json()
    talker = next(g for g in groups if g["labels"]["__meta_kubernetes_pod_name"] == "talker")
    assert talker["labels"]["__meta_kubernetes_pod_annotation_prometheus_io_scrape"] == "true"
    assert talker["targets"][0].startswith("127.")


METRICS_SERVER = (
    "import http.server as h\n"
    "n = [0]\n"
    "class H(h.BaseHTTPRequestHandler):\n"
    "    def do_GET(self):\n"
    "        n[0] += 1\n"
    "        body = ('# TYPE demo_requests_total counter\\ndemo_requests_total{code=\"500\"} %d\\n' % (n[0] * 10)).encode()\n"
    "        self.send_response(200); self.send_header('Content-Type', 'text/plain'); self.end_headers()\n"
    "        self.wfile.write(body)\n"
    "    def log_message(self, *a): pass\n"
    "h.HTTPServer(('0.0.0.0', 8080), H).serve_forever()\n")


@pytest.mark.skipif(not Path("/usr/bin/prometheus").exists(), reason="prometheus is not installed")
def test_real_prometheus_discovers_and_alerts_on_the_embedded_cluster(embedded: str, start_component,
                                                                       tmp_path: Path) -> None:
    from obs_helpers import free_port, stop_process, wait_http
    from sregym_observability.prometheus_config import PrometheusSettings, prometheus_args, write_config_dir

    _kubectl(embedded, "create", "namespace", "demo")
    objects = [
        {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": "web", "namespace": "demo", "labels": {"app": "web"},
                      "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "8080"}},
         "spec": {"containers": [{"name": "web", "image": "python:3.11", "command": ["python", "-c", METRICS_SERVER],
                                  "ports": [{"containerPort": 8080}]}]}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "crasher", "namespace": "demo", "labels": {"app": "crasher"}},
         "spec": {"containers": [{"name": "main", "image": "busybox", "command": ["sh", "-c", "echo dying; exit 3"]}]}},
    ]
    _kubectl(embedded, "apply", "-f", "-", stdin=yaml.safe_dump_all(objects))
    exporters = start_component("exporters", "--kubeconfig", embedded)
    settings = PrometheusSettings(discovery="http", sd_url=exporters.url,
                                  exporter_targets=(exporters.url.removeprefix("http://"),), scrape_interval="1s",
                                  evaluation_interval="1s", alert_for="1s", app_namespaces=("demo",))
    config = write_config_dir(tmp_path / "prom", settings)
    port = free_port()
    with open(tmp_path / "prometheus.log", "wb") as log:
        prometheus = subprocess.Popen(["/usr/bin/prometheus", *prometheus_args(
            config_file=str(config), data_dir=str(tmp_path / "tsdb"), listen=f"127.0.0.1:{port}")],
            stdout=log, stderr=subprocess.STDOUT)
    try:
        endpoints = Endpoints(prometheus_url=f"http://127.0.0.1:{port}")
        wait_http(endpoints.prometheus_url + "/-/ready", prometheus, timeout=30)
        up = _wait(lambda: (t := tools.get_metrics(endpoints, 'up{job="kubernetes-pods"} == 1')) and "1 series" in t
                   and t, timeout=60)
        assert 'namespace="demo"' in up and 'pod="web"' in up and 'app="web"' in up
        rate = _wait(lambda: (t := tools.get_metrics(endpoints, 'sum(rate(demo_requests_total{namespace="demo"}[5s]))'))
                     and not t.startswith("No series") and t, timeout=30)
        assert float(rate.splitlines()[1].split("= ")[1]) > 0
        alerts = _wait(lambda: (t := tools.get_alerts(endpoints)) and "[firing] KubePodCrashLooping" in t and t,
                       timeout=90)
        assert "pod=crasher" in next(line for line in alerts.splitlines() if "KubePodCrashLooping" in line)
    finally:
        stop_process(prometheus)


def test_stack_manifests_apply_to_the_embedded_cluster(embedded: str) -> None:
    from sregym_observability.deploy import deploy_observability
    from sregym_observability.manifests import StackSettings

    settings = StackSettings(app_namespaces=("demo",), hidden_namespaces=("observability",))
    lines = deploy_observability(embedded, settings, wait=False)
    assert any("deployment.apps/prometheus" in line for line in lines)
    assert "configmap/prometheus-config" in " ".join(lines)
    names = _kubectl(embedded, "-n", "observability", "get", "deployments", "-o", "name").split()
    assert sorted(names) == ["deployment.apps/cluster-exporters", "deployment.apps/jaeger", "deployment.apps/loki",
                             "deployment.apps/prometheus"]
    again = deploy_observability(embedded, settings, wait=False)  # idempotent
    assert any("unchanged" in line or "configured" in line for line in again)
