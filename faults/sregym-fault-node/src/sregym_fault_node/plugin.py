"""Hook implementations: the node-level fault primitives."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sregym_core import hookimpl

from . import clock, conntrack, kubelet_config, kubelet_crash, node, shm

if TYPE_CHECKING:
    from sregym_core.types import FaultSpec


@hookimpl
def sregym_faults() -> list[FaultSpec]:
    return [*node.FAULTS, *kubelet_config.FAULTS, *shm.FAULTS, *conntrack.FAULTS, *clock.FAULTS,
            *kubelet_crash.FAULTS]
