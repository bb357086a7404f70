"""Hook implementations: datastore fault primitives."""

from __future__ import annotations

from sregym_core import hookimpl

from . import caches, postgres, tls, upgrade


@hookimpl
def sregym_faults():
    return [*postgres.FAULTS, *tls.FAULTS, *upgrade.FAULTS, *caches.FAULTS]
