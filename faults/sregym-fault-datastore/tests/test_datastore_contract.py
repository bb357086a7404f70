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


def test_cache_tiny_ground_truth_names_the_memory_flag_before_and_after(fake_app):
    from sregym_core.types import ComponentSpec, Target

    fault = {f.name: f for f in sregym_fault_datastore.plugin.sregym_faults()}["cache-tiny"]
    cache = ComponentSpec(name="memcached-rate", kind="Deployment", roles=("cache:memcached",), ports=(11211,))
    target = Target(app=fake_app, component=cache, namespace="fake")
    state = {"field": "args", "original": ["-l", "0.0.0.0", "-m", "64", "-c", "1024", "-t", "2"]}
    truth = fault.ground_truth(target, {"megabytes": 2}, state)
    assert truth.mutated_values["-m"] == {"before": "64", "after": 2}
    # below 2 MB memcached refuses to start at all: a different fault, so the schema forbids it
    assert fault.params_schema["properties"]["megabytes"]["minimum"] == 2
