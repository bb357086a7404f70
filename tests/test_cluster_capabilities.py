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


class _Declaring:
    name = "declaring"
    capabilities = frozenset({"node-agent", "snapshot"})


class _Silent:
    """A handle that declares neither a name nor capabilities."""


class _EmptyHanded:
    name = "empty"
    capabilities = frozenset()


def test_capabilities_of_a_handle_that_declares_them():
    from sregym_core.clusters import DeclaresCapabilities, capabilities_of, name_of

    assert isinstance(_Declaring(), DeclaresCapabilities)
    assert capabilities_of(_Declaring()) == {"node-agent", "snapshot"}
    assert name_of(_Declaring(), "?") == "declaring"


def test_a_handle_without_capabilities_or_name_gets_the_defaults():
    from sregym_core.clusters import DeclaresCapabilities, Named, capabilities_of, name_of

    assert not isinstance(_Silent(), DeclaresCapabilities) and not isinstance(_Silent(), Named)
    assert capabilities_of(_Silent()) == {"any"}
    assert capabilities_of(_EmptyHanded()) == {"any"}  # an empty declaration means "any", as before
    assert name_of(_Silent()) == "cluster" and name_of(_Silent(), "?") == "?"


@pytest.mark.parametrize(("handle_type", "expected"), [(_Declaring, {"node-agent", "snapshot"}),
                                                        (_EmptyHanded, {"spec-declared"})])
def test_get_cluster_fills_in_the_providers_capabilities_only_when_the_handle_has_none(handle_type, expected):
    from sregym_core.clusters import capabilities_of, get_cluster
    from sregym_core.plugins import new_plugin_host
    from sregym_core.types import ClusterProviderSpec
    from sregym_core import hookimpl

    class Provider:
        @hookimpl
        def sregym_clusters(self):
            return [ClusterProviderSpec(name="fake", capabilities={"spec-declared"},
                                        factory=lambda name, **_: handle_type())]

    host = new_plugin_host(builtins=False, entry_points=False)
    host.register(Provider(), name="fake-provider")
    assert capabilities_of(get_cluster(host, provider="fake")) == expected


def test_the_environment_reads_capabilities_through_the_protocol(tmp_path):
    from sregym_core.conductor.environment import Environment
    from sregym_core.plugins import new_plugin_host

    host = new_plugin_host(builtins=False, entry_points=False)
    with_caps = Environment(host=host, cluster=_Declaring(), workdir=tmp_path)
    without = Environment(host=host, cluster=_Silent(), workdir=tmp_path)
    assert with_caps.capabilities == {"node-agent", "snapshot"}
    assert without.capabilities == {"any"}


def test_the_conductor_never_probes_cluster_attributes_by_name():
    from pathlib import Path
    import re

    conductor = Path(__file__).resolve().parent.parent / "sregym_core" / "conductor"
    probes = [f"{path.name}: {line.strip()}" for path in conductor.glob("*.py")
              for line in path.read_text().splitlines()
              if re.search(r"getattr\([^,]*cluster[^,]*,\s*['\"](name|capabilities)['\"]", line)]
    assert probes == []
