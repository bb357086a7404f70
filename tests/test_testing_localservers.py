"""sregym_core.testing.localservers: the loopback servers unit tests start, and nothing left behind."""

from __future__ import annotations

import sys

import pytest

from sregym_core.testing.localservers import accepts, free_port, local_server, start_server

SERVE = [sys.executable, "-m", "http.server", "--bind", "127.0.0.1"]


def test_a_server_is_handed_over_listening_and_is_gone_after_the_block():
    port = free_port()
    with local_server([*SERVE, str(port)], port) as proc:
        assert accepts(port)
    assert proc.poll() is not None and not accepts(port)


def test_a_server_that_dies_at_start_is_an_error_with_its_exit_code():
    port = free_port()
    with pytest.raises(AssertionError, match=r"exited with 3 before listening"):
        start_server([sys.executable, "-c", "raise SystemExit(3)"], port)


def test_a_server_that_never_listens_is_killed_and_reported():
    port = free_port()
    with pytest.raises(AssertionError, match=r"did not listen on \d+ within 0.5 s"):
        start_server([sys.executable, "-c", "import time; time.sleep(60)"], port, timeout=0.5)
