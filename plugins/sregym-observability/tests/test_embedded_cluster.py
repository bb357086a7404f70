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
from sregym_observability import tools
from sregym_observability.tools import Endpoints

cluster = pytest.importorskip("sregym_cluster_embedded.cluster")
pytestmark = pytest.mark.slow

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
