"""An in-memory log store with retention bounded by bytes, age and stream count.

Each stream (a unique label set) keeps its entries in a deque ordered by timestamp. A global
arrival-order deque lets the store evict the oldest entry of the whole store in O(1): entries carry
a sequence number, and a global record whose entry was already evicted by its stream's own cap is
simply skipped.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import time
from collections import deque
from collections.abc import Iterable, Mapping

import attrs

from .logql import LogQuery, MetricQuery

# Rough per-entry overhead of the Python objects (tuples, ints) beyond the line's own characters,
# so the byte budget tracks real memory rather than payload only.
ENTRY_OVERHEAD = 160
MAX_LINE_BYTES = 16 * 1024


@attrs.frozen(kw_only=True)
class LogRetention:
    """Limits of a :class:`LogStore`.

    Attributes:
        max_bytes: global budget over all streams (line bytes plus per-entry overhead).
        max_stream_bytes: budget of one stream, so one chatty container cannot evict the others.
        max_age_s: entries older than this (by arrival) are dropped.
        max_streams: distinct label sets kept; the least recently written stream goes first.
    """

    max_bytes: int = 64 * 1024 * 1024
    max_stream_bytes: int = 8 * 1024 * 1024
    max_age_s: float = 2 * 3600.0
    max_streams: int = 5000


@attrs.define
class _Stream:
    labels: dict[str, str]
    entries: deque[tuple[int, int, str]] = attrs.Factory(deque)  # (ts_ns, seq, line)
    bytes: int = 0
    last_write: float = 0.0


def _entry_cost(line: str) -> int:
    return len(line) + ENTRY_OVERHEAD


def stream_key(labels: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(labels.items()))


@attrs.define
class LogStore:
    """Append-only, bounded log store queried with :class:`~sregym_observability.logql.LogQuery`."""

    retention: LogRetention = attrs.Factory(LogRetention)
    _streams: dict[tuple[tuple[str, str], ...], _Stream] = attrs.Factory(dict)
    _arrivals: deque[tuple[float, int, tuple[tuple[str, str], ...]]] = attrs.Factory(deque)
    _seq: itertools.count[int] = attrs.Factory(itertools.count)
    total_bytes: int = 0
    dropped_entries: int = 0
    ingested_entries: int = 0

    # -- writing ---------------------------------------------------------------------------------

    def append(self, labels: Mapping[str, str], entries: Iterable[tuple[int, str]]) -> int:
        """Add ``(timestamp_ns, line)`` entries to the stream ``labels``; return how many were kept."""
        key = stream_key(labels)
        stream = self._streams.get(key)
        now = time.time()
        if stream is None:
            self._make_room_for_stream()
            stream = self._streams[key] = _Stream(dict(labels))
        stream.last_write = now
        kept = 0
        for ts, line in entries:
            if len(line) > MAX_LINE_BYTES:
                line = line[:MAX_LINE_BYTES] + " …[truncated]"
            # Streams stay time-ordered: a late entry is clamped to the stream's newest timestamp
            # (Loki would reject it; clamping keeps the line visible).
            if stream.entries and ts < stream.entries[-1][0]:
                ts = stream.entries[-1][0]
            seq = next(self._seq)
            cost = _entry_cost(line)
            stream.entries.append((ts, seq, line))
            stream.bytes += cost
            self.total_bytes += cost
            self._arrivals.append((now, seq, key))
            kept += 1
            while stream.bytes > self.retention.max_stream_bytes and stream.entries:
                self._drop_head(stream)
        self.ingested_entries += kept
        self._enforce_global(now)
        return kept

    def _drop_head(self, stream: _Stream) -> None:
        _, _, line = stream.entries.popleft()
        cost = _entry_cost(line)
        stream.bytes -= cost
        self.total_bytes -= cost
        self.dropped_entries += 1

    def _enforce_global(self, now: float) -> None:
        horizon = now - self.retention.max_age_s
        while self._arrivals and (
            self.total_bytes > self.retention.max_bytes or self._arrivals[0][0] < horizon
        ):
            _, seq, key = self._arrivals.popleft()
            stream = self._streams.get(key)
            if stream is not None and stream.entries and stream.entries[0][1] == seq:
                self._drop_head(stream)
                if not stream.entries:
                    del self._streams[key]
        # Arrival records of entries already evicted by a stream cap are skipped lazily above; keep
        # that backlog bounded too so it cannot grow without limit.
        if len(self._arrivals) > 4 * max(1, self.entry_count()) + 1024:
            self._arrivals = deque(
                (t, s, k) for t, s, k in self._arrivals
                if (st := self._streams.get(k)) is not None and st.entries and s >= st.entries[0][1]
            )

    def _make_room_for_stream(self) -> None:
        if len(self._streams) < self.retention.max_streams:
            return
        stalest = min(self._streams, key=lambda k: self._streams[k].last_write)
        stream = self._streams.pop(stalest)
        self.total_bytes -= stream.bytes
        self.dropped_entries += len(stream.entries)

    def expire(self) -> None:
        """Apply the age limit now (a periodic task calls this so idle stores also shrink)."""
        self._enforce_global(time.time())

    def clear(self) -> None:
        self.dropped_entries += self.entry_count()
        self._streams.clear()
        self._arrivals.clear()
        self.total_bytes = 0

    # -- reading ---------------------------------------------------------------------------------

    def entry_count(self) -> int:
        return sum(len(s.entries) for s in self._streams.values())

    def stream_count(self) -> int:
        return len(self._streams)

    def select(
        self, query: LogQuery, start_ns: int, end_ns: int, *, limit: int, backward: bool = True
    ) -> list[tuple[dict[str, str], list[tuple[int, str]]]]:
        """Entries of matching streams with ``start_ns <= ts < end_ns``, at most ``limit`` overall.

        ``backward`` keeps the newest ``limit`` entries (Loki's default direction); the result is
        grouped per stream, each stream's values sorted in the requested direction.
        """
        candidates: list[tuple[int, int, str, tuple[tuple[str, str], ...]]] = []
        for key, stream in self._streams.items():
            if not stream.entries or not query.selects(stream.labels):
                continue
            keep = query.line_predicate(stream.labels)
            entries = stream.entries
            # Entries are time-ordered: skip streams entirely outside the range.
            if entries[0][0] >= end_ns or entries[-1][0] < start_ns:
                continue
            found: list[tuple[int, int, str, tuple[tuple[str, str], ...]]] = []
            if backward:
                for ts, seq, line in reversed(entries):
                    if ts >= end_ns:
                        continue
                    if ts < start_ns:
                        break
                    if keep is None or keep(line):
                        found.append((ts, seq, line, key))
                        if len(found) >= limit:
                            break
            else:
                for ts, seq, line in entries:
                    if ts < start_ns:
                        continue
                    if ts >= end_ns:
                        break
                    if keep is None or keep(line):
                        found.append((ts, seq, line, key))
                        if len(found) >= limit:
                            break
            candidates.extend(found)
        chosen = (heapq.nlargest if backward else heapq.nsmallest)(limit, candidates)
        grouped: dict[tuple[tuple[str, str], ...], list[tuple[int, str]]] = {}
        for ts, _, line, key in chosen:
            grouped.setdefault(key, []).append((ts, line))
        return [(dict(self._streams[key].labels), values) for key, values in grouped.items()]

    def label_names(self, start_ns: int | None = None, end_ns: int | None = None) -> list[str]:
        names: set[str] = set()
        for stream in self._streams_in_range(start_ns, end_ns):
            names.update(stream.labels)
        return sorted(names)

    def label_values(self, name: str, start_ns: int | None = None, end_ns: int | None = None,
                     query: LogQuery | None = None) -> list[str]:
        values: set[str] = set()
        for stream in self._streams_in_range(start_ns, end_ns):
            if name in stream.labels and (query is None or query.selects(stream.labels)):
                values.add(stream.labels[name])
        return sorted(values)

    def _streams_in_range(self, start_ns: int | None, end_ns: int | None) -> Iterable[_Stream]:
        for stream in self._streams.values():
            if not stream.entries:
                continue
            first, last = stream.entries[0][0], stream.entries[-1][0]
            if start_ns is not None and last < start_ns:
                continue
            if end_ns is not None and first >= end_ns:
                continue
            yield stream


def evaluate_metric(store: LogStore, query: MetricQuery, steps_ns: list[int], *,
                    max_series: int = 1000) -> list[tuple[dict[str, str], list[tuple[int, float]]]]:
    """Evaluate ``query`` at each timestamp of ``steps_ns``: one (labels, [(ts, value)]) per series."""
    range_ns = int(query.range_s * 1e9)
    lo, hi = steps_ns[0] - range_ns, steps_ns[-1]
    per_series: dict[tuple[tuple[str, str], ...], list[float]] = {}
    by_bytes = query.function.startswith("bytes")
    for stream in list(query_streams(store, query.log)):
        keep = query.log.line_predicate(stream.labels)
        times: list[int] = []
        sizes: list[int] = []
        for ts, _, line in stream.entries:
            if ts <= lo or ts > hi:
                continue
            if keep is None or keep(line):
                times.append(ts)
                sizes.append(len(line.encode()))
        if not times:
            continue
        prefix = list(itertools.accumulate(sizes, initial=0))
        values = []
        for step in steps_ns:
            first = bisect.bisect_right(times, step - range_ns)
            last = bisect.bisect_right(times, step)
            amount = float(prefix[last] - prefix[first]) if by_bytes else float(last - first)
            if query.function in ("rate", "bytes_rate"):
                amount /= query.range_s
            values.append(amount)
        key = stream_key(query.series_labels(stream.labels))
        if key not in per_series and len(per_series) >= max_series:
            continue
        _combine(per_series, key, values, query.aggregation)
    out = []
    for key, values in per_series.items():
        if query.aggregation == "avg":
            total, count = values[: len(steps_ns)], values[len(steps_ns):]
            values = [t / c if c else 0.0 for t, c in zip(total, count, strict=True)]
        out.append((dict(key), list(zip(steps_ns, values, strict=True))))
    return out


def _combine(per_series: dict, key: tuple, values: list[float], aggregation: str | None) -> None:
    if aggregation == "count":
        values = [1.0 if v else 0.0 for v in values]
    if aggregation == "avg":
        values = values + [1.0] * len(values)  # totals then counts
    existing = per_series.get(key)
    if existing is None:
        per_series[key] = list(values)
        return
    if aggregation in (None, "sum", "count", "avg"):
        per_series[key] = [a + b for a, b in zip(existing, values, strict=True)]
    elif aggregation == "max":
        per_series[key] = [max(a, b) for a, b in zip(existing, values, strict=True)]
    elif aggregation == "min":
        per_series[key] = [min(a, b) for a, b in zip(existing, values, strict=True)]


def query_streams(store: LogStore, query: LogQuery) -> Iterable[_Stream]:
    for stream in store._streams.values():
        if stream.entries and query.selects(stream.labels):
            yield stream
