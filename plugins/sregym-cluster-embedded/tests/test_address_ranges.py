"""Address ranges are machine-wide: a range with another user's listeners is never handed out, even
though each user's registry cannot see the other's (a non-root user's cluster once took the range a
root cluster was serving from, and its pods could not bind their ports)."""

from __future__ import annotations

import os
import socket

import pytest
from sregym_cluster_embedded import settings


def _proc_net(tmp_path, tcp_rows=(), udp_rows=()):
    header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    (tmp_path / "tcp").write_text(header + "".join(tcp_rows))
    (tmp_path / "udp").write_text(header + "".join(udp_rows))
    return tmp_path


def _row(ip: str, port: int, state: str) -> str:
    hexip = bytes(int(o) for o in ip.split("."))[::-1].hex().upper()
    return f"   0: {hexip}:{port:04X} 00000000:0000 {state} 00000000:00000000 00:00000000 00000000  1500 0 1 1\n"


def test_listeners_in_a_clusters_prefixes_mark_its_range_busy(tmp_path):
    net = _proc_net(tmp_path, tcp_rows=[_row("127.40.2.2", 3100, "0A"),       # pods of range 0
                                        _row("127.45.0.10", 80, "0A"),        # services of range 2
                                        _row("127.50.1.1", 5000, "01"),       # a connection, not a listener
                                        _row("127.0.0.1", 8000, "0A")],       # outside every range
                    udp_rows=[_row("127.47.0.10", 53, "07")])                  # DNS of range 3
    assert settings.ranges_in_use(net) == {0, 2, 3}


def test_allocation_skips_a_range_someone_else_listens_in(tmp_path, monkeypatch):
    monkeypatch.setenv("SREGYM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SREGYM_RANGE_REGISTRY", str(tmp_path / "registry.json"))
    monkeypatch.setattr(settings, "ranges_in_use", lambda: {0, 1})
    assert settings.allocate("first") == ("127.44", "127.45")


def test_a_real_listener_is_seen(tmp_path):
    if not os.path.exists("/proc/net/tcp"):
        pytest.skip("no /proc/net")
    with socket.socket() as sock:
        try:
            sock.bind(("127.239.9.9", 0))
        except OSError:
            pytest.skip("cannot bind on 127.239/16 here")
        sock.listen()
        assert (239 - settings.FIRST_OCTET) // 2 in settings.ranges_in_use()
