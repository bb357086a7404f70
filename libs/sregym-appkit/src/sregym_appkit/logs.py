"""Structured JSON logs on stdout, one object per line, readable by an SRE.

Every line carries ``ts``, ``level``, ``service`` and a stable snake_case ``event``; data goes in
key/value pairs. Errors about a dependency should name ``peer``, ``addr`` and ``error`` so that
``kubectl logs`` alone points at the broken hop. A line written inside a traced request also carries
``trace_id`` and ``span_id``, so a log line leads to its trace (as an OpenTelemetry log bridge does).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

from opentelemetry import trace as _trace

LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40}
_lock = threading.Lock()
_state: dict[str, Any] = {"service": "app", "min_level": 20}


def configure(service: str, level: str = "info") -> None:
    """Set the service name stamped on every line and the minimum level written."""
    _state["service"] = service
    _state["min_level"] = LEVELS.get(level.lower(), 20)


def _trace_ids() -> dict[str, str]:
    ctx = _trace.get_current_span().get_span_context()
    if not ctx.is_valid:
        return {}
    return {"trace_id": format(ctx.trace_id, "032x"), "span_id": format(ctx.span_id, "016x")}


def log(level: str, event: str, **fields: Any) -> None:
    """Write one JSON log line; never raises (a logging failure must not take a request down)."""
    if LEVELS.get(level, 20) < _state["min_level"]:
        return
    now = time.time()
    record: dict[str, Any] = {
        "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}Z",
        "level": level,
        "service": _state["service"],
        "event": event,
        **_trace_ids(),
    }
    record.update(fields)
    try:
        line = json.dumps(record, default=str, separators=(",", ":"))
    except (TypeError, ValueError):
        line = json.dumps({"level": level, "event": event, "unserializable": repr(fields)})
    with _lock:
        try:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
        except (OSError, ValueError):
            pass


def debug(event: str, **fields: Any) -> None:
    log("debug", event, **fields)


def info(event: str, **fields: Any) -> None:
    log("info", event, **fields)


def warning(event: str, **fields: Any) -> None:
    log("warning", event, **fields)


def error(event: str, **fields: Any) -> None:
    log("error", event, **fields)
