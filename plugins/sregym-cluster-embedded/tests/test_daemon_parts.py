"""The cluster process starts an explicit list of parts and fails as a whole when one fails."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from sregym_cluster_embedded import daemon
from sregym_cluster_embedded.settings import ClusterSettings


def test_a_part_that_fails_to_start_fails_the_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken_network(client, settings):
        raise RuntimeError("network part is broken")

    monkeypatch.setattr(daemon, "start_network", broken_network)
    settings = ClusterSettings(name="parts", state_dir=tmp_path / "parts", nodes=0, pod_cidr_prefix="127.250",
                               service_cidr_prefix="127.251")

    async def scenario() -> list[str]:
        proc = daemon.ClusterProcess(settings)
        await proc.start_api()
        try:
            with pytest.raises(RuntimeError, match="network part is broken"):
                await proc.start_parts()
            started = [name for name, _ in proc.parts]
        finally:
            await proc.stop()
        assert proc.parts == []
        return started

    # the controllers had started and were stopped again; nothing after the broken part ran
    assert asyncio.run(scenario()) == ["controllers"]


def test_the_node_monitor_grace_period_comes_from_the_environment(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from sregym_core.errors import ConfigError

    from sregym_cluster_embedded.controllers.base import Timings
    from sregym_cluster_embedded.settings import node_monitor_grace_period

    monkeypatch.setenv("SREGYM_HOME", str(tmp_path))
    monkeypatch.delenv("SREGYM_NODE_MONITOR_GRACE_PERIOD", raising=False)
    assert Timings.from_settings(daemon.make_settings("grace", 1)).node_monitor_grace_seconds == 40.0
    monkeypatch.setenv("SREGYM_NODE_MONITOR_GRACE_PERIOD", "20")
    assert Timings.from_settings(daemon.make_settings("grace", 1)).node_monitor_grace_seconds == 20.0
    for bad in ("5", "soon"):  # shorter than two Lease renewals, or not a number: the user's error, with a hint
        monkeypatch.setenv("SREGYM_NODE_MONITOR_GRACE_PERIOD", bad)
        with pytest.raises(ConfigError, match="SREGYM_NODE_MONITOR_GRACE_PERIOD") as err:
            node_monitor_grace_period()
        assert err.value.hints
