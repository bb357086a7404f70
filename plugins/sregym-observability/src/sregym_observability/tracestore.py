"""An in-memory trace store with retention bounded by span count and age.

Traces are kept in first-arrival order, so eviction drops whole traces, oldest first. A per
(service, operation) span count keeps ``/api/services`` in step with what is actually stored.
"""

from __future__ import annotations

import time
from collections import Counter, OrderedDict
from collections.abc import Iterable, Mapping

import attrs

from .otlp import SPAN_KINDS, Span
from .spanmetrics import SpanMetrics


@attrs.frozen(kw_only=True)
class TraceRetention:
    """Limits of a :class:`TraceStore`.

    Attributes:
        max_spans: spans kept over all traces; whole traces are evicted oldest first.
        max_spans_per_trace: later spans of a runaway trace are dropped.
        max_age_s: traces first seen longer ago than this are dropped.
    """

    max_spans: int = 200_000
    max_spans_per_trace: int = 5_000
    max_age_s: float = 2 * 3600.0


@attrs.define
class _Trace:
    arrived: float
    spans: list[Span] = attrs.Factory(list)
    start_ns: int = 0


@attrs.frozen(kw_only=True)
class TraceQuery:
    service: str
    operation: str | None = None
    tags: Mapping[str, str] = attrs.field(factory=dict)
    start_ns: int = 0
    end_ns: int = 2**63 - 1
    min_duration_ns: int | None = None
    max_duration_ns: int | None = None
    limit: int = 20


def span_tag_strings(span: Span) -> dict[str, str]:
    """The tags a Jaeger tag filter sees, as strings (attributes plus the OTLP-derived ones)."""
    tags = {k: _tag_text(v) for k, v in span.attributes.items()}
    if span.kind:
        tags["span.kind"] = SPAN_KINDS.get(span.kind, "unspecified")
    if span.is_error:
        tags["error"] = "true"
        tags["otel.status_code"] = "ERROR"
    elif span.status_code == 1:
        tags["otel.status_code"] = "OK"
    return tags


def _tag_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@attrs.define
class TraceStore:
    retention: TraceRetention = attrs.Factory(TraceRetention)
    _traces: OrderedDict[str, _Trace] = attrs.Factory(OrderedDict)
    _operations: Counter[tuple[str, str, int]] = attrs.Factory(Counter)  # (service, op, kind) -> spans
    total_spans: int = 0
    dropped_spans: int = 0
    #: every span received, counted as upstream's span-metrics connector counts (never cleared)
    metrics: SpanMetrics = attrs.Factory(SpanMetrics)

    def add(self, spans: Iterable[Span]) -> int:
        now = time.time()
        kept = 0
        spans = list(spans)
        self.metrics.record(spans)
        for span in spans:
            trace = self._traces.get(span.trace_id)
            if trace is None:
                trace = self._traces[span.trace_id] = _Trace(arrived=now, start_ns=span.start_ns)
            if len(trace.spans) >= self.retention.max_spans_per_trace:
                self.dropped_spans += 1
                continue
            trace.spans.append(span)
            trace.start_ns = min(trace.start_ns, span.start_ns)
            self._operations[(span.service, span.name, span.kind)] += 1
            self.total_spans += 1
            kept += 1
        self._enforce(now)
        return kept

    def _enforce(self, now: float) -> None:
        horizon = now - self.retention.max_age_s
        while self._traces:
            trace_id, oldest = next(iter(self._traces.items()))
            if self.total_spans <= self.retention.max_spans and oldest.arrived >= horizon:
                break
            del self._traces[trace_id]
            self._forget(oldest.spans)

    def _forget(self, spans: list[Span]) -> None:
        for span in spans:
            key = (span.service, span.name, span.kind)
            self._operations[key] -= 1
            if self._operations[key] <= 0:
                del self._operations[key]
        self.total_spans -= len(spans)
        self.dropped_spans += len(spans)

    def expire(self) -> None:
        self._enforce(time.time())

    def clear(self) -> None:
        self.dropped_spans += self.total_spans
        self._traces.clear()
        self._operations.clear()
        self.total_spans = 0

    # -- reading ---------------------------------------------------------------------------------

    def trace_count(self) -> int:
        return len(self._traces)

    def services(self) -> list[str]:
        return sorted({service for service, _, _ in self._operations})

    def operations(self, service: str, span_kind: str | None = None) -> list[tuple[str, str]]:
        found = {
            (op, SPAN_KINDS.get(kind, "unspecified"))
            for s, op, kind in self._operations
            if s == service and (span_kind is None or SPAN_KINDS.get(kind) == span_kind)
        }
        return sorted(found)

    def get(self, trace_id: str) -> list[Span] | None:
        trace = self._traces.get(trace_id.lower().rjust(32, "0"))
        return list(trace.spans) if trace else None

    def search(self, query: TraceQuery) -> list[list[Span]]:
        """Traces with at least one span matching every condition, newest first."""
        found: list[tuple[int, list[Span]]] = []
        for trace in reversed(self._traces.values()):
            if any(self._span_matches(span, query) for span in trace.spans):
                found.append((trace.start_ns, list(trace.spans)))
        found.sort(key=lambda item: item[0], reverse=True)
        return [spans for _, spans in found[: query.limit]]

    @staticmethod
    def _span_matches(span: Span, query: TraceQuery) -> bool:
        if span.service != query.service:
            return False
        if query.operation and span.name != query.operation:
            return False
        if not (query.start_ns <= span.start_ns <= query.end_ns):
            return False
        if query.min_duration_ns is not None and span.duration_ns < query.min_duration_ns:
            return False
        if query.max_duration_ns is not None and span.duration_ns > query.max_duration_ns:
            return False
        if query.tags:
            tags = span_tag_strings(span)
            if any(tags.get(k) != v for k, v in query.tags.items()):
                return False
        return True

    def dependencies(self, start_ns: int, end_ns: int) -> list[tuple[str, str, int]]:
        """(parent service, child service, call count) from parent/child spans across services."""
        calls: Counter[tuple[str, str]] = Counter()
        for trace in self._traces.values():
            by_id = {span.span_id: span for span in trace.spans}
            for span in trace.spans:
                if not (start_ns <= span.start_ns <= end_ns) or not span.parent_span_id:
                    continue
                parent = by_id.get(span.parent_span_id)
                if parent is not None and parent.service != span.service:
                    calls[(parent.service, span.service)] += 1
        return sorted((p, c, n) for (p, c), n in calls.items())
