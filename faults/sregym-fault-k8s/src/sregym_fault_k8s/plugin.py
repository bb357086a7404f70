"""Hook implementations: every Kubernetes-object and storage fault primitive."""

from __future__ import annotations

from sregym_core import hookimpl

from . import objects, workload


@hookimpl
def sregym_faults():
    return [*workload.FAULTS, *objects.FAULTS]
