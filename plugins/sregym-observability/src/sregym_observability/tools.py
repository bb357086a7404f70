"""The agents' observability tools: compact, bounded text over the real wire APIs.

Each function takes an :class:`Endpoints` record first (or anything with the same attributes, such
as ``sregym_core.types.ObservabilityEndpoints``) and speaks the Prometheus HTTP API, the Loki
HTTP API or the Jaeger query API, so it works against this package's servers and against real
Prometheus, Loki and Jaeger alike. Failures come back as explanations, never exceptions: an agent
reads the text and decides what to do next.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

import attrs
import httpx

from .timeparse import format_rfc3339_ns, parse_rfc3339_ns

DEFAULT_MAX_CHARS = 8000
_ERRORISH = re.compile(r"error|exception|fail|refused|timeout|timed out|unavailable|panic|fatal|traceback|denied|"
                       r"oomkilled|crash", re.IGNORECASE)


@attrs.frozen(kw_only=True)
class Endpoints:
    """Where the observability APIs are.

    Attributes:
        prometheus_url: base URL of the Prometheus HTTP API (``http://host:9090``).
        loki_url: base URL of a Loki-compatible log API (``http://host:3100``).
        jaeger_url: base URL of the Jaeger query API (``http://host:16686``).
        headers: extra HTTP headers (e.g. ``Authorization``) sent to every endpoint.
        timeout_s: per-request timeout.
        max_chars: size bound of every tool answer.
    """

    prometheus_url: str | None = None
    loki_url: str | None = None
    jaeger_url: str | None = None
    headers: Mapping[str, str] = attrs.field(factory=dict)
    timeout_s: float = 15.0
    max_chars: int = DEFAULT_MAX_CHARS


class _ToolFailure(Exception):
    """Carries the explanation shown to the agent."""


def _max_chars(endpoints: Any) -> int:
    return int(getattr(endpoints, "max_chars", DEFAULT_MAX_CHARS))


def _bound(text: str, max_chars: int, *, keep: str = "head") -> str:
    if len(text) <= max_chars:
        return text
    lines = text.splitlines()
    kept: list[str] = []
    size = 0
    budget = max_chars - 120
    ordered = lines if keep == "head" else list(reversed(lines))
    for line in ordered:
        if size + len(line) + 1 > budget:
            break
        kept.append(line)
        size += len(line) + 1
    dropped = len(lines) - len(kept)
    note = f"[... truncated: {dropped} more lines not shown; narrow the query to see them]"
    if keep == "head":
        return "\n".join(kept + [note])
    return "\n".join([note] + list(reversed(kept)))


def _get(endpoints: Any, base: str | None, what: str, path: str, params: Mapping[str, Any] | None = None) -> Any:
    if not base:
        raise _ToolFailure(f"{what} is not configured for this environment (no URL was given).")
    url = base.rstrip("/") + path
    timeout = float(getattr(endpoints, "timeout_s", 15.0))
    try:
        response = httpx.get(url, params=params, headers=dict(getattr(endpoints, "headers", {}) or {}),
                             timeout=timeout)
    except httpx.TimeoutException:
        raise _ToolFailure(f"{what} at {base} did not answer within {timeout:.0f}s; "
                           "try a narrower query or retry shortly.") from None
    except httpx.HTTPError as err:
        raise _ToolFailure(f"{what} is not reachable at {base} ({type(err).__name__}: {err}). "
                           "The observability stack may be down or still starting; retry shortly.") from None
    if response.status_code >= 400:
        raise _ToolFailure(_explain_http_error(what, response))
    try:
        return response.json()
    except ValueError:
        raise _ToolFailure(f"{what} at {base} answered with something that is not JSON "
                           f"(HTTP {response.status_code}: {response.text[:200]!r}).") from None


def _explain_http_error(what: str, response: httpx.Response) -> str:
    detail = response.text.strip()
    try:
        body = response.json()
        if isinstance(body, dict):
            if body.get("error"):  # Prometheus
                detail = f"{body.get('errorType', 'error')}: {body['error']}"
            elif body.get("errors"):  # Jaeger
                detail = "; ".join(str(e.get("msg", e)) for e in body["errors"])
    except ValueError:
        pass
    return f"{what} rejected the request (HTTP {response.status_code}): {detail[:1000]}"


def _tool(fn: Callable[..., str]) -> Callable[..., str]:
    def wrapper(endpoints: Endpoints, *args: Any, **kwargs: Any) -> str:
        try:
            text = fn(endpoints, *args, **kwargs)
        except _ToolFailure as failure:
            return str(failure)
        return text

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


def _labels(metric: Mapping[str, str], skip: tuple[str, ...] = ()) -> str:
    name = metric.get("__name__", "")
    inner = ", ".join(f'{k}="{v}"' for k, v in sorted(metric.items()) if k != "__name__" and k not in skip)
    return f"{name}{{{inner}}}"


def _num(value: str) -> str:
    try:
        number = float(value)
    except ValueError:
        return value
    if number != number or number in (float("inf"), float("-inf")):
        return value
    if number.is_integer() and abs(number) < 1e15:
        return str(int(number))
    return f"{number:.4g}"


def _ago(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h{(seconds % 3600) // 60}m"


# -- metrics -------------------------------------------------------------------------------------


@_tool
def get_metrics(endpoints: Endpoints, query: str) -> str:
    """Run a PromQL instant query; series are listed largest value first."""
    if not query or not query.strip():
        return ('Give a PromQL query, e.g. sum by (namespace, pod) (rate(container_cpu_usage_seconds_total[1m])) '
                'or kube_pod_container_status_restarts_total{namespace="..."}.')
    body = _get(endpoints, endpoints.prometheus_url, "Prometheus", "/api/v1/query", {"query": query})
    if body.get("status") != "success":
        return f"Prometheus could not run the query: {body.get('errorType', '')} {body.get('error', body)}"
    data = body.get("data") or {}
    kind = data.get("resultType")
    result: Any = data.get("result")
    warnings = body.get("warnings") or []
    lines: list[str] = []
    if kind in ("scalar", "string"):
        lines.append(f"{kind}: {_num(str(result[1]))}")
    elif kind == "vector":
        if not result:
            return (f"No series matched `{query}`. The metric may not exist or its labels differ; list names with "
                    '`count by (__name__) ({__name__=~".+", namespace="<ns>"})` or drop label matchers.')
        result = sorted(result, key=lambda s: _sort_key(s["value"][1]), reverse=True)
        lines.append(f"{len(result)} series (largest first):")
        lines += [f"{_labels(s['metric'])} = {_num(s['value'][1])}" for s in result]
    elif kind == "matrix":
        if not result:
            return f"No series matched `{query}`."
        lines.append(f"{len(result)} series (range vector; showing last, min and max of each):")
        for series in result:
            values = [float(v) for _, v in series["values"]]
            lines.append(f"{_labels(series['metric'])}: last={_num(series['values'][-1][1])} "
                         f"min={_num(str(min(values)))} max={_num(str(max(values)))} samples={len(values)}")
    else:
        lines.append(json.dumps(data)[:2000])
    lines += [f"warning: {w}" for w in warnings]
    return _bound("\n".join(lines), _max_chars(endpoints))


def _sort_key(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        return float("-inf")
    return number if number == number else float("-inf")


@_tool
def get_alerts(endpoints: Endpoints) -> str:
    """Firing and pending alerts, firing first, with their labels and summaries."""
    body = _get(endpoints, endpoints.prometheus_url, "Prometheus", "/api/v1/alerts")
    alerts = (body.get("data") or {}).get("alerts") or []
    if not alerts:
        return "No alerts are firing or pending."
    now = time.time()
    order = {"firing": 0, "pending": 1}
    severity = {"critical": 0, "warning": 1}
    alerts.sort(key=lambda a: (order.get(a.get("state"), 2), severity.get(a["labels"].get("severity"), 2),
                               a["labels"].get("alertname", "")))
    counts = Counter(a.get("state") for a in alerts)
    lines = [f"{counts.get('firing', 0)} firing, {counts.get('pending', 0)} pending alerts:"]
    for alert in alerts:
        labels = alert.get("labels") or {}
        scope = " ".join(f"{k}={v}" for k, v in sorted(labels.items()) if k not in ("alertname", "severity"))
        since = ""
        if alert.get("activeAt"):
            try:
                since = f" for {_ago(now - parse_rfc3339_ns(alert['activeAt']) / 1e9)}"
            except ValueError:
                pass
        summary = (alert.get("annotations") or {}).get("summary") or (alert.get("annotations") or {}).get(
            "description", "")
        lines.append(f"[{alert.get('state')}] {labels.get('alertname')} ({labels.get('severity', 'none')}){since}: "
                     f"{summary} | {scope}")
    return _bound("\n".join(lines), _max_chars(endpoints))


# -- logs ----------------------------------------------------------------------------------------

_LABEL_VALUE = re.compile(r"^[A-Za-z0-9._-]+$")


def _log_queries(query: str) -> list[str]:
    """A LogQL query as given, or for a bare name the selectors a service's logs may be under."""
    text = query.strip()
    if text.startswith("{"):
        return [text]
    name, _, needle = text.partition(" ")
    if not _LABEL_VALUE.match(name):
        raise _ToolFailure(f"{query!r} is neither a LogQL query (starting with '{{') nor a service name. "
                           'Examples: geo, or {namespace="hotel-reservation", app="geo"} |= "error".')
    suffix = f" |= {json.dumps(needle.strip())}" if needle.strip() else ""
    return [f'{{app="{name}"}}{suffix}', f'{{container="{name}"}}{suffix}', f'{{pod=~"{re.escape(name)}.*"}}{suffix}']


_METRIC_QUERY = re.compile(r"^\s*(sum|count|max|min|avg|count_over_time|rate|bytes_over_time|bytes_rate)\b")


def _log_metric(endpoints: Any, query: str) -> str:
    body = _get(endpoints, endpoints.loki_url, "The log store (Loki API)", "/loki/api/v1/query", {"query": query})
    result = (body.get("data") or {}).get("result") or []
    if not result:
        return f"`{query}` is empty now: no matching log lines in its range."
    result.sort(key=lambda s: _sort_key(s["value"][1]), reverse=True)
    lines = [f"{len(result)} series (largest first):"]
    lines += [f"{_labels(s['metric'])} = {_num(s['value'][1])}" for s in result]
    return _bound("\n".join(lines), _max_chars(endpoints))


@_tool
def get_logs(endpoints: Endpoints, query: str, last_n_minutes: int = 15, limit: int = 200) -> str:
    """Log lines for a LogQL query or a bare service name over the last minutes, oldest first.

    A LogQL metric query (``sum by (app) (count_over_time({namespace="x"} |= "error" [5m]))``) is
    evaluated now and its series listed instead.
    """
    if _METRIC_QUERY.match(query or ""):
        return _log_metric(endpoints, query)
    try:
        minutes = max(1, min(int(last_n_minutes), 24 * 60))
        limit = max(1, min(int(limit), 1000))
    except (TypeError, ValueError):
        return "last_n_minutes and limit must be whole numbers."
    end = time.time_ns()
    start = end - minutes * 60 * 1_000_000_000
    streams: list[dict] = []
    used = ""
    for candidate in _log_queries(query):
        body = _get(endpoints, endpoints.loki_url, "The log store (Loki API)", "/loki/api/v1/query_range",
                    {"query": candidate, "start": str(start), "end": str(end), "limit": str(limit),
                     "direction": "backward"})
        streams = ((body.get("data") or {}).get("result")) or []
        used = candidate
        if streams:
            break
    if not streams:
        return (f"No log lines in the last {minutes} minutes for {used}. List what exists with the Loki label "
                "API (labels app, namespace, pod, container), or widen last_n_minutes.")
    entries: list[tuple[int, str, str]] = []
    for stream in streams:
        labels = stream.get("stream") or {}
        where = f"{labels.get('namespace', '?')}/{labels.get('pod', labels.get('app', '?'))}"
        if labels.get("container") and labels.get("container") != labels.get("app"):
            where += f"[{labels['container']}]"
        for ts, line in stream.get("values") or []:
            entries.append((int(ts), where, line))
    entries.sort()
    errorish = sum(1 for _, _, line in entries if _ERRORISH.search(line))
    header = (f"{len(entries)} lines from {len(streams)} streams for {used} over the last {minutes} min "
              f"({errorish} look like errors); oldest first"
              + (f", newest {limit} only" if len(entries) >= limit else "") + ":")
    lines = [f"{format_rfc3339_ns(ts)[11:23]} {where} {line}" for ts, where, line in entries]
    # Keep the newest lines when the answer is too long: they are closest to the present.
    return header + "\n" + _bound("\n".join(lines), _max_chars(endpoints) - len(header) - 1, keep="tail")


@_tool
def get_labels(endpoints: Endpoints) -> str:
    """The log label names, in upstream SREGym's shape: ``Available labels:`` then one per line."""
    body = _get(endpoints, endpoints.loki_url, "The log store (Loki API)", "/loki/api/v1/labels")
    names = sorted(body.get("data") or [])
    if not names:
        return "No labels found: no log lines have been stored yet."
    return _bound("Available labels:\n" + "\n".join(f"  - {name}" for name in names), _max_chars(endpoints))


@_tool
def get_label_values(endpoints: Endpoints, label: str) -> str:
    """The values of one log label (e.g. ``app``: the services that log)."""
    if not label or not _LABEL_VALUE.match(label):
        return "Give a label name; get_labels lists them (e.g. app, namespace, pod, container)."
    body = _get(endpoints, endpoints.loki_url, "The log store (Loki API)",
                f"/loki/api/v1/label/{quote(label, safe='')}/values")
    values = sorted(body.get("data") or [])
    if not values:
        return f"No values for label {label!r}; get_labels lists the labels that exist."
    return _bound(f"Values of label '{label}':\n" + "\n".join(f"  - {value}" for value in values),
                  _max_chars(endpoints))


# -- traces --------------------------------------------------------------------------------------


@_tool
def get_services(endpoints: Endpoints) -> str:
    """Services that reported traces."""
    body = _get(endpoints, endpoints.jaeger_url, "The trace store (Jaeger API)", "/api/services")
    services = sorted(body.get("data") or [])
    if not services:
        return "No service has reported traces yet (the apps may not be instrumented, or no requests were served)."
    return _bound(f"{len(services)} services with traces: " + ", ".join(services), _max_chars(endpoints))


@_tool
def get_operations(endpoints: Endpoints, service: str) -> str:
    """Operation (span) names of one service."""
    if not service:
        return "Give a service name; get_services lists them."
    body = _get(endpoints, endpoints.jaeger_url, "The trace store (Jaeger API)",
                f"/api/services/{quote(service, safe='')}/operations")
    ops = sorted(body.get("data") or [])
    if not ops:
        return f"No operations recorded for service {service!r}; get_services lists the services with traces."
    return _bound(f"{len(ops)} operations of {service}:\n" + "\n".join(ops), _max_chars(endpoints))


def _tags(span: Mapping[str, Any]) -> dict[str, Any]:
    return {t.get("key"): t.get("value") for t in span.get("tags") or []}


def _is_error(span: Mapping[str, Any]) -> bool:
    tags = _tags(span)
    return tags.get("error") in (True, "true") or tags.get("otel.status_code") == "ERROR"


def _error_text(span: Mapping[str, Any]) -> str:
    tags = _tags(span)
    for key in ("otel.status_description", "error.message", "exception.message", "http.status_code",
                "rpc.grpc.status_code"):
        if tags.get(key) not in (None, ""):
            return f"{key}={tags[key]}"
    for log in span.get("logs") or []:
        fields = {f.get("key"): f.get("value") for f in log.get("fields") or []}
        if fields.get("exception.message"):
            return f"exception={fields['exception.message']}"
    return "error"


@_tool
def get_traces(endpoints: Endpoints, service: str, last_n_minutes: int = 15, limit: int = 100) -> str:
    """A summary of recent traces through ``service``: error spans first, slowest spans, per-operation stats."""
    if not service:
        return "Give a service name; get_services lists them."
    try:
        minutes = max(1, min(int(last_n_minutes), 24 * 60))
        limit = max(1, min(int(limit), 500))
    except (TypeError, ValueError):
        return "last_n_minutes and limit must be whole numbers."
    end_us = time.time_ns() // 1000
    # Explicit start/end (µs) as well as lookback: real Jaeger versions differ in which they honour.
    body = _get(endpoints, endpoints.jaeger_url, "The trace store (Jaeger API)", "/api/traces",
                {"service": service, "start": str(end_us - minutes * 60_000_000), "end": str(end_us),
                 "lookback": f"{minutes}m", "limit": str(limit)})
    traces = body.get("data") or []
    if not traces:
        return (f"No traces through {service!r} in the last {minutes} minutes. "
                "Check the name with get_services, or widen last_n_minutes.")
    spans: list[tuple[str, dict, str]] = []  # (service, span, trace id)
    error_traces = set()
    for trace in traces:
        processes = trace.get("processes") or {}
        for span in trace.get("spans") or []:
            owner = (processes.get(span.get("processID")) or {}).get("serviceName", "?")
            spans.append((owner, span, trace.get("traceID", "")))
            if _is_error(span):
                error_traces.add(trace.get("traceID"))
    lines = [f"{len(traces)} traces through {service} in the last {minutes} min ({len(error_traces)} with errors, "
             f"{len(spans)} spans across {len({s for s, _, _ in spans})} services)."]
    errors = [(s, sp, t) for s, sp, t in spans if _is_error(sp)]
    if errors:
        grouped: dict[tuple[str, str, str], list[str]] = defaultdict(list)
        for owner, span, trace_id in errors:
            grouped[(owner, span.get("operationName", ""), _error_text(span))].append(trace_id)
        lines.append("Error spans (service / operation / cause: count, example trace):")
        for (owner, op, cause), ids in sorted(grouped.items(), key=lambda item: -len(item[1]))[:20]:
            lines.append(f"  {owner} / {op} / {cause}: {len(ids)}x, e.g. {ids[0]}")
    else:
        lines.append("No error spans.")
    slowest = sorted(spans, key=lambda item: item[1].get("duration", 0), reverse=True)[:8]
    lines.append("Slowest spans:")
    for owner, span, trace_id in slowest:
        lines.append(f"  {span.get('duration', 0) / 1000:.1f} ms  {owner} / {span.get('operationName')}  "
                     f"(trace {trace_id})")
    stats: dict[tuple[str, str], list[int]] = defaultdict(list)
    failures: Counter[tuple[str, str]] = Counter()
    for owner, span, _ in spans:
        stats[(owner, span.get("operationName", ""))].append(int(span.get("duration", 0)))
        if _is_error(span):
            failures[(owner, span.get("operationName", ""))] += 1
    lines.append("Per operation (count, errors, p50 / max ms):")
    for key, durations in sorted(stats.items(), key=lambda item: (-failures[item[0]], -len(item[1]))):
        durations.sort()
        p50 = durations[len(durations) // 2] / 1000
        lines.append(f"  {key[0]} / {key[1]}: {len(durations)}, {failures[key]} errors, "
                     f"{p50:.1f} / {durations[-1] / 1000:.1f} ms")
    return _bound("\n".join(lines), _max_chars(endpoints))


@_tool
def get_dependency_graph(endpoints: Endpoints, last_n_minutes: int = 60) -> str:
    """Service-to-service call edges seen in traces, busiest first."""
    try:
        minutes = max(1, min(int(last_n_minutes), 7 * 24 * 60))
    except (TypeError, ValueError):
        return "last_n_minutes must be a whole number."
    body = _get(endpoints, endpoints.jaeger_url, "The trace store (Jaeger API)", "/api/dependencies",
                {"endTs": str(int(time.time() * 1000)), "lookback": str(minutes * 60 * 1000)})
    links = body.get("data") or []
    if not links:
        return f"No service-to-service calls were traced in the last {minutes} minutes."
    links.sort(key=lambda link: -int(link.get("callCount", 0)))
    lines = [f"{len(links)} call edges in the last {minutes} min (caller -> callee: calls):"]
    lines += [f"{link.get('parent')} -> {link.get('child')}: {link.get('callCount')}" for link in links]
    return _bound("\n".join(lines), _max_chars(endpoints))


# -- async variants for asyncio servers (the MCP server runs the blocking calls in a thread) -------


async def aget_metrics(endpoints: Endpoints, query: str) -> str:
    return await asyncio.to_thread(get_metrics, endpoints, query)


async def aget_alerts(endpoints: Endpoints) -> str:
    return await asyncio.to_thread(get_alerts, endpoints)


async def aget_logs(endpoints: Endpoints, query: str, last_n_minutes: int = 15) -> str:
    return await asyncio.to_thread(get_logs, endpoints, query, last_n_minutes)


async def aget_labels(endpoints: Endpoints) -> str:
    return await asyncio.to_thread(get_labels, endpoints)


async def aget_label_values(endpoints: Endpoints, label: str) -> str:
    return await asyncio.to_thread(get_label_values, endpoints, label)


async def aget_services(endpoints: Endpoints) -> str:
    return await asyncio.to_thread(get_services, endpoints)


async def aget_operations(endpoints: Endpoints, service: str) -> str:
    return await asyncio.to_thread(get_operations, endpoints, service)


async def aget_traces(endpoints: Endpoints, service: str, last_n_minutes: int = 15) -> str:
    return await asyncio.to_thread(get_traces, endpoints, service, last_n_minutes)


async def aget_dependency_graph(endpoints: Endpoints, last_n_minutes: int = 60) -> str:
    return await asyncio.to_thread(get_dependency_graph, endpoints, last_n_minutes)
