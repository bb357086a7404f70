"""Hook implementations: the node-level fault primitives."""

from __future__ import annotations

from sregym_core import hookimpl

from . import clock, conntrack, kubelet_config, kubelet_crash, node, shm


@hookimpl
def sregym_faults():
    return [*node.FAULTS, *kubelet_config.FAULTS, *shm.FAULTS, *conntrack.FAULTS, *clock.FAULTS,
            *kubelet_crash.FAULTS]
