"""The observability tools in upstream SREGym's return shapes (the per-family MCP mounts on :9954).

Upstream's tools hand the agent the backend's JSON almost raw, as Python ``str()`` of the decoded
value; the project's own tools (:mod:`.tools`) summarise instead. A harness written against
upstream parses these strings, so the shapes follow ``upstream-parity.md`` §2.3 exactly:

=======================  =====================================================================
tool                     answer
=======================  =====================================================================
get_metrics(query)       ``str(body["data"])`` of ``/api/v1/query`` (``{'resultType': …, 'result': […]}``)
get_alerts()             ``str([firing alerts])`` of ``/api/v1/alerts``, or ``"No firing alerts"``
get_logs(query, 15)      ``query_range`` limit 100, one ``[YYYY-mm-dd HH:MM:SS] [k=v, …] line`` per entry
get_services()           ``str(data)`` of ``/api/services``
get_operations(service)  ``str(data)`` of ``/api/operations?service=…``
get_traces(service, n)   ``str(data)`` of ``/api/traces`` with limit 20
get_dependency_graph(30) ``str(body)`` of ``/api/dependencies``
=======================  =====================================================================

Where the facts say nothing (an empty log answer, an unreachable backend) the answer is the
project's explanation text, never an exception. Timestamps of log lines are UTC.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from .tools import Endpoints, _get, _tool

#: upstream's fixed page sizes
LOG_LIMIT = 100
TRACE_LIMIT = 20

NO_FIRING_ALERTS = "No firing alerts"


@_tool
def get_metrics(endpoints: Endpoints, query: str) -> str:
    body = _get(endpoints, endpoints.prometheus_url, "Prometheus", "/api/v1/query", {"query": query})
    return str(body.get("data"))


@_tool
def get_alerts(endpoints: Endpoints) -> str:
    body = _get(endpoints, endpoints.prometheus_url, "Prometheus", "/api/v1/alerts")
    firing = [alert for alert in (body.get("data") or {}).get("alerts") or [] if alert.get("state") == "firing"]
    return str(firing) if firing else NO_FIRING_ALERTS


def _log_time(ns: str) -> str:
    return datetime.fromtimestamp(int(ns) / 1e9, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


@_tool
def get_logs(endpoints: Endpoints, query: str, last_n_minutes: int = 15) -> str:
    try:
        minutes = int(last_n_minutes)
    except (TypeError, ValueError):
        return "last_n_minutes must be a whole number."
    end = time.time_ns()
    body = _get(endpoints, endpoints.loki_url, "The log store (Loki API)", "/loki/api/v1/query_range",
                {"query": query, "start": str(end - minutes * 60 * 1_000_000_000), "end": str(end),
                 "limit": str(LOG_LIMIT)})
    lines = []
    for stream in (body.get("data") or {}).get("result") or []:
        labels = ", ".join(f"{key}={value}" for key, value in (stream.get("stream") or {}).items())
        lines += [f"[{_log_time(ts)}] [{labels}] {line}" for ts, line in stream.get("values") or []]
    if not lines:
        return f"No logs found for {query} in the last {minutes} minutes."
    return "\n".join(lines)


@_tool
def get_services(endpoints: Endpoints) -> str:
    body = _get(endpoints, endpoints.jaeger_url, "The trace store (Jaeger API)", "/api/services")
    return str(body.get("data") or [])


@_tool
def get_operations(endpoints: Endpoints, service: str) -> str:
    body = _get(endpoints, endpoints.jaeger_url, "The trace store (Jaeger API)", "/api/operations",
                {"service": service})
    return str(body.get("data") or [])


@_tool
def get_traces(endpoints: Endpoints, service: str, last_n_minutes: int) -> str:
    try:
        minutes = int(last_n_minutes)
    except (TypeError, ValueError):
        return "last_n_minutes must be a whole number."
    end_us = time.time_ns() // 1000
    body = _get(endpoints, endpoints.jaeger_url, "The trace store (Jaeger API)", "/api/traces",
                {"service": service, "start": str(end_us - minutes * 60_000_000), "end": str(end_us),
                 "lookback": f"{minutes}m", "limit": str(TRACE_LIMIT)})
    return str(body.get("data") or [])


@_tool
def get_dependency_graph(endpoints: Endpoints, last_n_minutes: int = 30) -> str:
    try:
        minutes = int(last_n_minutes)
    except (TypeError, ValueError):
        return "last_n_minutes must be a whole number."
    body: Any = _get(endpoints, endpoints.jaeger_url, "The trace store (Jaeger API)", "/api/dependencies",
                     {"endTs": str(int(time.time() * 1000)), "lookback": str(minutes * 60 * 1000)})
    return str(body)


#: tool name -> the upstream-shaped variant (get_labels/get_label_values already answer in upstream's shape)
UPSTREAM_VARIANTS = {
    "get_metrics": get_metrics, "get_alerts": get_alerts, "get_logs": get_logs, "get_services": get_services,
    "get_operations": get_operations, "get_traces": get_traces, "get_dependency_graph": get_dependency_graph,
}
