"""cache-tiny's check of the running cache: its stats query against a real memcached (the binary the
embedded cluster runs for the memcached image) and against a stub in its place."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from sregym_core.testing.localservers import free_port, start_server, stop_server
from sregym_core.types import ComponentSpec
from sregym_fault_datastore import caches
from sregym_fault_datastore.caches import _STATS, limit_maxbytes, tiny_present


def _stats(port: int) -> str:
    return subprocess.run([sys.executable, "-c", _STATS, "127.0.0.1", str(port)], capture_output=True, text=True,
                          timeout=20).stdout


@pytest.fixture
def memcached():
    if not shutil.which("memcached"):
        pytest.skip("no memcached binary")
    procs = []

    def start(megabytes: int) -> int:
        port = free_port()
        # memcached refuses to run as root without -u
        procs.append(start_server(["memcached", "-l", "127.0.0.1", "-p", str(port), "-m", str(megabytes),
                                   "-u", "nobody"], port))
        return port

    yield start
    for proc in procs:
        stop_server(proc)


def test_the_stats_query_reads_a_real_memcacheds_memory_cap(memcached):
    assert limit_maxbytes(_stats(memcached(2))) == 2 << 20
    assert limit_maxbytes(_stats(memcached(64))) == 64 << 20


def test_a_stub_in_the_caches_place_does_not_answer_as_a_memcached():
    class Ok(BaseHTTPRequestHandler):  # what the stub-replace hacker runs on the cache's port
        def do_GET(self):
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Ok)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert limit_maxbytes(_stats(server.server_address[1])) is None
    finally:
        server.shutdown()


class FakeCluster:
    """kubectl for the cache's Deployment (its args) and one running pod answering ``stats`` with ``answer``."""

    def __init__(self, args: list[str], answer: str) -> None:
        self.args, self.answer, self.namespace, self.state = args, answer, "hotel", {}

    def kubectl(self, *args: str, check: bool = True, **_kw) -> str:
        if args[:2] == ("get", "Deployment"):
            return json.dumps({"spec": {"selector": {"matchLabels": {"app": "mc"}},
                                        "template": {"spec": {"containers": [{"name": "memcached", "args": self.args}]}}}})
        if args[:2] == ("get", "pods"):
            return json.dumps({"items": [{"metadata": {"name": "mc-1"}, "status": {"phase": "Running", "podIP": "127.0.0.9"}}]})
        if args[0] == "exec":
            return self.answer
        raise AssertionError(f"unexpected kubectl {args}")


class _Target:
    component = ComponentSpec(name="memcached-profile", kind="Deployment", roles=("cache:memcached",), ports=(11211,))


@pytest.mark.parametrize("args, answer, present", [
    (["-m", "2"], "STAT limit_maxbytes 67108864\r\nEND\r\n", True),    # configured tiny: a restart keeps it
    (["-m", "64"], "STAT limit_maxbytes 2097152\r\nEND\r\n", True),    # the running cache is still the tiny one
    (["-m", "64"], "HTTP/1.0 400 Bad request\r\n", True),              # a stub in its place caches nothing
    (["-m", "64"], "STAT limit_maxbytes 67108864\r\nEND\r\n", False),  # fixed: served with its memory back
])
def test_present_while_the_cache_serving_profile_is_tiny_or_no_cache_at_all(args, answer, present, monkeypatch):
    monkeypatch.setattr(caches.kube, "workload", lambda ctx, target: json.loads(ctx.kubectl("get", "Deployment")))
    assert tiny_present(FakeCluster(args, answer), _Target(), {"megabytes": 2}) is present
