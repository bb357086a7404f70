"""The live fault contracts prove a rotating daily sample of their cases by default (--matrix: all):
every case is in exactly one day's group, so successive CI runs cover the whole matrix."""

from __future__ import annotations

from sregym_core.testing.live import daily_sample

NAMES = [f"fault-{i:02d}" for i in range(10)]


def test_groups_rotate_by_day_and_cover_every_case():
    days = [daily_sample(NAMES, 4, day) for day in range(3)]
    assert days[0] == NAMES[0:4] and days[1] == NAMES[4:8]
    assert days[2] == NAMES[8:10] + NAMES[0:2]  # the short last group is topped up from the start
    assert set().union(*days) == set(NAMES)
    assert daily_sample(NAMES, 4, 3) == days[0]  # then it starts over


def test_small_sets_run_whole_and_the_environment_picks_size_and_group(monkeypatch):
    assert daily_sample(NAMES[:3], 4, 7) == NAMES[:3]
    monkeypatch.setenv("SREGYM_LIVE_SAMPLE", "2")
    monkeypatch.setenv("SREGYM_LIVE_GROUP", "1")
    assert daily_sample(reversed(NAMES)) == NAMES[2:4]
