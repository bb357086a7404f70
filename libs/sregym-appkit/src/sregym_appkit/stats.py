"""Every request a workload generator sends, in a ring buffer, and the windowed summaries oracles read.

The summary (``summarize``) is the functional SLO every app's ``/stats`` serves: count, success,
errors, success_rate, content errors by kind (the status looked right but the answer contradicts
the app's data), latency percentiles and error kinds.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import deque
from typing import Any


@dataclasses.dataclass(frozen=True, slots=True)
class Record:
    """One finished request."""

    t: float  # wall-clock end time (time.time())
    endpoint: str
    status: int  # HTTP status, or 0 when no response arrived
    latency_ms: float
    ok: bool
    error: str = ""
    content_error: str = ""  # the status looked right but the answer contradicts the app's data


def percentile(sorted_values: list[float], q: float) -> float | None:
    if not sorted_values:
        return None
    index = min(len(sorted_values) - 1, max(0, int(round(q * (len(sorted_values) - 1)))))
    return round(sorted_values[index], 2)


def summarize(records: list[Record]) -> dict[str, Any]:
    latencies = sorted(r.latency_ms for r in records)
    success = sum(1 for r in records if r.ok)
    errors: dict[str, int] = {}
    content: dict[str, int] = {}
    for r in records:
        if r.content_error:
            content[r.content_error] = content.get(r.content_error, 0) + 1
        elif not r.ok:
            key = str(r.status) if r.status else (r.error or "error")
            errors[key] = errors.get(key, 0) + 1
    return {
        "count": len(records), "success": success, "errors": len(records) - success,
        "success_rate": round(success / len(records), 4) if records else None,
        "content_errors": sum(content.values()), "content_error_kinds": content,
        "p50_ms": percentile(latencies, 0.50), "p95_ms": percentile(latencies, 0.95),
        "p99_ms": percentile(latencies, 0.99), "error_kinds": errors,
    }


class RequestLog:
    """A bounded, thread-safe ring buffer of :class:`Record`."""

    def __init__(self, capacity: int = 200_000) -> None:
        self._records: deque[Record] = deque(maxlen=capacity)
        self._lock = threading.Lock()
        self.total = 0

    def add(self, record: Record) -> None:
        with self._lock:
            self._records.append(record)
            self.total += 1

    def window(self, seconds: float, now: float | None = None) -> list[Record]:
        cutoff = (time.time() if now is None else now) - seconds
        with self._lock:
            out = []
            for r in reversed(self._records):
                if r.t < cutoff:
                    break
                out.append(r)
        out.reverse()
        return out

    def stats(self, seconds: float) -> dict[str, Any]:
        records = self.window(seconds)
        summary = summarize(records)
        by_endpoint: dict[str, list[Record]] = {}
        for r in records:
            by_endpoint.setdefault(r.endpoint, []).append(r)
        summary["window_s"] = seconds
        summary["by_endpoint"] = {name: summarize(rs) for name, rs in sorted(by_endpoint.items())}
        return summary
