from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RunningServer:
    def __init__(self, process: subprocess.Popen, url: str, log_path: Path) -> None:
        self.process = process
        self.url = url
        self.log_path = log_path

    @property
    def pid(self) -> int:
        return self.process.pid


def wait_http(url: str, process: subprocess.Popen | None = None, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"server exited early with {process.returncode}")
        try:
            if httpx.get(url, timeout=1.0).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise TimeoutError(f"{url} did not answer within {timeout}s")


def stop_process(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


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
