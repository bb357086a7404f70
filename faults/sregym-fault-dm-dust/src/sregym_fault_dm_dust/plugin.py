"""Hook implementations: disk-bad-blocks, silent-data-corruption."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sregym_core import hookimpl

from . import badblocks, corruption

if TYPE_CHECKING:
    from sregym_core.types import FaultSpec


@hookimpl
def sregym_faults() -> list[FaultSpec]:
    return [badblocks.DISK_BAD_BLOCKS, corruption.SILENT_DATA_CORRUPTION]
