"""SREGym hook implementations: local images for the embedded cluster and the agents' tools."""

from __future__ import annotations

import sys
from typing import Any

from sregym_core import hookimpl
from sregym_core.types import LocalImage, ObservabilitySpec, ToolSpec

from . import tools, upstream_tools

_MINUTES = {"type": "integer", "minimum": 1, "maximum": 1440}


@hookimpl
def sregym_local_images() -> list[LocalImage]:
    return [
        LocalImage(image="sregym/observability:*", argv=(sys.executable, "-m", "sregym_observability.serve"),
                   summary="SREGym log store, trace store and cluster exporters (component chosen by args)"),
        LocalImage(image="prom/prometheus:*", argv=("/usr/bin/prometheus",),
                   summary="Prometheus from the Debian package (no Kubernetes SD: use HTTP SD)"),
        LocalImage(image="quay.io/prometheus/prometheus:*", argv=("/usr/bin/prometheus",),
                   summary="Prometheus from the Debian package"),
    ]


def _schema(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


@hookimpl
def sregym_agent_tools() -> list[ToolSpec]:
    return [
        ToolSpec(name="get_metrics", summary="Run a PromQL instant query against Prometheus.",
                 parameters=_schema({"query": {"type": "string", "description": "PromQL expression"}}, ("query",)),
                 call=tools.get_metrics,
                 upstream_call=upstream_tools.get_metrics),
        ToolSpec(name="get_alerts", summary="List firing and pending Prometheus alerts.",
                 parameters=_schema({}), call=tools.get_alerts,
                 upstream_call=upstream_tools.get_alerts),
        ToolSpec(name="get_logs",
                 summary="Recent log lines for a LogQL query ({namespace=\"x\", app=\"y\"} |= \"error\") or a "
                         "service name.",
                 parameters=_schema({"query": {"type": "string"}, "last_n_minutes": _MINUTES}, ("query",)),
                 call=tools.get_logs,
                 upstream_call=upstream_tools.get_logs),
        ToolSpec(name="get_labels", summary="Log label names (Loki).", parameters=_schema({}), call=tools.get_labels),
        ToolSpec(name="get_label_values", summary="The values of one log label (Loki).",
                 parameters=_schema({"label": {"type": "string"}}, ("label",)), call=tools.get_label_values),
        ToolSpec(name="get_services", summary="Services that reported traces.", parameters=_schema({}),
                 call=tools.get_services,
                 upstream_call=upstream_tools.get_services),
        ToolSpec(name="get_operations", summary="Operation names of one traced service.",
                 parameters=_schema({"service": {"type": "string"}}, ("service",)), call=tools.get_operations,
                 upstream_call=upstream_tools.get_operations),
        ToolSpec(name="get_traces",
                 summary="Summary of recent traces through a service: error spans, slowest spans, per-operation "
                         "counts.",
                 parameters=_schema({"service": {"type": "string"}, "last_n_minutes": _MINUTES}, ("service",)),
                 call=tools.get_traces,
                 upstream_call=upstream_tools.get_traces),
        ToolSpec(name="get_dependency_graph", summary="Service-to-service call edges seen in traces.",
                 parameters=_schema({"last_n_minutes": _MINUTES}), call=tools.get_dependency_graph,
                 upstream_call=upstream_tools.get_dependency_graph),
    ]


def _render(*, app_namespaces: tuple[str, ...] = (), hidden_namespaces: tuple[str, ...] = ()) -> str:
    from .manifests import StackSettings, render_manifests

    return render_manifests(StackSettings(app_namespaces=tuple(app_namespaces), hidden_namespaces=tuple(hidden_namespaces)))


@hookimpl
def sregym_observability() -> list[ObservabilitySpec]:
    from .manifests import NAMESPACE, PORTS, StackSettings, otlp_endpoint

    return [ObservabilitySpec(
        name="sregym-observability",
        summary="Prometheus + alert rules, a Loki-API log store, an OTLP/Jaeger-API trace store, cluster exporters",
        namespace=NAMESPACE, render=_render,
        services={"prometheus": ("prometheus", PORTS["prometheus"]), "loki": ("loki", PORTS["loki"]),
                  "jaeger": ("jaeger", PORTS["jaeger"]), "otlp": ("jaeger", PORTS["otlp"])},
        otlp_endpoint=otlp_endpoint(StackSettings()),
    )]
