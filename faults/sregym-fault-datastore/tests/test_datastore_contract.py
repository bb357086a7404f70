"""Static contract checks of the datastore faults (live round trips run in the slow suite)."""

from __future__ import annotations

import sregym_fault_datastore.plugin

from sregym_core.testing.contracts import FaultContract


class TestDatastoreFaults(FaultContract):
    plugin = sregym_fault_datastore.plugin
    live_only = {name: "it speaks SQL or the cache protocol inside a running pod" for name in (
        "cache-auth", "cache-flood", "cache-tiny", "db-drop-user", "db-lock-contention", "db-password-rotated",
        "db-require-tls", "db-revoke")}
    paraphrases = {"db-require-tls": "{component} now only lets clients in over TLS: someone added a hostnossl reject "
                                     "rule to its pg_hba.conf, so the services' unencrypted connections are refused",
                   "db-incompatible-upgrade": "{component} was bumped to postgres 18 but its data directory was "
                                              "initialized by PostgreSQL version 15, so the server refuses to start "
                                              "and the pod crash-loops"}
    recover_is_the_fix = {"db-max-connections": "recover sets max_connections back in the server's args (a targeted patch)"}


def test_every_catalog_datastore_fault_is_there():
    names = {f.name for f in sregym_fault_datastore.plugin.sregym_faults()}
    assert {"db-revoke", "db-drop-user", "db-password-rotated", "db-lock-contention", "db-max-connections",
            "db-require-tls", "db-incompatible-upgrade", "cache-auth", "cache-flood", "cache-tiny"} <= names


def test_cache_tiny_ground_truth_names_the_memory_flag_before_and_after(fake_app):
    from sregym_core.faults import FaultContext
    from sregym_core.types import ComponentSpec, Target

    fault = {f.name: f for f in sregym_fault_datastore.plugin.sregym_faults()}["cache-tiny"]
    cache = ComponentSpec(name="memcached-rate", kind="Deployment", roles=("cache:memcached",), ports=(11211,))
    target = Target(app=fake_app, component=cache, namespace="fake")
    state = {"field": "args", "original": ["-l", "0.0.0.0", "-m", "64", "-c", "1024", "-t", "2"]}
    ctx = FaultContext.detached(fake_app)
    ctx.state.update(state)
    truth = fault.impl.ground_truth(ctx, target, {"megabytes": 2})
    assert truth.mutated_values["-m"] == {"before": "64", "after": 2}
    # below 2 MB memcached refuses to start at all: a different fault, so the schema forbids it
    assert fault.params_schema["properties"]["megabytes"]["minimum"] == 2
