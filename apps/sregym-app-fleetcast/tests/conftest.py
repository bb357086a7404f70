"""FleetCast tests (the SREGym harness comes from the repository's root conftest): a real Redis
server for the service and the workload generator (skipped where Debian's redis-server is missing)."""

from __future__ import annotations

import shutil
import subprocess
import time

import pytest

from sregym_core.testing.localservers import free_port


@pytest.fixture(scope="session")
def redis_port(tmp_path_factory):
    """The port of a fresh redis-server on 127.0.0.1 (no persistence)."""
    binary = shutil.which("redis-server", path="/usr/bin:/usr/local/bin:/usr/sbin")
    if not binary:
        pytest.skip("needs Debian's redis-server (tools/setup.sh installs it)")
    port = free_port()
    workdir = tmp_path_factory.mktemp("redis")
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(workdir)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import redis
    client = redis.Redis(port=port)
    deadline = time.monotonic() + 30
    while True:
        try:
            client.ping()
            break
        except redis.ConnectionError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail("redis-server did not start")
            time.sleep(0.1)
    yield port
    proc.terminate()
    proc.wait(10)
