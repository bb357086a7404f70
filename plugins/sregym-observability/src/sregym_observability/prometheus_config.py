"""Configuration for the real Prometheus server: ``prometheus.yml``, ``rules.yml`` and its argv.

Targets are found with Kubernetes service discovery against the cluster's API server, so the same
file works on the embedded cluster and on a real one. Pods opt in with the conventional
annotations ``prometheus.io/scrape: "true"``, ``prometheus.io/port`` and ``prometheus.io/path``.
Checked against Prometheus 2.42 (Debian bookworm).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import yaml

PROMETHEUS_BINARY = "/usr/bin/prometheus"


@attrs.frozen(kw_only=True)
class GoldenSignals:
    """How application metrics are recognised by the golden-signal alerts.

    Attributes:
        request_metric: regex over metric names of server-side request counters with a ``code``
            label (HTTP status or gRPC code name).
        ok_codes: regex of codes that are not errors (success and client errors).
        latency_bucket: regex over histogram bucket series names of server-side latency.
        client_errors: regex over names of per-peer failed-call counters (labelled ``peer``).
        error_ratio: error fraction above which HighErrorRate fires.
        latency_p95_s: p95 latency in seconds above which HighLatency fires.
    """

    request_metric: str = ".+_(http|server)_requests_total|http_requests_total|grpc_server_handled_total"
    code_label: str = "code"
    ok_codes: str = "OK|[1234]..|"
    latency_bucket: str = ".+_(http|server)_(latency|request_duration|handling)_seconds_bucket"
    client_errors: str = ".+_client_errors_total"
    error_ratio: float = 0.05
    latency_p95_s: float = 0.5


@attrs.frozen(kw_only=True)
class PrometheusSettings:
    """Everything ``prometheus.yml`` depends on.

    Attributes:
        discovery: ``"kubernetes"`` (``kubernetes_sd_configs``, for upstream Prometheus builds) or
            ``"http"`` (``http_sd_configs`` against the exporter's ``/sd/*`` endpoints, which carry the
            same ``__meta_kubernetes_*`` labels; Debian's Prometheus has no Kubernetes SD).
        sd_url: base URL of the exporter when ``discovery == "http"``.
        api_server: the cluster's API server URL (None: Prometheus's in-cluster defaults).
        ca_file / bearer_token_file: credentials Prometheus uses for service discovery.
        app_namespaces: namespaces the alert rules watch (empty: everything but system namespaces).
        observability_namespace / exporter_service: where the kube-state and cAdvisor exporter runs.
        exporter_targets: static ``host:port`` of the exporter instead of discovering its Service.
        traces_service / traces_port_name: the trace store's Service and port, scraped for its span
            metrics (``traces_span_metrics_*``, upstream's request metrics); ``traces_targets``:
            static ``host:port`` instead; an empty ``traces_service`` and no targets: not scraped.
        kubelet_cadvisor: scrape each node's kubelet cAdvisor through the API server proxy (real
            clusters; the embedded cluster's cAdvisor-named metrics come from the exporter).
    """

    discovery: str = "kubernetes"
    sd_url: str = "http://cluster-exporters.observability.svc:8080"
    api_server: str | None = None
    ca_file: str | None = None
    bearer_token_file: str | None = None
    insecure_skip_verify: bool = False
    scrape_interval: str = "5s"
    evaluation_interval: str = "5s"
    app_namespaces: tuple[str, ...] = ()
    observability_namespace: str = "observability"
    exporter_service: str = "cluster-exporters"
    exporter_targets: tuple[str, ...] = ()
    traces_service: str = "jaeger"
    traces_port_name: str = "query"
    traces_targets: tuple[str, ...] = ()
    kubelet_cadvisor: bool = False
    rule_files: tuple[str, ...] = ("rules.yml",)
    alert_for: str = "30s"
    #: the ``for`` of every upstream-named rule instead of upstream's own (1m, 30s, 2m); for tests
    upstream_alert_for: str | None = None
    rate_window: str = "1m"
    signals: GoldenSignals = attrs.Factory(GoldenSignals)


def _discovery(settings: PrometheusSettings, role: str, namespaces: Sequence[str] = ()) -> dict[str, Any]:
    """``kubernetes_sd_configs`` or the equivalent ``http_sd_configs`` entry for ``role``."""
    if settings.discovery == "http":
        path = {"pod": "pods", "endpoints": "endpoints"}[role]
        query = f"?namespace={','.join(namespaces)}" if namespaces else ""
        return {"http_sd_configs": [{"url": f"{settings.sd_url.rstrip('/')}/sd/{path}{query}",
                                     "refresh_interval": settings.scrape_interval}]}
    return {"kubernetes_sd_configs": [_sd(settings, role, namespaces)]}


def _sd(settings: PrometheusSettings, role: str, namespaces: Sequence[str] = ()) -> dict[str, Any]:
    sd: dict[str, Any] = {"role": role}
    if settings.api_server:
        sd["api_server"] = settings.api_server
        sd.update(_client_auth(settings))
    if namespaces:
        sd["namespaces"] = {"names": list(namespaces)}
    return sd


def _client_auth(settings: PrometheusSettings) -> dict[str, Any]:
    auth: dict[str, Any] = {}
    tls: dict[str, Any] = {}
    if settings.ca_file:
        tls["ca_file"] = settings.ca_file
    if settings.insecure_skip_verify:
        tls["insecure_skip_verify"] = True
    if tls:
        auth["tls_config"] = tls
    if settings.bearer_token_file:
        auth["authorization"] = {"type": "Bearer", "credentials_file": settings.bearer_token_file}
    return auth


def _pod_job(settings: PrometheusSettings) -> dict[str, Any]:
    return {
        "job_name": "kubernetes-pods",
        **_discovery(settings, "pod"),
        "relabel_configs": [
            {"source_labels": ["__meta_kubernetes_pod_annotation_prometheus_io_scrape"], "action": "keep",
             "regex": "true"},
            {"source_labels": ["__meta_kubernetes_pod_phase"], "action": "drop", "regex": "Succeeded|Failed"},
            {"source_labels": ["__meta_kubernetes_pod_annotation_prometheus_io_path"], "action": "replace",
             "target_label": "__metrics_path__", "regex": "(.+)"},
            {"source_labels": ["__meta_kubernetes_pod_ip", "__meta_kubernetes_pod_annotation_prometheus_io_port"],
             "action": "replace", "regex": "(.+);(\\d+)", "replacement": "$1:$2", "target_label": "__address__"},
            {"action": "labelmap", "regex": "__meta_kubernetes_pod_label_(app|app_kubernetes_io_name|component)"},
            {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
            {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
            {"source_labels": ["__meta_kubernetes_pod_node_name"], "target_label": "node"},
        ],
    }


def _exporter_jobs(settings: PrometheusSettings) -> list[dict[str, Any]]:
    jobs = []
    for name, path in (("kube-state-metrics", "/metrics"), ("cadvisor", "/metrics/cadvisor")):
        if name == "cadvisor" and settings.kubelet_cadvisor and settings.discovery == "kubernetes":
            continue
        # honor_labels keeps the exporter's own namespace/pod labels (the objects it describes)
        # instead of overwriting them with the exporter pod's.
        job: dict[str, Any] = {"job_name": name, "honor_labels": True, "metrics_path": path}
        if settings.exporter_targets:
            job["static_configs"] = [{"targets": list(settings.exporter_targets)}]
        else:
            job.update(_discovery(settings, "endpoints", [settings.observability_namespace]))
            job["relabel_configs"] = [
                {"source_labels": ["__meta_kubernetes_service_name"], "action": "keep",
                 "regex": settings.exporter_service},
            ]
        jobs.append(job)
    spans: dict[str, Any] = {"job_name": "span-metrics", "honor_labels": True, "metrics_path": "/metrics"}
    if settings.traces_targets:
        jobs.append({**spans, "static_configs": [{"targets": list(settings.traces_targets)}]})
    elif settings.traces_service and not settings.exporter_targets:
        # honor_labels: the series' namespace is the app's (the span's service.namespace), not the store's
        jobs.append({**spans, **_discovery(settings, "endpoints", [settings.observability_namespace]),
                     "relabel_configs": [
                         {"source_labels": ["__meta_kubernetes_service_name", "__meta_kubernetes_endpoint_port_name"],
                          "action": "keep", "regex": f"{settings.traces_service};{settings.traces_port_name}"}]})
    if settings.kubelet_cadvisor and settings.discovery == "kubernetes":
        api = settings.api_server or "https://kubernetes.default.svc:443"
        host = api.split("://", 1)[-1].rstrip("/")
        jobs.append({
            "job_name": "cadvisor", "honor_labels": True, "scheme": "https",
            **_client_auth(settings),
            "kubernetes_sd_configs": [_sd(settings, "node")],
            "relabel_configs": [
                {"target_label": "__address__", "replacement": host},
                {"source_labels": ["__meta_kubernetes_node_name"], "regex": "(.+)",
                 "target_label": "__metrics_path__", "replacement": "/api/v1/nodes/$1/proxy/metrics/cadvisor"},
                {"source_labels": ["__meta_kubernetes_node_name"], "target_label": "node"},
            ],
        })
    return jobs


def render_prometheus_config(settings: PrometheusSettings) -> str:
    pods = _pod_job(settings)
    config = {
        "global": {"scrape_interval": settings.scrape_interval, "scrape_timeout": _timeout(settings.scrape_interval),
                   "evaluation_interval": settings.evaluation_interval},
        "rule_files": list(settings.rule_files),
        "scrape_configs": [pods, *_exporter_jobs(settings)],
    }
    return yaml.safe_dump(config, sort_keys=False)


def _timeout(interval: str) -> str:
    # The scrape timeout may not exceed the interval; keep a margin.
    return interval if not interval.endswith("s") or not interval[:-1].isdigit() else f"{max(1, int(interval[:-1]) - 1)}s"


def namespace_matcher(namespaces: Sequence[str]) -> str:
    if namespaces:
        return 'namespace=~"' + "|".join(namespaces) + '"'
    return 'namespace!~"kube-system|kube-public|kube-node-lease|observability"'


def alert_rules(settings: PrometheusSettings) -> dict[str, Any]:
    ns = namespace_matcher(settings.app_namespaces)
    s = settings.signals
    wait = settings.alert_for
    w = settings.rate_window

    def rule(name: str, expr: str, summary: str, *, severity: str = "warning", for_: str | None = None) -> dict:
        return {"alert": name, "expr": expr, "for": for_ or wait, "labels": {"severity": severity},
                "annotations": {"summary": summary}}

    health = [
        rule("KubePodNotReady",  # upstream's name too; as upstream's, a pod that ran to completion is no alert
             f'sum by (namespace, pod) (kube_pod_status_ready{{condition="false", {ns}}}) > 0 unless on (namespace, pod) '
             f'(kube_pod_status_phase{{phase="Succeeded", {ns}}} == 1)',
             "Pod {{ $labels.namespace }}/{{ $labels.pod }} is not ready"),
        rule("KubePodCrashLooping",
             f'max_over_time(kube_pod_container_status_waiting_reason{{reason="CrashLoopBackOff", {ns}}}[{w}]) >= 1',
             "Container {{ $labels.container }} of pod {{ $labels.namespace }}/{{ $labels.pod }} is crash looping",
             severity="critical", for_="0s"),
        rule("KubePodFrequentRestarts",
             f"increase(kube_pod_container_status_restarts_total{{{ns}}}[5m]) > 2",
             "Container {{ $labels.container }} of {{ $labels.namespace }}/{{ $labels.pod }} restarted "
             "{{ $value | humanize }} times in 5 minutes", for_="0s"),
        rule("KubePodPending",
             f'sum by (namespace, pod) (kube_pod_status_phase{{phase="Pending", {ns}}}) > 0',
             "Pod {{ $labels.namespace }}/{{ $labels.pod }} has been Pending", for_="1m"),
        rule("KubeContainerWaiting",
             f'sum by (namespace, pod, container, reason) (kube_pod_container_status_waiting_reason'
             f'{{reason!~"ContainerCreating|CrashLoopBackOff", {ns}}}) > 0',
             "Container {{ $labels.container }} of {{ $labels.namespace }}/{{ $labels.pod }} is waiting: "
             "{{ $labels.reason }}"),
        rule("KubeContainerOOMKilled",
             f'(kube_pod_container_status_last_terminated_reason{{reason="OOMKilled", {ns}}} == 1) '
             f"and on (namespace, pod, container) increase(kube_pod_container_status_restarts_total{{{ns}}}[10m]) > 0",
             "Container {{ $labels.container }} of {{ $labels.namespace }}/{{ $labels.pod }} was OOMKilled",
             severity="critical", for_="0s"),
        rule("ContainerOOMEvents",
             f"increase(container_oom_events_total{{{ns}}}[5m]) > 0",
             "Container {{ $labels.container }} of {{ $labels.namespace }}/{{ $labels.pod }} hit its memory limit",
             for_="0s"),
        rule("KubeDeploymentReplicasMismatch",
             f"kube_deployment_spec_replicas{{{ns}}} != kube_deployment_status_replicas_available{{{ns}}}",
             "Deployment {{ $labels.namespace }}/{{ $labels.deployment }} does not have its desired replicas available",
             for_="1m"),
        rule("KubeStatefulSetReplicasMismatch",
             f"kube_statefulset_replicas{{{ns}}} != kube_statefulset_status_replicas_ready{{{ns}}}",
             "StatefulSet {{ $labels.namespace }}/{{ $labels.statefulset }} does not have its replicas ready",
             for_="1m"),
        rule("KubeEndpointDown",
             f"kube_endpoint_address_available{{{ns}}} == 0",
             "Service {{ $labels.namespace }}/{{ $labels.endpoint }} has no ready endpoints", severity="critical"),
        rule("KubePersistentVolumeClaimPending",
             f'kube_persistentvolumeclaim_status_phase{{phase="Pending", {ns}}} == 1',
             "PersistentVolumeClaim {{ $labels.namespace }}/{{ $labels.persistentvolumeclaim }} is Pending",
             for_="1m"),
        rule("KubeNodeNotReady",
             'kube_node_status_condition{condition="Ready", status="true"} == 0',
             "Node {{ $labels.node }} is not Ready", severity="critical"),
        rule("KubeNodeUnschedulable", "kube_node_spec_unschedulable == 1",
             "Node {{ $labels.node }} is cordoned (unschedulable)"),
        rule("KubeJobFailed",
             f"kube_job_status_failed{{{ns}}} > 0",
             "Job {{ $labels.namespace }}/{{ $labels.job_name }} has failed pods"),
        rule("TargetDown",
             f"up{{{ns}}} == 0",
             "Metrics endpoint of {{ $labels.namespace }}/{{ $labels.pod }} ({{ $labels.instance }}) is down"),
        rule("CPUThrottlingHigh",
             f"sum by (namespace, pod, container) (increase(container_cpu_cfs_throttled_periods_total{{{ns}}}[2m])) "
             f"/ sum by (namespace, pod, container) (increase(container_cpu_cfs_periods_total{{{ns}}}[2m])) > 0.25",
             "{{ $value | humanizePercentage }} CPU throttling of {{ $labels.container }} in "
             "{{ $labels.namespace }}/{{ $labels.pod }}"),
    ]
    requests = f'{{__name__=~"{s.request_metric}", {ns}}}'
    errors = f'{{__name__=~"{s.request_metric}", {s.code_label}!~"{s.ok_codes}", {ns}}}'
    by = "namespace, app, service"
    golden = [
        rule("HighErrorRate",
             f"sum by ({by}) (rate({errors}[{w}])) / sum by ({by}) (rate({requests}[{w}])) > {s.error_ratio}",
             "{{ $value | humanizePercentage }} of requests to {{ $labels.namespace }}/"
             "{{ with $labels.service }}{{ . }}{{ else }}{{ $labels.app }}{{ end }} fail", severity="critical"),
        rule("HighLatency",
             f'histogram_quantile(0.95, sum by ({by}, le) (rate({{__name__=~"{s.latency_bucket}", {ns}}}[{w}]))) '
             f"> {s.latency_p95_s}",
             "p95 latency of {{ $labels.namespace }}/{{ with $labels.service }}{{ . }}{{ else }}{{ $labels.app }}"
             "{{ end }} is {{ $value | humanizeDuration }}"),
        rule("DownstreamCallsFailing",
             f'sum by (namespace, service, peer) (rate({{__name__=~"{s.client_errors}", {ns}}}[{w}])) > 0',
             "{{ $labels.service }} fails calling {{ $labels.peer }} ({{ $value | humanize }}/s)"),
    ]
    return {"groups": [{"name": "sregym-workload-health", "rules": health},
                       {"name": "sregym-golden-signals", "rules": golden},
                       *upstream_alert_groups(settings)]}


#: Services upstream's golden-signal rules leave out (load generators, flags, brokers, databases).
UPSTREAM_EXCLUDED_SERVICES = "load-generator|workload-generator|flagd|kafka|queue|valkey-cart|postgresql"


def upstream_alert_groups(settings: PrometheusSettings) -> list[dict[str, Any]]:
    """Alerts under upstream SREGym's names, groups and severities, for the same conditions
    (upstream-parity.md, "Upstream alert rules"), so an agent tuned on upstream sees the names it
    knows; the project's own rules above stay beside them. ``KubePodNotReady`` is one rule both
    share (above). Upstream's blackbox probes are not run here: ``ServiceEndpointDown`` fires for
    a Service with no ready endpoint, what such a probe meets. Thresholds upstream's facts do not
    give are the golden signals' (``settings.signals``)."""
    ns = namespace_matcher(settings.app_namespaces)
    s = settings.signals

    def rule(name: str, expr: str, summary: str, for_: str, severity: str = "critical") -> dict:
        return {"alert": name, "expr": expr, "for": settings.upstream_alert_for or for_, "labels": {"severity": severity},
                "annotations": {"summary": summary}}

    workloads = [
        rule("PodStatusError",
             f'sum by (namespace, pod, reason) (kube_pod_container_status_waiting_reason'
             f'{{reason!~"ContainerCreating|PodInitializing", {ns}}}) > 0',
             "Pod {{ $labels.namespace }}/{{ $labels.pod }} is in {{ $labels.reason }}", "1m"),
        rule("FailedPodsDetected", f'sum by (namespace, pod) (kube_pod_status_phase{{phase="Failed", {ns}}}) > 0',
             "Pod {{ $labels.namespace }}/{{ $labels.pod }} has failed", "1m"),
        rule("PendingPodsDetected", f'sum by (namespace, pod) (kube_pod_status_phase{{phase="Pending", {ns}}}) > 0',
             "Pod {{ $labels.namespace }}/{{ $labels.pod }} is Pending", "1m"),
        rule("PodSchedulingFailure", f"sum by (namespace, pod) (kube_pod_status_unschedulable{{{ns}}}) > 0",
             "Pod {{ $labels.namespace }}/{{ $labels.pod }} cannot be scheduled", "30s"),
        rule("DeploymentNotReady",
             f"kube_deployment_status_replicas_available{{{ns}}} < kube_deployment_spec_replicas{{{ns}}}",
             "Deployment {{ $labels.namespace }}/{{ $labels.deployment }} has fewer available replicas than desired",
             "1m"),
        rule("ServiceEndpointDown", f"kube_endpoint_address_available{{{ns}}} == 0",
             "Service {{ $labels.namespace }}/{{ $labels.endpoint }} does not answer: no ready endpoint", "1m"),
    ]
    resources = [
        rule("ContainerCPUThrottling",
             f"sum by (namespace, pod) (increase(container_cpu_cfs_throttled_periods_total{{{ns}}}[2m])) "
             f"/ sum by (namespace, pod) (increase(container_cpu_cfs_periods_total{{{ns}}}[2m])) > 0.25",
             "{{ $value | humanizePercentage }} CPU throttling in {{ $labels.namespace }}/{{ $labels.pod }}",
             "2m", severity="warning"),
    ]
    spans = f'{ns}, service_name!~"{UPSTREAM_EXCLUDED_SERVICES}"'
    window = settings.rate_window
    golden = [
        rule("HighRequestErrorRate",
             f'sum by (namespace, service_name) (rate(traces_span_metrics_calls_total{{status_code="STATUS_CODE_ERROR", '
             f"{spans}}}[{window}])) / sum by (namespace, service_name) "
             f"(rate(traces_span_metrics_calls_total{{{spans}}}[{window}])) > {s.error_ratio}",
             "{{ $value | humanizePercentage }} of {{ $labels.service_name }}'s requests fail", "1m"),
        rule("HighRequestLatency",
             f"histogram_quantile(0.95, sum by (namespace, service_name, le) "
             f'(rate(traces_span_metrics_duration_milliseconds_bucket{{span_kind="SPAN_KIND_SERVER", {spans}}}'
             f"[{window}]))) > {s.latency_p95_s * 1000:g}",
             "p95 latency of {{ $labels.service_name }} is {{ $value }} ms", "1m"),
    ]
    return [{"name": "app.workloads", "rules": workloads}, {"name": "app.resources", "rules": resources},
            {"name": "app.goldensignal", "rules": golden}]


def render_alert_rules(settings: PrometheusSettings) -> str:
    return yaml.safe_dump(alert_rules(settings), sort_keys=False, width=1000)


def prometheus_args(*, config_file: str, data_dir: str, listen: str = "0.0.0.0:9090",
                    retention_time: str = "2h", retention_size: str = "512MB") -> list[str]:
    """Command-line flags for Prometheus (without the binary)."""
    return [
        f"--config.file={config_file}",
        f"--storage.tsdb.path={data_dir}",
        f"--storage.tsdb.retention.time={retention_time}",
        f"--storage.tsdb.retention.size={retention_size}",
        f"--web.listen-address={listen}",
        # no --web.enable-lifecycle: its /-/reload and /-/quit take no credential (issue #34)
    ]


def supports_kubernetes_sd(promtool: str = "/usr/bin/promtool") -> bool:
    """Whether the installed Prometheus build knows ``kubernetes_sd_configs`` (Debian's does not)."""
    import subprocess
    import tempfile

    probe = "scrape_configs:\n- job_name: probe\n  kubernetes_sd_configs:\n  - role: pod\n    api_server: https://127.0.0.1:1\n"
    with tempfile.NamedTemporaryFile("w", suffix=".yml") as handle:
        handle.write(probe)
        handle.flush()
        try:
            result = subprocess.run([promtool, "check", "config", "--syntax-only", handle.name],
                                    capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return False
    return result.returncode == 0


def write_config_dir(directory: Path, settings: PrometheusSettings) -> Path:
    """Write ``prometheus.yml`` and ``rules.yml`` into ``directory``; return the config path."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "rules.yml").write_text(render_alert_rules(settings))
    config = directory / "prometheus.yml"
    config.write_text(render_prometheus_config(settings))
    return config
