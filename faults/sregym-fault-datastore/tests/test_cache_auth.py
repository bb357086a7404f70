"""cache-auth's mechanism: requirepass on the cache's command line, proved against a real
redis-server (the binary the embedded cluster runs for the redis and valkey images)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from sregym_core.testing.localservers import free_port, redis_command, start_server, stop_server
from sregym_fault_datastore.caches import launch_field, requirepass_of, with_requirepass, without_requirepass

VALKEY_CART_ARGS = ["valkey-server", "--save", "", "--appendonly", "no"]


def test_the_password_goes_on_the_command_line_once_and_comes_off_cleanly():
    broken = with_requirepass(VALKEY_CART_ARGS, "s3cr3t")
    assert broken == [*VALKEY_CART_ARGS, "--requirepass", "s3cr3t"]
    assert requirepass_of(broken) == "s3cr3t" and requirepass_of(VALKEY_CART_ARGS) is None
    assert with_requirepass(broken, "other") == [*VALKEY_CART_ARGS, "--requirepass", "other"]  # never twice
    assert without_requirepass(broken) == VALKEY_CART_ARGS  # the empty --save value is kept
    assert without_requirepass(["--requirepass", "a", "--port", "7000", "--requirepass", "b"]) == ["--port", "7000"]
    assert with_requirepass(None, "p") == ["--requirepass", "p"]  # no args: the image's entrypoint takes options


def test_the_options_go_where_the_container_takes_them():
    assert launch_field({"args": ["redis-server", "--save", ""]}) == "args"
    assert launch_field({"command": ["redis-server"], "args": []}) == "args"
    assert launch_field({"command": ["redis-server", "--maxmemory", "64mb"]}) == "command"
    assert launch_field({"image": "redis:7"}) == "args"


def _start(args: list[str], port: int, workdir) -> subprocess.Popen:
    # args[0] is the server program (valkey-server runs as the host's redis-server, as on the node)
    return start_server(redis_command(port, *args[1:], "--dir", str(workdir)), port)


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server (tools/setup.sh installs it)")
def test_a_real_server_started_with_the_faulty_args_refuses_clients_even_after_a_restart(tmp_path):
    redis = pytest.importorskip("redis")
    port = free_port()
    broken = with_requirepass(VALKEY_CART_ARGS, "s3cr3t-rotation")
    for _restart in range(2):  # the password is in the arguments: a restarted server has it again
        server = _start(broken, port, tmp_path)
        try:
            client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=2)  # as cart connects: no password
            # NOAUTH, or (redis-py 5+ says HELLO first) HELLO refused: either way an authentication error
            with pytest.raises(redis.AuthenticationError, match="(?i)authenticat"):
                client.hset("cart:u1", "OLJCESPC7Z", 1)
            assert redis.Redis(host="127.0.0.1", port=port, password="s3cr3t-rotation").ping()
            client.close()
        finally:
            stop_server(server)
    server = _start(without_requirepass(broken), port, tmp_path)  # the reference fix's command line
    try:
        client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=2)
        assert client.hset("cart:u1", "OLJCESPC7Z", 1) == 1
        client.close()
    finally:
        stop_server(server)
