"""Hook implementations: latent-sector-error and syscall-fail."""

from __future__ import annotations

from sregym_core import hookimpl

from . import syscalls


@hookimpl
def sregym_faults():
    return list(syscalls.FAULTS)
