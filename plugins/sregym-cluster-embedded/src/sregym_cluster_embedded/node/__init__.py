"""Node agents: pods run as real local processes (image catalog, volumes, probes, limits, logs).

Entry point for the cluster process: :func:`start_nodes` returns a :class:`NodeSet` whose
``runtime`` implements the PodRuntime contract (logs, exec, metrics).
"""

from __future__ import annotations

from .images import ImageCatalog, Recipe
from .kubelet import NodeSet, start_nodes

__all__ = ["ImageCatalog", "NodeSet", "Recipe", "start_nodes"]
