"""Hook implementations: disk-bad-blocks, silent-data-corruption."""

from __future__ import annotations

from sregym_core import hookimpl

from . import badblocks, corruption


@hookimpl
def sregym_faults():
    return [badblocks.DISK_BAD_BLOCKS, corruption.SILENT_DATA_CORRUPTION]
