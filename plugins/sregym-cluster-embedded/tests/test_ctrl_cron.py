"""The cron parser behind the CronJob controller."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sregym_cluster_embedded.controllers.cron import CronError, parse


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.parametrize("expr,after,expected", [
    ("*/15 * * * *", "2026-01-01T10:07:00", "2026-01-01T10:15:00"),
    ("0 9 * * mon-fri", "2026-01-02T09:00:00", "2026-01-05T09:00:00"),  # Fri 09:00 -> Mon
    ("30 2 1 * *", "2026-01-15T00:00:00", "2026-02-01T02:30:00"),
    ("@hourly", "2026-01-01T10:59:00", "2026-01-01T11:00:00"),
    ("@daily", "2026-12-31T23:00:00", "2027-01-01T00:00:00"),
    ("0 0 * * 7", "2026-01-01T00:00:00", "2026-01-04T00:00:00"),  # 7 is Sunday too
    ("5,10-12 * * * *", "2026-01-01T10:10:00", "2026-01-01T10:11:00"),
    ("0 0 13 * 5", "2026-01-01T00:00:00", "2026-01-02T00:00:00"),  # day-of-month OR day-of-week
    ("0 0 1 feb *", "2026-03-01T00:00:00", "2027-02-01T00:00:00"),
])
def test_next_after(expr, after, expected):
    assert parse(expr).next_after(at(after)) == at(expected)


@pytest.mark.parametrize("expr", ["* * * *", "61 * * * *", "a b c d e", "*/0 * * * *", "5-1 * * * *",
                                  "TZ=UTC * * * * *", ""])
def test_bad_schedules_are_rejected(expr):
    with pytest.raises(CronError):
        parse(expr)


def test_last_before_counts_missed_runs():
    last, missed = parse("* * * * *").last_before(at("2026-01-01T10:00:30"), at("2026-01-01T10:05:10"))
    assert last == at("2026-01-01T10:05:00") and missed == 5
    assert parse("@every 90s").next_after(at("2026-01-01T10:00:00")) == at("2026-01-01T10:01:30")
