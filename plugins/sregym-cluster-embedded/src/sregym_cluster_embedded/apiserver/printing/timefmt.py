"""Timestamps and the human durations kubectl shows in AGE-like columns."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

UNKNOWN = "<unknown>"


def parse_time(value: Any) -> datetime | None:
    """Parse an RFC 3339 timestamp as the API serializes it; None when absent or malformed."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if not isinstance(value, str) or not value:
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def human_duration(seconds_float: float) -> str:
    """Render a duration exactly like apimachinery's ``duration.HumanDuration``.

    Up to two seconds in the future still reads as "now" (clock skew); further is ``<invalid>``.
    Precision drops as durations grow: ``45s``, ``3m12s``, ``15m``, ``5h``, ``5h30m``, ``2d3h``, ``9d``, ``2y3d``.
    """
    if math.isnan(seconds_float):
        return "<invalid>"
    seconds = int(seconds_float)  # truncates toward zero, like Go's int(d.Seconds())
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 60 * 2:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        rest = seconds % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = seconds // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        years = hours // 24 // 365
        return f"{years}y" if days == 0 else f"{years}y{days}d"
    return f"{hours // 24 // 365}y"


def since(value: Any, now: datetime) -> str:
    """``translateTimestampSince``: the age of a timestamp, or ``<unknown>`` when it is unset."""
    moment = parse_time(value)
    if moment is None:
        return UNKNOWN
    return human_duration((now - moment).total_seconds())


def between(start: Any, end: Any) -> str:
    """Human duration from ``start`` to ``end`` (both timestamps); ``<unknown>`` if either is unset."""
    first, last = parse_time(start), parse_time(end)
    if first is None or last is None:
        return UNKNOWN
    return human_duration((last - first).total_seconds())


def rfc3339(value: Any) -> str:
    """A timestamp re-rendered as RFC 3339 in UTC with second precision (``Created At`` columns)."""
    moment = parse_time(value)
    if moment is None:
        return ""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
