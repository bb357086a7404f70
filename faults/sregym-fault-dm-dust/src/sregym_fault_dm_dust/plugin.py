"""Hook implementations: disk-bad-blocks."""

from __future__ import annotations

from sregym_core import hookimpl

from . import badblocks


@hookimpl
def sregym_faults():
    return [badblocks.DISK_BAD_BLOCKS]
