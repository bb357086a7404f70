"""Kubernetes manifests of the observability stack (namespace ``observability``).

Valid for real Kubernetes and for the embedded cluster, where ``sregym/observability:*`` and
``prom/prometheus:*`` run as local processes (see :mod:`sregym_observability.plugin`). Prometheus
finds targets through the exporter's HTTP SD endpoints by default, because the Debian Prometheus
the embedded cluster runs lacks Kubernetes SD; ``discovery="kubernetes"`` suits upstream images.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import yaml

from .kubeapi import SA_DIR
from .prometheus_config import PrometheusSettings, render_alert_rules, render_prometheus_config

NAMESPACE = "observability"
SERVICE_ACCOUNT = "observability"
# Outranks every app pod: a preemption fault must take the app down, never the instruments.
PRIORITY_CLASS = "sregym-infrastructure"
IMAGE = "sregym/observability:0.1.0"
PROMETHEUS_IMAGE = "prom/prometheus:v2.42.0"
PORTS = {"prometheus": 9090, "loki": 3100, "jaeger": 16686, "otlp": 4318, "cluster-exporters": 8080}


@attrs.frozen(kw_only=True)
class StackSettings:
    """Parameters of the rendered stack.

    Attributes:
        app_namespaces: namespaces alert rules watch (empty: all but system namespaces).
        discovery: ``"http"`` (default; works with Debian's Prometheus) or ``"kubernetes"``.
        log_namespaces: namespaces whose logs are collected (empty: all).
        hidden_namespaces: namespaces agents must not see (workload generator...): their logs are not
            collected, their objects not exported and their pods not discovered.
        stats_urls: node-agent container-stats URLs for the cAdvisor-named metrics (embedded only).
        log_max_bytes / max_spans / retention: in-memory budgets of the log and trace stores.
        prometheus_retention_size: on-disk cap of the TSDB.
    """

    namespace: str = NAMESPACE
    app_namespaces: tuple[str, ...] = ()
    discovery: str = "http"
    log_namespaces: tuple[str, ...] = ()
    hidden_namespaces: tuple[str, ...] = ()
    stats_urls: tuple[str, ...] = ()
    log_max_bytes: int = 64 * 1024 * 1024
    max_spans: int = 200_000
    retention: str = "2h"
    prometheus_retention_size: str = "512MB"
    image: str = IMAGE
    prometheus_image: str = PROMETHEUS_IMAGE
    kubelet_cadvisor: bool = False

    def service_url(self, service: str) -> str:
        return f"http://{service}.{self.namespace}.svc:{PORTS[service]}"


def _labels(component: str) -> dict[str, str]:
    return {"app": component, "app.kubernetes.io/part-of": "sregym-observability"}


def _deployment(settings: StackSettings, name: str, container: dict[str, Any],
                volumes: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {"serviceAccountName": SERVICE_ACCOUNT, "priorityClassName": PRIORITY_CLASS,
                            "containers": [container]}
    if volumes:
        spec["volumes"] = list(volumes)
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": settings.namespace, "labels": _labels(name)},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                 "strategy": {"type": "Recreate"},
                 "template": {"metadata": {"labels": _labels(name)}, "spec": spec}},
    }


def _service(settings: StackSettings, name: str, ports: Sequence[tuple[str, int, int]],
             app_reachable: Sequence[int] = ()) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": settings.namespace, "labels": _labels(name)}
    if app_reachable:  # the only ports of this hidden namespace app pods may call (the embedded cluster enforces it)
        metadata["annotations"] = {"sregym.io/app-reachable-ports": ",".join(str(p) for p in app_reachable)}
    return {
        "apiVersion": "v1", "kind": "Service",
        "metadata": metadata,
        "spec": {"selector": {"app": name},
                 "ports": [{"name": port_name, "port": port, "targetPort": target, "protocol": "TCP"}
                           for port_name, port, target in ports]},
    }


def _server_container(settings: StackSettings, component: str, port: int, args: Sequence[str],
                      memory: str) -> dict[str, Any]:
    return {
        "name": component, "image": settings.image,
        # the token's directory as an argument: nodes without per-pod mount namespaces (a non-root
        # embedded cluster) rewrite container paths in arguments to where the volume really is
        "args": [component, "--port", str(port), "--sa-dir", str(SA_DIR), *args],
        "ports": [{"name": "http", "containerPort": port}],
        "readinessProbe": {"httpGet": {"path": "/ready", "port": port}, "periodSeconds": 5},
        "livenessProbe": {"httpGet": {"path": "/ready", "port": port}, "periodSeconds": 10, "failureThreshold": 6},
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": memory}},
    }


def _with_port(container: dict[str, Any], name: str, port: int) -> dict[str, Any]:
    return {**container, "ports": [*container["ports"], {"name": name, "containerPort": port}]}


def prometheus_settings(settings: StackSettings) -> PrometheusSettings:
    return PrometheusSettings(discovery=settings.discovery, sd_url=settings.service_url("cluster-exporters"),
                              app_namespaces=settings.app_namespaces, observability_namespace=settings.namespace,
                              exporter_service="cluster-exporters", kubelet_cadvisor=settings.kubelet_cadvisor,
                              rule_files=("/etc/prometheus/rules.yml",))


def render_objects(settings: StackSettings = StackSettings()) -> list[dict[str, Any]]:
    """Every object of the stack, in apply order."""
    ns = settings.namespace
    reader_rules = [
        {"apiGroups": [""], "resources": ["pods", "pods/log", "nodes", "nodes/proxy", "nodes/metrics", "services",
                                          "endpoints", "namespaces", "persistentvolumeclaims", "configmaps"],
         "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["apps"], "resources": ["deployments", "statefulsets", "daemonsets", "replicasets"],
         "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["batch"], "resources": ["jobs", "cronjobs"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["autoscaling"], "resources": ["horizontalpodautoscalers"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["get", "list", "watch"]},
        {"nonResourceURLs": ["/metrics"], "verbs": ["get"]},
    ]
    log_args = ["--max-bytes", str(settings.log_max_bytes), "--retention", str(_seconds(settings.retention))]
    if settings.log_namespaces:
        log_args += ["--namespaces", ",".join(settings.log_namespaces)]
    exporter_args = [arg for url in settings.stats_urls for arg in ("--stats-url", url)]
    if settings.hidden_namespaces:
        hidden = ",".join(settings.hidden_namespaces)
        exporter_args += ["--exclude-namespaces", hidden]
        log_args += ["--exclude-namespaces", hidden]
    prom = prometheus_settings(settings)
    prometheus_container = {
        "name": "prometheus", "image": settings.prometheus_image,
        "args": ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus",
                 f"--storage.tsdb.retention.time={settings.retention}",
                 f"--storage.tsdb.retention.size={settings.prometheus_retention_size}",
                 # Bind the pod IP: a Go binary ignores the embedded node's 0.0.0.0 remapping.
                 # no --web.enable-lifecycle: /-/reload and /-/quit would be open to any caller that
                 # reaches the pod (issue #34); nothing of ours reloads it by HTTP
                 f"--web.listen-address=$(POD_IP):{PORTS['prometheus']}"],
        "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
        "ports": [{"name": "http", "containerPort": PORTS["prometheus"]}],
        "readinessProbe": {"httpGet": {"path": "/-/ready", "port": PORTS["prometheus"]}, "periodSeconds": 5},
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "1Gi"}},
        "volumeMounts": [{"name": "config", "mountPath": "/etc/prometheus"},
                         {"name": "data", "mountPath": "/prometheus"}],
    }
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {"sregym.io/hidden": "true"}}},
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": PRIORITY_CLASS},
         "value": 100000000, "globalDefault": False,
         "description": "SREGym benchmark infrastructure (workload generator, observability)"},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": SERVICE_ACCOUNT, "namespace": ns}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": "sregym-observability-reader"}, "rules": reader_rules},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "sregym-observability-reader"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": "sregym-observability-reader"},
         "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": ns}]},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "prometheus-config", "namespace": ns},
         "data": {"prometheus.yml": render_prometheus_config(prom), "rules.yml": render_alert_rules(prom)}},
        _deployment(settings, "cluster-exporters",
                    _server_container(settings, "exporters", PORTS["cluster-exporters"], exporter_args, "256Mi")),
        _service(settings, "cluster-exporters", [("http", PORTS["cluster-exporters"], PORTS["cluster-exporters"])]),
        _deployment(settings, "loki", _server_container(settings, "logs", PORTS["loki"], log_args,
                                                         f"{max(256, settings.log_max_bytes * 4 // 2**20)}Mi")),
        _service(settings, "loki", [("http", PORTS["loki"], PORTS["loki"])]),
        _deployment(settings, "jaeger", _with_port(_server_container(
            settings, "traces", PORTS["jaeger"],
            ["--max-spans", str(settings.max_spans), "--retention", str(_seconds(settings.retention)),
             "--otlp-port", str(PORTS["otlp"])], "512Mi"), "otlp-http", PORTS["otlp"])),
        # the app's pods reach only OTLP/HTTP ingestion, on a port of its own that serves nothing else;
        # the query API (every service and trace) is for the agent's tools and the graders
        _service(settings, "jaeger", [("query", PORTS["jaeger"], PORTS["jaeger"]),
                                      ("otlp-http", PORTS["otlp"], PORTS["otlp"])], app_reachable=[PORTS["otlp"]]),
        _deployment(settings, "prometheus", prometheus_container, volumes=[
            {"name": "config", "configMap": {"name": "prometheus-config"}},
            {"name": "data", "emptyDir": {"sizeLimit": "1Gi"}}]),
        _service(settings, "prometheus", [("http", PORTS["prometheus"], PORTS["prometheus"])]),
    ]


def _seconds(duration: str) -> int:
    from .timeparse import parse_duration

    return int(parse_duration(duration))


def render_manifests(settings: StackSettings = StackSettings()) -> str:
    """The stack as one multi-document YAML string for ``kubectl apply -f -``."""
    return yaml.safe_dump_all(render_objects(settings), sort_keys=False)


def otlp_endpoint(settings: StackSettings = StackSettings()) -> str:
    """What apps set as ``OTEL_EXPORTER_OTLP_ENDPOINT`` (the SDK appends ``/v1/traces``)."""
    return f"http://jaeger.{settings.namespace}.svc:{PORTS['otlp']}"
