"""Structured JSON logs on stdout, one object per line, readable by an SRE.

Every line carries ``ts``, ``level``, ``service`` and a stable snake_case ``event``; data goes in
key/value pairs. Errors about a dependency always name ``peer``, ``addr`` and ``error`` so that
``kubectl logs`` alone points at the broken hop.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40}
_lock = threading.Lock()
_state: dict[str, Any] = {"service": "hotel", "min_level": 20}


def configure(service: str, level: str = "info") -> None:
    """Set the service name stamped on every line and the minimum level written."""
    _state["service"] = service
    _state["min_level"] = _LEVELS.get(level.lower(), 20)


def log(level: str, event: str, **fields: Any) -> None:
    """Write one JSON log line; never raises (a logging failure must not take a request down)."""
    if _LEVELS.get(level, 20) < _state["min_level"]:
        return
    record: dict[str, Any] = {
        "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + f".{int(time.time() * 1000) % 1000:03d}Z",
        "level": level,
        "service": _state["service"],
        "event": event,
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
