"""Hook implementations: datastore fault primitives."""

from __future__ import annotations

from sregym_core import hookimpl

from . import caches, postgres, tls


@hookimpl
def sregym_faults():
    return [*postgres.FAULTS, *tls.FAULTS, *caches.FAULTS]
