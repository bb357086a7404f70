"""Hook implementations: the node-level fault primitives."""

from __future__ import annotations

from sregym_core import hookimpl

from . import node


@hookimpl
def sregym_faults():
    return list(node.FAULTS)
