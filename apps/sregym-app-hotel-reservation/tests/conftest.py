"""Fixtures for the hotel tests (the SREGym harness comes from the repository's root conftest)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sregym_core.testing.processes import snapshot, survivors

sys.path.insert(0, str(Path(__file__).parent))

from hotel_testlib import OtlpReceiver, Workload  # noqa: E402
from sregym_app_hotel_reservation.localrun import LocalApp  # noqa: E402


def have_local_datastores() -> bool:
    from sregym_app_hotel_reservation.localrun import pg_bin
    try:
        pg_bin("initdb")
    except FileNotFoundError:
        return False
    return shutil.which("memcached") is not None


needs_datastores = pytest.mark.skipif(not have_local_datastores(), reason="needs PostgreSQL and memcached binaries")


@pytest.fixture(scope="session")
def otlp() -> Iterator[OtlpReceiver]:
    receiver = OtlpReceiver().start()
    yield receiver
    receiver.stop()


@pytest.fixture(scope="session")
def hotel(otlp: OtlpReceiver, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalApp]:
    """The whole app as local processes, shared by the slow tests (each restores what it breaks)."""
    if not have_local_datastores():
        pytest.skip("needs PostgreSQL and memcached binaries")
    app = LocalApp(tmp_path_factory.mktemp("hotel"), otlp_endpoint=otlp.endpoint)
    app.start()
    started = snapshot(app.pids())
    yield app
    current = snapshot(app.pids())  # tests restart services; the ones running now must stop too
    app.close()
    alive = survivors(started + current)
    assert not alive, f"processes left running: {alive}"


@pytest.fixture
def workload_factory(tmp_path: Path) -> Iterator[Any]:
    started: list[Workload] = []

    def make(target: str, **flags: Any) -> Workload:
        w = Workload(target, tmp_path, **flags)
        started.append(w)
        return w

    yield make
    for w in started:
        w.stop()
