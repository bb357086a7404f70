from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from obs_helpers import free_port, stop_process, wait_http


class RunningServer:
    def __init__(self, process: subprocess.Popen, url: str, log_path: Path) -> None:
        self.process = process
        self.url = url
        self.log_path = log_path

    @property
    def pid(self) -> int:
        return self.process.pid


def launch(component: str, extra: tuple[str, ...], log_dir: Path, started: list[subprocess.Popen]) -> RunningServer:
    """Start ``python -m sregym_observability.serve <component>`` on a free 127.0.0.1 port."""
    port = free_port()
    log_path = log_dir / f"{component}-{port}.log"
    with open(log_path, "wb") as handle:
        process = subprocess.Popen(
            [sys.executable, "-m", "sregym_observability.serve", component, "--host", "127.0.0.1",
             "--port", str(port), *extra],
            stdout=handle, stderr=subprocess.STDOUT,
        )
    started.append(process)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(url + "/ready", process)
    except Exception:
        raise RuntimeError(f"{component} failed to start: {log_path.read_text()}") from None
    return RunningServer(process, url, log_path)


@pytest.fixture
def start_component(tmp_path: Path) -> Iterator:
    started: list[subprocess.Popen] = []
    yield lambda component, *extra: launch(component, extra, tmp_path, started)
    for process in started:
        stop_process(process)


@pytest.fixture(scope="module")
def module_server_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    started: list[subprocess.Popen] = []
    log_dir = tmp_path_factory.mktemp("servers")
    yield lambda component, *extra: launch(component, extra, log_dir, started)
    for process in started:
        stop_process(process)
