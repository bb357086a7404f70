"""Cluster capabilities are typed Protocols checked with isinstance: the embedded handle offers node
and network fault hooks and snapshots; the kubeconfig handle (any cluster) offers none of them, and a
node fault on it fails with a clear, permanent error instead of an AttributeError."""

from __future__ import annotations

import pytest

from sregym_core.clusters import (
    ClusterHandle,
    SupportsNetworkFaults,
    SupportsNodeFaults,
    SupportsObservability,
    SupportsServiceUrl,
    SupportsSnapshot,
    capability,
)
from sregym_core.errors import PermanentFaultError


def test_the_embedded_handle_has_the_node_hooks_and_snapshots():
    embedded = pytest.importorskip("sregym_cluster_embedded.plugin")
    handle = embedded.EmbeddedCluster("capabilities-test")
    assert isinstance(handle, ClusterHandle)
    assert capability(handle, SupportsNodeFaults) is handle
    assert capability(handle, SupportsNetworkFaults) is handle
    assert capability(handle, SupportsSnapshot) is handle
    # the capability names a fault's selector asks for agree with the Protocols the handle implements
    assert {"node-agent", "snapshot"} <= handle.capabilities


def test_any_cluster_through_a_kubeconfig_has_no_node_hooks(tmp_path):
    provider = pytest.importorskip("sregym_cluster_kubeconfig.provider")
    handle = provider.KubeconfigCluster("any", kubeconfig=tmp_path / "kubeconfig")
    for protocol in (SupportsNodeFaults, SupportsNetworkFaults, SupportsSnapshot, SupportsServiceUrl,
                     SupportsObservability):
        assert capability(handle, protocol) is None, protocol.__name__
    assert not {"node-agent", "snapshot"} & set(handle.capabilities)


def test_a_node_fault_on_a_cluster_without_hooks_is_a_permanent_fault_error(tmp_path):
    hooks = pytest.importorskip("sregym_fault_node.hooks")
    provider = pytest.importorskip("sregym_cluster_kubeconfig.provider")

    class Ctx:
        cluster = provider.KubeconfigCluster("any", kubeconfig=tmp_path / "kubeconfig")

    with pytest.raises(PermanentFaultError, match="no node fault hook"):
        hooks.call(Ctx(), "stop_node", "node-1")


def test_capability_of_nothing_is_none():
    assert capability(None, SupportsSnapshot) is None
