"""Settings of one embedded cluster, shared by every part of the cluster process."""

from __future__ import annotations

import os
from pathlib import Path

import attrs


def sregym_home() -> Path:
    """``$SREGYM_HOME`` or ``~/.sregym``: where cluster state directories live."""
    return Path(os.environ.get("SREGYM_HOME") or Path.home() / ".sregym")


def cluster_dir(name: str) -> Path:
    return sregym_home() / "clusters" / name


@attrs.frozen(kw_only=True)
class ClusterSettings:
    """What the API server, controllers and node agents of one cluster need to know.

    ``pod_cidr_prefix`` and ``service_cidr_prefix`` are two-octet prefixes inside 127.0.0.0/8
    ("127.42"): pods get ``<prefix>.x.y`` addresses, so several clusters never collide.
    """

    name: str = "default"
    state_dir: Path = attrs.field(factory=lambda: cluster_dir("default"), converter=Path)
    nodes: int = 1
    node_cpu: str = "4"
    node_memory: str = "8Gi"
    pod_cidr_prefix: str = "127.42"
    service_cidr_prefix: str = "127.43"
    api_host: str = "127.0.0.1"
    api_port: int = 0
    kubernetes_version: str = "v1.32.4"
    cluster_domain: str = "cluster.local"
