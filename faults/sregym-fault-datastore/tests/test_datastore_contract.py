"""Static contract checks of the datastore faults (live round trips run in the slow suite)."""

from __future__ import annotations

import sregym_fault_datastore.plugin

from sregym_core.testing.contracts import FaultContract


class TestDatastoreFaults(FaultContract):
    plugin = sregym_fault_datastore.plugin
    round_trip = False


def test_every_catalog_datastore_fault_is_there():
    names = {f.name for f in sregym_fault_datastore.plugin.sregym_faults()}
    assert {"db-revoke", "db-drop-user", "db-password-rotated", "db-lock-contention", "db-max-connections",
            "cache-auth", "cache-flood", "cache-tiny"} <= names
