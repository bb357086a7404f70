"""Hook implementations: datastore fault primitives."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sregym_core import hookimpl

from . import caches, postgres, tls, upgrade

if TYPE_CHECKING:
    from sregym_core.types import FaultSpec


@hookimpl
def sregym_faults() -> list[FaultSpec]:
    return [*postgres.FAULTS, *tls.FAULTS, *upgrade.FAULTS, *caches.FAULTS]
