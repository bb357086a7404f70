from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from otlp_receiver import OtlpReceiver  # noqa: E402
from sregym_app_hotel_reservation.localrun import LocalApp, free_port  # noqa: E402

pytest_plugins = ["sregym_core.testing"]


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
    pids = app.pids()
    yield app
    app.close()
    time.sleep(0.2)
    alive = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    assert not alive, f"processes left running: {alive}"


def http(url: str, method: str = "GET", body: dict[str, Any] | None = None,
         timeout: float = 10) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read()
            status = resp.status
    except urllib.error.HTTPError as exc:
        raw, status = exc.read(), exc.code
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode(errors="replace")


class Workload:
    """The workload generator as a local process."""

    def __init__(self, target: str, workdir: Path, **flags: Any) -> None:
        self.port = free_port()
        argv = [sys.executable, "-m", "sregym_app_hotel_reservation.serve", "workload", "--target", target,
                "--host", "127.0.0.1", "--port", str(self.port)]
        for key, value in flags.items():
            argv += [f"--{key.replace('_', '-')}", str(value)]
        self.log = workdir / f"workload-{self.port}.log"
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                         env={**os.environ, "PYTHONUNBUFFERED": "1"})
        deadline = time.monotonic() + 20
        while True:
            try:
                if http(self.url("/healthz"), timeout=1)[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError(f"workload generator did not start: {self.log.read_text()[-2000:]}")
            time.sleep(0.1)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def stats(self, window: float = 60) -> dict[str, Any]:
        return http(self.url(f"/stats?window={window:g}"))[1]

    def control(self, **body: Any) -> tuple[int, Any]:
        return http(self.url("/control"), "POST", body)

    def wait_finished(self, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            progress = http(self.url("/control"))[1]
            if not progress["running"] and progress["inflight"] == 0:
                return progress
            time.sleep(0.2)
        raise TimeoutError("workload run did not finish")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


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
