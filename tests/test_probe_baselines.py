"""The live contract's latency baselines are per app: a slow app measured first must not hide a
faster app's latency symptom (CI failed cpu-pressure and load-burst on Hotel Reservation because the
baseline had been measured on TrainTicket)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sregym_core.testing import probes
from sregym_core.testing.probes import Live


def _live(namespace: str, latency_s: float) -> Live:
    live = Live(Path("/nonexistent"), "kubectl", namespace, {}, None, 0.0)
    live.call = lambda endpoint, timeout=10: (200, latency_s)  # type: ignore[method-assign]
    return live


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    monkeypatch.setattr(probes, "HEALTHY_MS", {})
    monkeypatch.setattr(probes, "HEALTHY_BURST_MS", {})


def test_baselines_are_kept_per_app():
    probes.HEALTHY_MS["train-ticket"] = [400.0, 420.0, 410.0]
    probes.HEALTHY_MS["hotel-reservation"] = [8.0, 10.0, 12.0]
    assert probes.healthy_ms(_live("hotel-reservation", 0)) == 10.0
    assert probes.healthy_ms(_live("train-ticket", 0)) == 410.0
    assert probes.healthy_ms(_live("social-network", 0)) == 50.0  # not measured yet: the default


def test_slower_judges_against_its_own_apps_baseline():
    probes.HEALTHY_MS["train-ticket"] = [400.0]
    probes.HEALTHY_MS["hotel-reservation"] = [10.0]
    probe = probes.slower("search", 2.0, probes.healthy_ms)
    assert probe(_live("hotel-reservation", 0.05)) is not None  # 50 ms against 10 ms: the symptom shows
    assert probe(_live("train-ticket", 0.05)) is None  # 50 ms is healthy for the slower app
