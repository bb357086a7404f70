"""A pod's sysctls as the kubelet admits them and the runtime checks their values (node/sysctls.py)."""

from __future__ import annotations

import pytest
from sregym_cluster_embedded.node import sysctls


def _pod(*pairs: tuple[str, str], **spec) -> dict:
    return {"spec": {**spec, "securityContext": {"sysctls": [{"name": n, "value": v} for n, v in pairs]}}}


def test_the_kubelet_admits_safe_sysctls_and_rejects_the_others_with_its_message() -> None:
    assert sysctls.forbidden(_pod(("net.ipv4.ip_local_port_range", "32000 32003"))) is None
    assert sysctls.forbidden({"spec": {}}) is None
    assert sysctls.forbidden(_pod(("net.core.somaxconn", "1024"))) == \
        'Pod was rejected: forbidden sysctl: "net.core.somaxconn" not allowlisted'
    assert sysctls.forbidden(_pod(("kernel.msgmax", "1"))).endswith('"kernel.msgmax" not allowlisted')
    # net.* sysctls belong to the pod's own network namespace: a host-network pod has none
    assert sysctls.forbidden(_pod(("net.ipv4.ip_local_port_range", "32000 32003"), hostNetwork=True)) == \
        'Pod was rejected: forbidden sysctl: "net.ipv4.ip_local_port_range" not allowed with host net enabled'
    assert "host ipc" in sysctls.forbidden(_pod(("kernel.shm_rmid_forced", "1"), hostIPC=True))


def test_slash_separated_names_are_the_same_sysctl() -> None:
    assert sysctls.normalize("net/ipv4/ip_local_port_range") == "net.ipv4.ip_local_port_range"
    assert sysctls.normalize("net.ipv4.conf.eth0/1.forwarding") == "net.ipv4.conf.eth0/1.forwarding"
    assert sysctls.port_range(_pod(("net/ipv4/ip_local_port_range", "40000 40009"))) == (40000, 40009)


@pytest.mark.parametrize("value", ["32003 32000", "32000", "a b", "0 10", "1000 2000", "32000 70000", "1 2 3"])
def test_a_range_the_kernel_refuses_fails_the_sandbox(value: str) -> None:
    with pytest.raises(ValueError, match="Failed to create pod sandbox: .*ip_local_port_range.*invalid argument"):
        sysctls.port_range(_pod(("net.ipv4.ip_local_port_range", value)))


def test_a_valid_range_and_its_floor() -> None:
    assert sysctls.port_range({"spec": {}}) is None
    assert sysctls.port_range(_pod(("net.ipv4.ip_local_port_range", " 32000\t32003 "))) == (32000, 32003)
    assert sysctls.port_range(_pod(("net.ipv4.ip_local_port_range", "5000 5000"))) == (5000, 5000)
    # the pod may lower the unprivileged port start, and with it the floor of its range
    assert sysctls.port_range(_pod(("net.ipv4.ip_unprivileged_port_start", "500"),
                                   ("net.ipv4.ip_local_port_range", "600 700"))) == (600, 700)


def test_what_the_node_cannot_apply_is_named() -> None:
    pod = _pod(("net.ipv4.ip_local_port_range", "32000 32003"), ("net.ipv4.tcp_syncookies", "1"))
    assert sysctls.not_applied(pod) == ["net.ipv4.tcp_syncookies"]
