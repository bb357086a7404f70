"""Request metrics derived from spans, under the names upstream SREGym's alert rules watch.

Upstream's apps are measured through the OpenTelemetry collector's span-metrics connector: a call
counter and a duration histogram per service, span name, kind and status, exported to Prometheus as
``traces_span_metrics_calls_total`` and ``traces_span_metrics_duration_milliseconds_*`` with labels
``service_name``, ``span_name``, ``span_kind``, ``status_code`` (upstream-parity.md, last
sections). The trace store counts every span it receives the same way and serves the families at
``/metrics`` on its port, so the project's apps (which also export their own ``hotel_rpc_*``,
``shop_rpc_*``... metrics) are seen under upstream's names too. ``namespace`` is the span's
``service.namespace`` resource attribute (the app's namespace), so namespace-scoped rules select
them as they select the app's own metrics.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from .otlp import SPAN_KINDS, STATUS_ERROR, STATUS_OK, Span
from .promtext import escape_label, format_value

CALLS = "traces_span_metrics_calls_total"
DURATION = "traces_span_metrics_duration_milliseconds"
#: Histogram bounds in milliseconds (the span-metrics connector's defaults).
BUCKETS_MS: tuple[float, ...] = (2, 4, 6, 8, 10, 50, 100, 200, 400, 800, 1000, 1400, 2000, 5000, 10000, 15000)
_STATUS = {STATUS_OK: "STATUS_CODE_OK", STATUS_ERROR: "STATUS_CODE_ERROR"}

_Key = tuple[str, str, str, str, str]  # namespace, service_name, span_name, span_kind, status_code


@attrs.define
class _Series:
    calls: int = 0
    sum_ms: float = 0.0
    buckets: list[int] = attrs.Factory(lambda: [0] * len(BUCKETS_MS))


@attrs.define
class SpanMetrics:
    """Monotonic counters over every span received (independent of the store's retention)."""

    _series: dict[_Key, _Series] = attrs.Factory(dict)

    def record(self, spans: Iterable[Span]) -> None:
        for span in spans:
            kind = f"SPAN_KIND_{SPAN_KINDS.get(span.kind, 'unspecified').upper()}"
            key = (str(span.resource.get("service.namespace", "")), span.service, span.name, kind,
                   _STATUS.get(span.status_code, "STATUS_CODE_UNSET"))
            series = self._series.get(key)
            if series is None:
                series = self._series[key] = _Series()
            millis = span.duration_ns / 1e6
            series.calls += 1
            series.sum_ms += millis
            for index, bound in enumerate(BUCKETS_MS):
                if millis <= bound:
                    series.buckets[index] += 1
                    break

    def render(self) -> str:
        """The Prometheus text exposition: one counter family and one histogram family."""
        calls = [f"# HELP {CALLS} Spans received, per service, span name, kind and status.", f"# TYPE {CALLS} counter"]
        durations = [f"# HELP {DURATION} Span durations in milliseconds.", f"# TYPE {DURATION} histogram"]
        for (namespace, service, name, kind, status), series in sorted(self._series.items()):
            labels = {"service_name": service, "span_name": name, "span_kind": kind, "status_code": status}
            if namespace:
                labels = {"namespace": namespace, **labels}
            calls.append(_sample(CALLS, labels, series.calls))
            cumulative = 0
            for bound, count in zip(BUCKETS_MS, series.buckets, strict=True):
                cumulative += count
                durations.append(_sample(f"{DURATION}_bucket", {**labels, "le": _bound(bound)}, cumulative))
            durations.append(_sample(f"{DURATION}_bucket", {**labels, "le": "+Inf"}, series.calls))
            durations.append(_sample(f"{DURATION}_sum", labels, series.sum_ms))
            durations.append(_sample(f"{DURATION}_count", labels, series.calls))
        return "\n".join(calls + durations) + "\n"


def _sample(name: str, labels: dict[str, str], value: float) -> str:
    rendered = ",".join(f'{key}="{escape_label(str(text))}"' for key, text in labels.items())
    return f"{name}{{{rendered}}} {format_value(value)}"


def _bound(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))
