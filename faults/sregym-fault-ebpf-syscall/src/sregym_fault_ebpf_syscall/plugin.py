"""Hook implementations: latent-sector-error and syscall-fail."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sregym_core import hookimpl

from . import syscalls

if TYPE_CHECKING:
    from sregym_core.types import FaultSpec


@hookimpl
def sregym_faults() -> list[FaultSpec]:
    return list(syscalls.FAULTS)
