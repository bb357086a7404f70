"""Plugin records and the stack's manifests (validated against the Kubernetes schemas)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from sregym_observability import plugin, tools
from sregym_observability.manifests import StackSettings, otlp_endpoint, render_manifests, render_objects


def test_local_images_and_tools_are_registered() -> None:
    images = {image.image: image for image in plugin.sregym_local_images()}
    assert images["sregym/observability:*"].argv == (sys.executable, "-m", "sregym_observability.serve")
    assert images["prom/prometheus:*"].argv == ("/usr/bin/prometheus",)
    specs = {spec.name: spec for spec in plugin.sregym_agent_tools()}
    assert set(specs) == {"get_metrics", "get_alerts", "get_logs", "get_labels", "get_label_values", "get_services",
                          "get_operations", "get_traces", "get_dependency_graph"}
    assert specs["get_label_values"].parameters["required"] == ["label"]
    assert specs["get_logs"].parameters["required"] == ["query"]
    assert specs["get_traces"].call is tools.get_traces


def test_manifests_validate_against_kubernetes_schemas() -> None:
    objects = render_objects(StackSettings(app_namespaces=("hotel-reservation",), stats_urls=("http://127.0.0.1:1/s",),
                                           hidden_namespaces=("hotel-workload", "observability")))
    kinds = [(o["kind"], o["metadata"]["name"]) for o in objects]
    assert ("Deployment", "prometheus") in kinds and ("Deployment", "loki") in kinds
    assert ("Deployment", "jaeger") in kinds and ("Deployment", "cluster-exporters") in kinds
    assert ("ClusterRoleBinding", "sregym-observability-reader") in kinds
    for obj in objects:
        kubernetes_validate.validate(obj, "1.30", strict=True)
    rules = next(o for o in objects if o["kind"] == "ConfigMap")["data"]["rules.yml"]
    assert 'namespace=~"hotel-reservation"' in rules
    role = next(o for o in objects if o["kind"] == "ClusterRole")
    assert "pods/log" in role["rules"][0]["resources"]
    exporters = next(o for o in objects if o["metadata"]["name"] == "cluster-exporters" and o["kind"] == "Deployment")
    assert exporters["spec"]["template"]["spec"]["containers"][0]["args"][:1] == ["exporters"]
    exporter_args = exporters["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--stats-url" in exporter_args
    assert exporter_args[exporter_args.index("--exclude-namespaces") + 1] == "hotel-workload,observability"
    loki = next(o for o in objects if o["metadata"]["name"] == "loki" and o["kind"] == "Deployment")
    assert "--exclude-namespaces" in loki["spec"]["template"]["spec"]["containers"][0]["args"]
    assert otlp_endpoint() == "http://jaeger.observability.svc:4318"


def test_embedded_prometheus_config_passes_promtool(tmp_path: Path) -> None:
    config_map = next(o for o in yaml.safe_load_all(render_manifests()) if o["kind"] == "ConfigMap")
    (tmp_path / "prometheus.yml").write_text(
        config_map["data"]["prometheus.yml"].replace("/etc/prometheus/rules.yml", str(tmp_path / "rules.yml")))
    (tmp_path / "rules.yml").write_text(config_map["data"]["rules.yml"])
    if not Path("/usr/bin/promtool").exists():
        pytest.skip("promtool is not installed")
    check = subprocess.run(["/usr/bin/promtool", "check", "config", str(tmp_path / "prometheus.yml")],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_serve_rejects_unknown_components_and_missing_credentials(tmp_path: Path) -> None:
    bad = subprocess.run([sys.executable, "-m", "sregym_observability.serve", "nope"], capture_output=True, text=True)
    assert bad.returncode == 2 and "invalid choice" in bad.stderr
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    missing = subprocess.run([sys.executable, "-m", "sregym_observability.serve", "exporters", "--port", "0",
                              "--host", "127.0.0.1"], capture_output=True, text=True, env=env, timeout=30)
    assert missing.returncode == 1
    assert "KUBERNETES_SERVICE_HOST is not set" in missing.stderr and "hint: pass --kubeconfig" in missing.stderr


@pytest.mark.slow
def test_all_in_one_process_serves_every_component(tmp_path: Path) -> None:
    import httpx
    import psutil
    from fake_kube import ThreadedFakeKube, kubeconfig_text, make_pod
    from obs_helpers import free_port, stop_process, wait_http

    fake = ThreadedFakeKube()
    ports = {name: free_port() for name in ("logs", "traces", "exporters")}
    config = tmp_path / "kubeconfig"
    config.write_text(kubeconfig_text(fake.url))
    fake.call(fake.kube.put_pod, make_pod("hotel", "geo-1", app="geo", containers={"geo": {}}))
    process = subprocess.Popen([sys.executable, "-m", "sregym_observability.serve", "all", "--host", "127.0.0.1",
                                "--kubeconfig", str(config), *[a for n, p in ports.items()
                                                               for a in (f"--{n}-port", str(p))]],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for port in ports.values():
            wait_http(f"http://127.0.0.1:{port}/ready", process)
        logs, traces, exporters = (f"http://127.0.0.1:{p}" for p in ports.values())
        assert httpx.get(logs + "/loki/api/v1/labels").json()["status"] == "success"
        assert httpx.get(traces + "/api/services").json()["data"] == []
        assert 'pod="geo-1"' in httpx.get(exporters + "/metrics").text
        assert len(psutil.Process(process.pid).children()) == 0  # one process, not three
    finally:
        stop_process(process)
        fake.close()
    assert process.returncode == 0


def test_the_apps_trace_port_ingests_and_answers_no_query(tmp_path: Path) -> None:
    """Issue #34, round 4: the app's pods reach the trace store only on 4318, which took spans and
    also answered /api/services and /api/traces. Now 4318 is its own listener for OTLP only; the
    query API stays on 16686, which the network guard keeps from the app's pods."""
    import httpx
    from obs_helpers import free_port, stop_process, wait_http

    jaeger = next(o for o in render_objects() if o["kind"] == "Deployment" and o["metadata"]["name"] == "jaeger")
    container = jaeger["spec"]["template"]["spec"]["containers"][0]
    service = next(o for o in render_objects() if o["kind"] == "Service" and o["metadata"]["name"] == "jaeger")
    otlp = next(p for p in service["spec"]["ports"] if p["port"] == 4318)
    assert otlp["targetPort"] == 4318 and container["args"][container["args"].index("--otlp-port") + 1] == "4318"
    assert {"name": "otlp-http", "containerPort": 4318} in container["ports"]

    query, ingest = free_port(), free_port()
    process = subprocess.Popen([sys.executable, "-m", "sregym_observability.serve", "traces", "--host", "127.0.0.1",
                                "--port", str(query), "--otlp-port", str(ingest)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_http(f"http://127.0.0.1:{ingest}/ready", process)
        span = {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "geo"}}]},
                                   "scopeSpans": [{"spans": [{"traceId": "0" * 31 + "1", "spanId": "0" * 15 + "1",
                                                              "name": "GET /nearby", "kind": 2,
                                                              "startTimeUnixNano": str(time.time_ns() - 10**6),
                                                              "endTimeUnixNano": str(time.time_ns())}]}]}]}
        assert httpx.post(f"http://127.0.0.1:{ingest}/v1/traces", json=span).status_code == 200
        for path in ("/api/services", "/api/traces?service=geo", "/api/dependencies", "/stats", "/metrics"):
            assert httpx.get(f"http://127.0.0.1:{ingest}{path}").status_code == 404, path
        assert httpx.post(f"http://127.0.0.1:{ingest}/admin/clear").status_code in (404, 405)
        assert httpx.get(f"http://127.0.0.1:{query}/api/services").json()["data"] == ["geo"]  # stored
    finally:
        stop_process(process)


def test_in_cluster_without_a_token_is_explained(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sregym_observability.kubeapi import access_in_cluster

    from sregym_core.errors import ClusterError

    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    with pytest.raises(ClusterError, match="no service-account token") as caught:
        access_in_cluster(tmp_path)
    assert any("automountServiceAccountToken" in hint for hint in caught.value.hints)
    (tmp_path / "token").write_text("abc\n")
    (tmp_path / "ca.crt").write_text("x")
    access = access_in_cluster(tmp_path)
    assert access.token == "abc" and access.server == "https://127.0.0.1:443"
    assert access.ca_file == str(tmp_path / "ca.crt")


@pytest.mark.slow
def test_logs_server_without_credentials_still_serves_pushes(tmp_path: Path) -> None:
    import httpx
    from obs_helpers import free_port, stop_process, wait_http

    port = free_port()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "KUBERNETES_SERVICE_HOST": "127.0.0.1"}
    log = tmp_path / "logs.log"
    with open(log, "wb") as handle:
        process = subprocess.Popen([sys.executable, "-m", "sregym_observability.serve", "logs", "--host", "127.0.0.1",
                                    "--port", str(port)], env=env, stdout=handle, stderr=subprocess.STDOUT)
    try:
        wait_http(f"http://127.0.0.1:{port}/ready", process)
        assert httpx.post(f"http://127.0.0.1:{port}/loki/api/v1/push", json={"streams": [
            {"stream": {"app": "a"}, "values": [["1", "x"]]}]}).status_code == 204
    finally:
        stop_process(process)
    assert "collector disabled: running in a cluster" in log.read_text()


def test_stack_alerts_under_upstreams_names_and_scrapes_the_span_metrics() -> None:
    """The stack's rules also fire under upstream's names, groups and severities (ours stay beside
    them), and Prometheus scrapes the trace store's span metrics (upstream's request metrics)."""
    objects = render_objects(StackSettings(app_namespaces=("hotel-reservation",)))
    config = next(o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "prometheus-config")
    groups = {g["name"]: {r["alert"]: r for r in g["rules"]} for g in yaml.safe_load(config["data"]["rules.yml"])["groups"]}
    assert set(groups["app.workloads"]) == {"PodStatusError", "FailedPodsDetected", "PendingPodsDetected",
                                            "PodSchedulingFailure", "DeploymentNotReady", "ServiceEndpointDown"}
    assert set(groups["app.resources"]) == {"ContainerCPUThrottling"}
    assert set(groups["app.goldensignal"]) == {"HighRequestErrorRate", "HighRequestLatency"}
    assert {"KubePodNotReady", "KubeEndpointDown"} <= set(groups["sregym-workload-health"])
    assert groups["app.workloads"]["PodSchedulingFailure"]["for"] == "30s"
    assert groups["app.resources"]["ContainerCPUThrottling"]["labels"]["severity"] == "warning"
    assert all(r["labels"]["severity"] == "critical" and r["for"] == "1m" for r in groups["app.goldensignal"].values())
    assert all('namespace=~"hotel-reservation"' in r["expr"] for g in groups.values() for r in g.values()
               if not r["expr"].startswith("kube_node"))
    assert "traces_span_metrics_calls_total" in groups["app.goldensignal"]["HighRequestErrorRate"]["expr"]
    scrape = {job["job_name"]: job for job in yaml.safe_load(config["data"]["prometheus.yml"])["scrape_configs"]}
    spans = scrape["span-metrics"]
    assert spans["honor_labels"] is True and spans["metrics_path"] == "/metrics"
    assert spans["relabel_configs"][0]["regex"] == "jaeger;query"
