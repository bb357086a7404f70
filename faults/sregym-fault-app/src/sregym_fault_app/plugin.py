"""Hook implementations: application-configuration faults and triggers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sregym_core import hookimpl

from .faults import FAULTS

if TYPE_CHECKING:
    from sregym_core.types import FaultSpec


@hookimpl
def sregym_faults() -> list[FaultSpec]:
    return list(FAULTS)
