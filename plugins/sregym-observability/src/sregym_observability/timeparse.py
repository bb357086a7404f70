"""Timestamps and durations in the formats Loki, Jaeger and Kubernetes use on the wire."""

from __future__ import annotations

import re
from datetime import UTC, datetime

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h|d|w|y)")
_UNIT_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0,
           "d": 86400.0, "w": 7 * 86400.0, "y": 365 * 86400.0}
_RFC3339 = re.compile(
    r"(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|z|[+-]\d{2}:\d{2})?$"
)


def parse_duration(text: str) -> float:
    """``"1h30m"``, ``"250ms"``, ``"1.5s"`` → seconds. Raise ValueError on anything else."""
    text = text.strip()
    pos, total = 0, 0.0
    for found in _DURATION.finditer(text):
        if found.start() != pos:
            break
        total += float(found.group(1)) * _UNIT_S[found.group(2)]
        pos = found.end()
    if pos != len(text) or not text:
        raise ValueError(f"invalid duration {text!r} (use a number with a unit, e.g. 500ms, 30s, 5m, 1h)")
    return total


def parse_rfc3339_ns(text: str) -> int:
    """RFC 3339 with up to nanosecond precision → Unix nanoseconds."""
    found = _RFC3339.match(text.strip())
    if not found:
        raise ValueError(f"invalid RFC3339 timestamp {text!r}")
    day, clock, frac, zone = found.groups()
    zone = "+00:00" if zone in (None, "Z", "z") else zone
    base = datetime.fromisoformat(f"{day}T{clock}{zone}")
    nanos = int((frac or "").ljust(9, "0")) if frac else 0
    return int(base.timestamp()) * 1_000_000_000 + nanos


def parse_loki_time(text: str) -> int:
    """A Loki time parameter → Unix nanoseconds.

    Loki accepts integer nanoseconds, integer seconds (10 digits or fewer), float seconds and
    RFC 3339.
    """
    text = text.strip()
    if re.fullmatch(r"-?\d+", text):
        value = int(text)
        return value * 1_000_000_000 if len(text.lstrip("-")) <= 10 else value
    if re.fullmatch(r"-?\d+\.\d*", text):
        return int(float(text) * 1e9)
    try:
        return parse_rfc3339_ns(text)
    except ValueError:
        raise ValueError(
            f"cannot parse {text!r} to a valid timestamp (use Unix nanoseconds, seconds or RFC3339)"
        ) from None


def format_rfc3339_ns(ns: int) -> str:
    seconds, nanos = divmod(ns, 1_000_000_000)
    stamp = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{nanos:09d}Z"
