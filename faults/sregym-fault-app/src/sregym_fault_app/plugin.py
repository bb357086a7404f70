"""Hook implementations: application-configuration faults and triggers."""

from __future__ import annotations

from sregym_core import hookimpl

from .faults import FAULTS


@hookimpl
def sregym_faults():
    return list(FAULTS)
