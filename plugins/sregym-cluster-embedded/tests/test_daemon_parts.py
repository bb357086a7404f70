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
