"""SREGym plugin registration: the ``embedded`` cluster provider and the ``sregym cluster`` commands."""

from __future__ import annotations

import json
import os
import ssl
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from sregym_core import hookimpl
from sregym_core.types import ClusterProviderSpec

from . import cluster as clusters

CAPABILITIES = frozenset({"any", "embedded", "node-agent", "snapshot"})


class EmbeddedCluster:
    """The conductor's handle on one embedded cluster (see ``sregym_core.clusters``)."""

    def __init__(self, name: str = "sregym", nodes: int = 3, *, owned: bool = True, **options: Any) -> None:
        self.name = name
        self.nodes = nodes
        self.capabilities = CAPABILITIES
        self.options = options
        self._owned = owned

    def up(self) -> None:
        clusters.up(self.name, self.nodes, owner_pid=os.getpid() if self._owned else None,
                    **{k: v for k, v in self.options.items() if k in ("node_cpu", "node_memory", "timeout")})

    def down(self) -> None:
        clusters.down(self.name)

    def kubeconfig(self, agent: bool = False) -> Path:
        return clusters.kubeconfig(self.name, agent=agent)

    def status(self) -> clusters.ClusterInfo:
        return clusters.status(self.name)

    # -- fast resets ------------------------------------------------------------------------------
    def _admin(self, method: str, path: str) -> Any:
        config = yaml.safe_load(self.kubeconfig().read_text())
        server = config["clusters"][0]["cluster"]["server"]
        token = config["users"][0]["user"]["token"]
        ctx = ssl.create_default_context(cafile=str(clusters.cluster_dir(self.name) / "pki" / "ca.crt"))
        req = urllib.request.Request(server + path, method=method, data=b"" if method == "POST" else None,
                                     headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(req, context=ctx, timeout=60) as resp:
            return json.loads(resp.read() or b"null")

    def snapshot(self, label: str = "baseline") -> None:
        """Save the whole cluster state under ``label`` (kept in the cluster process)."""
        self._admin("POST", f"/sregym/snapshots/{label}")

    def restore(self, label: str = "baseline") -> None:
        """Bring every object back to snapshot ``label``; controllers and nodes reconcile from there."""
        self._admin("POST", f"/sregym/snapshots/{label}/restore")


@hookimpl
def sregym_clusters() -> list[ClusterProviderSpec]:
    return [ClusterProviderSpec(
        name="embedded",
        summary="A Kubernetes-compatible cluster in one local process: pods run as real local processes",
        capabilities=CAPABILITIES,
        factory=EmbeddedCluster,
        default=True,
    )]


@hookimpl
def sregym_register_commands(cli: Any) -> None:
    from .cli import cluster

    cli.add_command(cluster)
