"""kube-state-metrics and cAdvisor names, labels and values; the exporter over real HTTP."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from fake_kube import FakeKube, kubeconfig_text, make_pod
from sregym_core.quantity import quantity_or_zero as parse_quantity
from sregym_observability.cadvisor import ContainerStats, StaticStatsSource, render_cadvisor
from sregym_observability.kube_state import render_kube_state
from sregym_observability.kubeapi import KubeClient, resolve_access
from sregym_observability.serve import KubeStateExporter


def samples(text: str) -> dict[str, float]:
    """Parse exposition text into {'name{a="b",...}': value} (label order as written)."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, value = line.rsplit(" ", 1)
            out[series] = float(value)
    return out


def find(text: str, name: str, **labels: str) -> list[float]:
    found = []
    for series, value in samples(text).items():
        if not series.startswith(name + "{"):
            continue
        pairs = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', series))
        if all(pairs.get(k) == v for k, v in labels.items()):
            found.append(value)
    return found


CRASHING = {"ready": False, "restartCount": 4,
            "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s"}},
            "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}}


def _objects() -> dict:
    return {
        "pods": [make_pod("hotel", "geo-1", app="geo", containers={"geo": CRASHING}, ready=False),
                 make_pod("hotel", "rate-1", app="rate", containers={"rate": {}}),
                 make_pod("hotel", "search-1", app="search", containers={"search": {
                     "state": {"waiting": {"reason": "ImagePullBackOff"}}}}, ready=False, phase="Pending")],
        "deployments": [{"metadata": {"namespace": "hotel", "name": "geo", "generation": 3},
                         "spec": {"replicas": 2},
                         "status": {"replicas": 2, "availableReplicas": 1, "unavailableReplicas": 1,
                                    "observedGeneration": 3,
                                    "conditions": [{"type": "Available", "status": "False"}]}}],
        "statefulsets": [{"metadata": {"namespace": "hotel", "name": "mongo"}, "spec": {"replicas": 1},
                          "status": {"readyReplicas": 1}}],
        "nodes": [{"metadata": {"name": "node-1"}, "spec": {},
                   "status": {"conditions": [{"type": "Ready", "status": "True"}],
                              "allocatable": {"cpu": "2", "memory": "4Gi"}}}],
        "endpoints": [{"metadata": {"namespace": "hotel", "name": "geo"},
                       "subsets": [{"notReadyAddresses": [{"ip": "127.42.0.9"}]}]},
                      {"metadata": {"namespace": "hotel", "name": "rate"},
                       "subsets": [{"addresses": [{"ip": "127.42.0.10"}]}]}],
        "services": [{"metadata": {"namespace": "hotel", "name": "geo", "uid": "u1"},
                      "spec": {"clusterIP": "127.43.0.5", "type": "ClusterIP", "selector": {"app": "geo"}}}],
        "jobs": [{"metadata": {"namespace": "hotel", "name": "migrate"},
                  "status": {"failed": 2, "conditions": [{"type": "Failed", "status": "True"}]}}],
        "hpas": [{"metadata": {"namespace": "hotel", "name": "frontend"},
                  "spec": {"minReplicas": 1, "maxReplicas": 5},
                  "status": {"currentReplicas": 2, "desiredReplicas": 3}}],
    }


def test_kube_state_names_labels_and_values() -> None:
    text = render_kube_state(_objects())
    assert "# TYPE kube_pod_container_status_restarts_total counter" in text
    assert find(text, "kube_pod_status_phase", namespace="hotel", pod="geo-1", phase="Running") == [1]
    assert find(text, "kube_pod_status_phase", namespace="hotel", pod="search-1", phase="Pending") == [1]
    assert find(text, "kube_pod_status_phase", namespace="hotel", pod="geo-1", phase="Pending") == [0]
    assert find(text, "kube_pod_status_ready", pod="geo-1", condition="false") == [1]
    assert find(text, "kube_pod_status_ready", pod="rate-1", condition="true") == [1]
    assert find(text, "kube_pod_container_status_restarts_total", pod="geo-1", container="geo") == [4]
    assert find(text, "kube_pod_container_status_waiting_reason", pod="geo-1", reason="CrashLoopBackOff") == [1]
    assert find(text, "kube_pod_container_status_waiting_reason", pod="search-1", reason="ImagePullBackOff") == [1]
    assert find(text, "kube_pod_container_status_last_terminated_reason", pod="geo-1", reason="OOMKilled") == [1]
    assert find(text, "kube_pod_container_status_waiting_reason", pod="rate-1") == []
    assert find(text, "kube_pod_container_resource_limits", pod="geo-1", resource="memory", unit="byte") == [128 * 2**20]
    assert find(text, "kube_pod_container_resource_limits", pod="geo-1", resource="cpu", unit="core") == [0.5]
    assert find(text, "kube_pod_container_resource_requests", pod="geo-1", resource="cpu") == [0.1]
    assert find(text, "kube_pod_labels", pod="geo-1", label_app="geo") == [1]
    assert find(text, "kube_deployment_spec_replicas", namespace="hotel", deployment="geo") == [2]
    assert find(text, "kube_deployment_status_replicas_available", deployment="geo") == [1]
    assert find(text, "kube_deployment_status_replicas_unavailable", deployment="geo") == [1]
    assert find(text, "kube_statefulset_status_replicas_ready", statefulset="mongo") == [1]
    assert find(text, "kube_node_status_condition", node="node-1", condition="Ready", status="true") == [1]
    assert find(text, "kube_node_status_allocatable", node="node-1", resource="memory") == [4 * 2**30]
    assert find(text, "kube_endpoint_address_available", endpoint="geo") == [0]
    assert find(text, "kube_endpoint_address_not_ready", endpoint="geo") == [1]
    assert find(text, "kube_endpoint_address", endpoint="rate", ip="127.42.0.10", ready="true") == [1]
    assert find(text, "kube_service_info", service="geo", cluster_ip="127.43.0.5") == [1]
    assert find(text, "kube_job_status_failed", namespace="hotel", job_name="migrate") == [2]
    assert find(text, "kube_job_failed", job_name="migrate", condition="true") == [1]
    assert find(text, "kube_horizontalpodautoscaler_status_desired_replicas", horizontalpodautoscaler="frontend") == [3]


def test_quantities() -> None:
    assert parse_quantity("500m") == 0.5 and parse_quantity("1Gi") == 2**30 and parse_quantity("2") == 2
    assert parse_quantity("1e3") == 1000 and parse_quantity("garbage") == 0


def test_cadvisor_names_from_a_stats_source() -> None:
    source = StaticStatsSource((ContainerStats(namespace="hotel", pod="geo-1", container="geo", node="node-1",
                                               cpu_seconds_total=12.5, memory_working_set_bytes=5e7,
                                               memory_limit_bytes=2**27, cfs_periods=100, cfs_throttled_periods=40,
                                               oom_events=1),))
    text = render_cadvisor(source.container_stats())
    assert find(text, "container_cpu_usage_seconds_total", namespace="hotel", pod="geo-1", container="geo",
                cpu="total") == [12.5]
    assert find(text, "container_memory_working_set_bytes", pod="geo-1") == [5e7]
    assert find(text, "container_spec_memory_limit_bytes", pod="geo-1") == [2**27]
    assert find(text, "container_cpu_cfs_periods_total", pod="geo-1") == [100]
    assert find(text, "container_cpu_cfs_throttled_periods_total", pod="geo-1") == [40]
    assert find(text, "container_oom_events_total", pod="geo-1") == [1]
    assert "# TYPE container_cpu_usage_seconds_total counter" in text
    assert ContainerStats.from_json({"namespace": "a", "pod": "b", "container": "c", "extra": 1}).pod == "b"


def test_exporter_lists_the_api_and_skips_missing_resources(tmp_path: Path) -> None:
    async def scenario() -> str:
        kube = FakeKube()
        url = await kube.start()
        for key, path in (("deployments", "/apis/apps/v1/deployments"), ("nodes", "/api/v1/nodes"),
                          ("endpoints", "/api/v1/endpoints")):
            kube.objects[path] = _objects()[key]
        for pod in _objects()["pods"]:
            kube.put_pod(pod)
        config = tmp_path / "kubeconfig"
        config.write_text(kubeconfig_text(url))
        try:
            async with KubeClient(resolve_access(str(config))) as client:
                hidden = await KubeStateExporter(client, hidden_namespaces={"hotel"}).text()
                assert 'namespace="hotel"' not in hidden and 'node="node-1"' in hidden
                return await KubeStateExporter(client).text()
        finally:
            await kube.stop()

    text = asyncio.run(scenario())
    assert find(text, "kube_pod_container_status_restarts_total", pod="geo-1") == [4]
    assert find(text, "kube_deployment_status_replicas_available", deployment="geo") == [1]
    assert find(text, "kube_node_status_condition", node="node-1", condition="Ready", status="true") == [1]
    assert "kube_job_status_failed" not in text  # batch/v1 jobs answer 404 here and are skipped


def test_node_agent_rows_and_spec_limits() -> None:
    from sregym_observability.cadvisor import with_spec_limits

    row = {"node": "node-1", "namespace": "hotel", "pod": "geo-1", "container": "geo", "running": True,
           "restartCount": 0, "cpu_ns": 2_500_000_000, "memory_bytes": 1000, "nr_periods": 10, "nr_throttled": 4,
           "throttled_ns": 500_000_000, "timestamp": "2026-01-01T00:00:00Z"}
    stats = ContainerStats.from_json(row)
    assert (stats.cpu_seconds_total, stats.memory_working_set_bytes, stats.cfs_periods,
            stats.cfs_throttled_periods, stats.cfs_throttled_seconds) == (2.5, 1000, 10, 4, 0.5)
    [filled] = with_spec_limits([stats], _objects()["pods"])
    assert filled.memory_limit_bytes == 128 * 2**20
    text = render_cadvisor([filled])
    assert find(text, "container_cpu_cfs_throttled_seconds_total", pod="geo-1") == [0.5]
    assert find(text, "container_spec_memory_limit_bytes", pod="geo-1") == [128 * 2**20]


@pytest.mark.slow
def test_exporter_serves_cadvisor_names_from_node_agent_urls(tmp_path: Path, start_component) -> None:
    import http.server
    import json as jsonlib
    import threading

    import httpx
    from fake_kube import ThreadedFakeKube

    rows = [{"node": "node-1", "namespace": "hotel", "pod": "geo-1", "container": "geo", "cpu_ns": 3 * 10**9,
             "memory_bytes": 4096, "nr_periods": 100, "nr_throttled": 30, "throttled_ns": 10**9}]

    class Stats(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            body = jsonlib.dumps({"containers": rows}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Stats)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    fake = ThreadedFakeKube()
    try:
        fake.call(fake.kube.put_pod, _objects()["pods"][0])
        config = tmp_path / "kubeconfig"
        config.write_text(kubeconfig_text(fake.url))
        dead = "http://127.0.0.1:9/stats"  # an unreachable node contributes nothing, the rest still counts
        exporter = start_component("exporters", "--kubeconfig", str(config), "--stats-url",
                                   f"http://127.0.0.1:{server.server_address[1]}/stats", "--stats-url", dead)
        text = httpx.get(exporter.url + "/metrics/cadvisor", timeout=10).text
        assert find(text, "container_cpu_usage_seconds_total", namespace="hotel", pod="geo-1", container="geo") == [3]
        assert find(text, "container_cpu_cfs_throttled_periods_total", pod="geo-1") == [30]
        assert find(text, "container_spec_memory_limit_bytes", pod="geo-1") == [128 * 2**20]
    finally:
        server.shutdown()
        fake.close()
