"""Hook implementations: the ``kubeconfig`` cluster provider."""

from __future__ import annotations

from sregym_core import hookimpl
from sregym_core.types import ClusterProviderSpec

from .provider import CAPABILITIES, MULTI_NODE, KubeconfigCluster


@hookimpl
def sregym_clusters():
    return [ClusterProviderSpec(name="kubeconfig", summary="any existing cluster, reached through a kubeconfig",
                                capabilities=CAPABILITIES | {MULTI_NODE}, factory=KubeconfigCluster)]
