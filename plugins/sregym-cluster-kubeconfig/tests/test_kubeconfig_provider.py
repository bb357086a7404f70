"""The kubeconfig provider against a real API server (the embedded one, standing in for any cluster)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import sregym_cluster_kubeconfig.plugin
from sregym_cluster_kubeconfig.provider import KubeconfigCluster

from sregym_core.errors import ClusterError
from sregym_core.testing.contracts import ClusterContract


class TestKubeconfigProvider(ClusterContract):
    plugin = sregym_cluster_kubeconfig.plugin


def test_missing_kubeconfig_is_a_clear_error(tmp_path):
    handle = KubeconfigCluster(kubeconfig=tmp_path / "nope")
    with pytest.raises(ClusterError, match="does not exist"):
        handle.up()


def test_unreachable_cluster_is_a_clear_error(tmp_path):
    config = tmp_path / "config"
    config.write_text("apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters: [{name: c, cluster: "
                      "{server: 'https://127.0.0.1:9', insecure-skip-tls-verify: true}}]\nusers: [{name: u, user: "
                      "{token: x}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n")
    with pytest.raises(ClusterError, match="does not answer"):
        KubeconfigCluster(kubeconfig=config).up()


@pytest.mark.parametrize(("nodes", "expected"), [(1, {"any", "real"}), (3, {"any", "real", "multi-node"}),
                                                (None, {"any", "real"})])
def test_capabilities_follow_the_node_count(monkeypatch, nodes, expected):
    """``multi-node`` only on a cluster of two nodes or more; a cluster that does not answer (None)
    offers ``any`` and ``real`` and is asked again next time. (The node count itself is read live by
    test_up_against_a_live_cluster's cluster; here it is given, to reach each branch.)"""
    handle = KubeconfigCluster(kubeconfig="unused")
    asked = []
    monkeypatch.setattr(handle, "_nodes", lambda: asked.append(1) or nodes)
    assert handle.capabilities == expected
    assert handle.capabilities == expected
    assert len(asked) == (2 if nodes is None else 1)


@pytest.mark.slow
def test_up_against_a_live_cluster(tmp_path):
    pytest.importorskip("sregym_cluster_embedded")
    from sregym_cluster_embedded.cluster import start_timeout

    env = {**os.environ, "SREGYM_HOME": str(tmp_path)}
    sregym = str(Path(sys.executable).parent / "sregym")
    try:  # a start that times out still stops what it began
        subprocess.run([sregym, "cluster", "up", "--name", "kc", "--nodes", "1"], env=env, check=True,
                       capture_output=True, timeout=start_timeout() + 60)
        handle = KubeconfigCluster(kubeconfig=tmp_path / "clusters" / "kc" / "kubeconfig")
        handle.up()
        handle.down()  # must not stop a cluster it does not own
        assert subprocess.run([sregym, "cluster", "status", "--name", "kc"], env=env, capture_output=True,
                              text=True, timeout=60).stdout.count("running") == 1
    finally:
        subprocess.run([sregym, "cluster", "down", "--name", "kc"], env=env, capture_output=True, timeout=120)


def test_the_mechanism_probe_offers_only_the_daemonset_loader_and_says_why_not(tmp_path):
    # no kubeconfig: every mechanism unavailable, the DaemonSet loader with the reason
    probe = KubeconfigCluster(kubeconfig=tmp_path / "nope").fault_mechanisms()
    assert not any(entry["available"] for entry in probe.values())
    assert "does not exist" in probe["bpf-daemonset"]["reason"]
    assert probe["bpf-daemonset"]["operations"] == ["connect", "socket"]
    # nothing that lives in SREGym's own node agent runs on a kubeconfig cluster
    for name in ("bpf-cgroup", "seccomp-supervisor", "fuse-badblocks", "ld-preload-shim"):
        assert "no SREGym node agent" in probe[name]["reason"]
    # a cluster that does not answer: the loader is not offered, and the probe says why
    config = tmp_path / "config"
    config.write_text("apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters: [{name: c, cluster: "
                      "{server: 'https://127.0.0.1:1'}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"
                      "users: [{name: u, user: {token: t}}]\n")
    probe = KubeconfigCluster(kubeconfig=config).fault_mechanisms()
    assert not probe["bpf-daemonset"]["available"] and "could not ask the cluster" in probe["bpf-daemonset"]["reason"]
