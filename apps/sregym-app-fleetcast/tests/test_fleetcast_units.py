"""FleetCast offline: the shipped manifests, what the operator derives from a DatastoreCluster and
reports in its status, the faults' predicates, and the service with its workload generator against
a real Redis (the ``redis_port`` fixture)."""

from __future__ import annotations

import asyncio
import copy
import json

import pytest
from sregym_app_fleetcast import catalog, crd, datastore_operator, faults, manifests
from sregym_app_fleetcast.topology import DATASTORE, NAMESPACE
from sregym_appkit.testing import assert_shipped_files_are_built


def _cr(**spec) -> dict:
    return {"apiVersion": "fleetcast.sregym.io/v1", "kind": "DatastoreCluster",
            "metadata": {"name": DATASTORE, "namespace": NAMESPACE, "uid": "u-1", "generation": 4},
            "spec": {**copy.deepcopy(manifests.DATASTORE_SPEC), **spec}}


def test_shipped_manifests_are_the_built_ones(tmp_path):
    assert_shipped_files_are_built(manifests.SHIPPED, tmp_path)


def test_the_crd_comes_first_and_alone_and_the_resource_names_the_shipped_spec():
    crds, rest = manifests.split(manifests.render())
    assert [d["metadata"]["name"] for d in crds] == ["datastoreclusters.fleetcast.sregym.io"]
    version = crds[0]["spec"]["versions"][0]
    assert version["subresources"] == {"status": {}}
    # the schema types the fields without enumerating them, as upstream's TidbCluster does
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert "enum" not in spec["updateStrategy"] and "enum" not in spec["tolerations"]["items"]["properties"]["effect"]
    resource = next(d for d in rest if d["kind"] == "DatastoreCluster")
    assert resource["spec"] == manifests.DATASTORE_SPEC


def test_render_follows_the_image_tag_for_app_and_operator():
    docs = manifests.render({"image_tag": "1.0.0"})
    images = {c["image"] for d in docs for c in (d.get("spec", {}).get("template", {}).get("spec", {}).get("containers") or [])}
    assert images == {"sregym/fleetcast:1.0.0", "sregym/fleetcast-operator:1.0.0"}
    with pytest.raises(ValueError):
        manifests.render({"replica": 2})


def test_the_statefulset_carries_the_resources_fields_and_belongs_to_it():
    cr = _cr(tolerations=[{"key": "k", "operator": "Exists", "effect": "NoExecute"}], updateStrategy="OnDelete",
             securityContext={"runAsUser": 1001})
    sts = crd.statefulset(cr)
    pod = sts["spec"]["template"]["spec"]
    assert sts["metadata"]["ownerReferences"][0] == {"apiVersion": "fleetcast.sregym.io/v1", "kind": "DatastoreCluster",
                                                      "name": DATASTORE, "uid": "u-1", "controller": True,
                                                      "blockOwnerDeletion": True}
    assert pod["tolerations"] == cr["spec"]["tolerations"]
    assert pod["securityContext"] == {"runAsUser": 1001, "fsGroup": 1001}
    assert sts["spec"]["updateStrategy"] == {"type": "OnDelete"}
    assert sts["spec"]["volumeClaimTemplates"][0]["spec"]["storageClassName"] == "standard"
    assert f"--replicaof {DATASTORE}-0.{DATASTORE}-headless.{NAMESPACE}.svc.cluster.local" in pod["containers"][0]["command"][2]
    # a bad value passes through untouched: Kubernetes, not the operator, refuses it
    assert crd.statefulset(_cr(securityContext={"runAsUser": -1}))["spec"]["template"]["spec"]["securityContext"]["runAsUser"] == -1


def test_drift_and_claim_changes_are_noticed():
    desired = crd.statefulset(_cr())
    same = copy.deepcopy(desired)
    assert not crd.spec_changed(same, desired) and not crd.hand_edited(same, desired)
    assert not crd.claim_classes_differ(same, desired)
    stubbed = copy.deepcopy(desired)
    stubbed["spec"]["template"]["spec"]["containers"][0]["image"] = "python:3.11"
    assert crd.hand_edited(stubbed, desired) and not crd.spec_changed(stubbed, desired)
    commanded = copy.deepcopy(desired)
    commanded["spec"]["template"]["spec"]["containers"][0]["command"] = ["python", "-c", "stub"]
    assert crd.hand_edited(commanded, desired)
    # scaled by someone else for a while (a volume copy): not drift; a new spec's replicas are
    scaled = copy.deepcopy(desired)
    scaled["spec"]["replicas"] = 0
    assert not crd.spec_changed(scaled, desired) and not crd.hand_edited(scaled, desired)
    assert crd.spec_changed(same, crd.statefulset(_cr(replicas=5)))
    assert crd.claim_classes_differ(same, crd.statefulset(_cr(storageClassName="fast-ssd")))
    assert crd.claim_classes_differ(same, crd.statefulset(_cr(storageSize="1Gi")))


def _sts(replicas: int, ready: int) -> dict:
    return {"status": {"replicas": replicas, "readyReplicas": ready}}


def test_status_reports_phase_ready_replicas_and_reasons():
    cr = _cr()
    running = datastore_operator.status_for(cr, _sts(3, 3), None, "", "unchanged")
    assert running["phase"] == "Running" and running["readyReplicas"] == 3 and running["observedGeneration"] == 4
    assert [(c["type"], c["status"], c["reason"]) for c in running["conditions"]] == [
        ("Reconciled", "True", "Synced"), ("Ready", "True", "AllReplicasReady")]
    refused = datastore_operator.Refused("StatefulSetRejected", 'StatefulSet orbit-db: spec.updateStrategy: Invalid value')
    failed = datastore_operator.status_for(cr, _sts(3, 3), refused, "", "unchanged")
    assert failed["phase"] == "Failed" and failed["conditions"][0]["reason"] == "StatefulSetRejected"
    assert "spec.updateStrategy" in failed["conditions"][0]["message"]
    storage = datastore_operator.status_for(_cr(storageClassName="fast-ssd"), _sts(1, 0), None,
                                            'storageclass.storage.k8s.io "fast-ssd" not found', "created")
    assert storage["phase"] == "Failed" and storage["conditions"][0]["reason"] == "StorageClassNotFound"
    scaling = datastore_operator.status_for(_cr(replicas=100000), _sts(10, 9), None, "", "updated")
    assert scaling["phase"] == "Scaling" and scaling["conditions"][1]["message"] == "9/100000 replicas ready"
    down = datastore_operator.status_for(cr, _sts(7, 7), None, "", "unchanged")
    assert down["phase"] == "Scaling", "scaling down from 7 is not Running yet"
    # an unchanged condition keeps its transition time
    again = datastore_operator.status_for({**cr, "status": running}, _sts(3, 3), None, "", "unchanged")
    assert again["conditions"] == running["conditions"]


def test_a_replica_count_set_by_someone_else_is_put_back_after_the_grace_only():
    key, grace = "ns/test-grace", datastore_operator.SCALE_GRACE_S
    assert not datastore_operator._rescale_due(key, 3, 3, now=0)
    assert not datastore_operator._rescale_due(key, 0, 3, now=100)  # just scaled to zero: a volume copy, say
    assert not datastore_operator._rescale_due(key, 0, 3, now=100 + grace - 1)
    assert datastore_operator._rescale_due(key, 0, 3, now=100 + grace)
    assert not datastore_operator._rescale_due(key, 3, 3, now=200 + grace)  # back: the clock starts afresh
    assert not datastore_operator._rescale_due(key, 1, 3, now=300 + grace)


def test_a_refused_request_is_reported_with_the_servers_message():
    class Exc:
        body = json.dumps({"message": 'StatefulSet.apps "orbit-db" is invalid: spec.x: Invalid value'})
        reason = "Unprocessable Entity"
    assert datastore_operator.api_message(Exc()) == 'StatefulSet.apps "orbit-db" is invalid: spec.x: Invalid value'


def test_fault_predicates_accept_any_broken_value_not_only_the_injected_one():
    assert faults._bad_effect([{"effect": "NoScheduling"}]) and faults._bad_effect([{"effect": "TakeSomeEffect"}])
    assert not faults._bad_effect([{"effect": "NoSchedule"}, {"operator": "Exists"}])
    assert faults._bad_uid({"runAsUser": -1}) and faults._bad_uid({"fsGroup": 2 ** 31}) and faults._bad_uid({"runAsGroup": -7})
    assert not faults._bad_uid({"runAsUser": 0, "fsGroup": 999})
    assert faults._bad_strategy("Rolling") and faults._bad_strategy("rollingupdate") and not faults._bad_strategy("OnDelete")
    rejected = {"status": {"conditions": [{"type": "Reconciled", "status": "False", "reason": "StatefulSetRejected"}]}}
    assert faults._rejected(rejected) and not faults._rejected({"status": {}})
    assert faults.typo_image("sregym/fleetcast-operator:1.0") == "sregym/fleetcast-operater:1.0"


def test_injected_values_are_broken_and_the_shipped_ones_are_not():
    spec = manifests.DATASTORE_SPEC
    params = {"effect": "NoScheduling", "run_as_user": -1, "strategy": "Rolling", "replicas": 100000,
              "storage_class": "fast-ssd"}
    assert faults._bad_effect(faults._toleration(spec, params)["tolerations"]) and not faults._bad_effect(spec["tolerations"])
    assert faults._bad_uid(faults._run_as(spec, params)["securityContext"]) and not faults._bad_uid(spec["securityContext"])
    assert faults._bad_strategy(faults._strategy(spec, params)["updateStrategy"]) and not faults._bad_strategy(spec["updateStrategy"])
    assert faults._overload(spec, params) == {"replicas": 100000}


def test_positions_are_deterministic_and_on_the_globe():
    sats = catalog.satellites()
    assert len(sats) == catalog.SIZE and len({s["norad"] for s in sats}) == catalog.SIZE
    assert sats == catalog.satellites()
    for sat in sats[:10]:
        for t in (catalog.EPOCH, catalog.EPOCH + 5555):
            p = catalog.position(sat, t)
            assert -90 <= p["lat"] <= 90 and -180 <= p["lon"] < 180
            assert abs(p["lat"]) <= sat["inclination"] + 1e-3 or sat["inclination"] > 90


def _served(port: int):
    """The FleetCast service on a free port against the Redis at ``port`` (an async context)."""
    import contextlib

    from aiohttp import web
    from sregym_app_fleetcast.api import Store, routes

    from sregym_core.testing.localservers import free_port

    @contextlib.asynccontextmanager
    async def serve():
        store = Store(f"127.0.0.1:{port}")
        await store.client.flushall()
        await store.seed_if_missing()
        runner = web.AppRunner(routes(store))
        await runner.setup()
        api_port = free_port()
        await web.TCPSite(runner, "127.0.0.1", api_port).start()
        try:
            yield store, f"http://127.0.0.1:{api_port}"
        finally:
            await runner.cleanup()
            await store.client.aclose()
    return serve()


def _generator(target: str):
    from sregym_app_fleetcast.workload import FleetCastGenerator
    from sregym_appkit.workload import parse_settings
    return FleetCastGenerator(parse_settings(["--target", target, "--no-autostart"], description="t", default_target=target))


def test_every_request_kind_is_answered_with_the_seeded_content(redis_port):
    import random

    async def main():
        async with _served(redis_port) as (_store, url):
            gen = _generator(url)
            await gen.open()
            rng = random.Random(7)
            try:
                for kind in gen.endpoints:
                    for _ in range(3):
                        outcome = await gen.send(kind, gen.prepare(kind, rng))
                        assert 200 <= outcome.status < 300 and not outcome.wrong and not outcome.error, (kind, outcome)
            finally:
                await gen.close()
    asyncio.run(main())


def test_wrong_content_is_caught_and_a_wiped_datastore_is_seeded_again(redis_port):
    async def main():
        async with _served(redis_port) as (store, url):
            gen = _generator(url)
            await gen.open()
            try:
                norad = sorted(catalog.BY_ID)[0]
                await store.client.hset(f"sat:{norad}", "inclination", "12.5")
                outcome = await gen.send("satellite", norad)
                assert outcome.status == 200 and outcome.wrong == "satellite_wrong_elements"
                outcome = await gen.send("position", (norad, catalog.EPOCH + 100))
                assert outcome.wrong == "position_wrong"
                await store.client.flushall()  # what a re-provisioned datastore holds
                for kind, request in (("home", None), ("satellite", norad), ("list", None)):
                    outcome = await gen.send(kind, request)
                    assert outcome.status == 200 and not outcome.wrong, (kind, outcome)
            finally:
                await gen.close()
    asyncio.run(main())


def test_a_weaker_value_is_not_the_repair():
    """Red-team rounds 10 and 11: the datastore run as root, its tolerations deleted or replaced by one of another key,
    passed every oracle: the API server takes them, so no symptom shows, yet the deployed spec is not back."""
    class Ctx:
        state: dict = {}

    def present(fault_name, **spec):
        impl = next(f for f in faults.faults() if f.name == fault_name)
        obj = {"spec": {**manifests.DATASTORE_SPEC, **spec}, "status": {}}
        original = faults.kube.get
        faults.kube.get = lambda *_a, **_k: obj
        try:
            from types import SimpleNamespace
            return impl.impl.is_present(Ctx(), SimpleNamespace(component=SimpleNamespace(name="orbit-db")), {})
        finally:
            faults.kube.get = original

    assert not present("datastore-invalid-run-as-user")
    assert present("datastore-invalid-run-as-user", securityContext={"runAsUser": 0, "fsGroup": 0})
    assert present("datastore-invalid-run-as-user", securityContext={"runAsUser": 999, "fsGroup": 0})
    assert not present("datastore-invalid-run-as-user", securityContext={"runAsUser": 1001, "fsGroup": 1001})
    # red-team round 12: the repaired uid with the root group added, and another valid update strategy
    assert present("datastore-invalid-run-as-user", securityContext={
        **manifests.DATASTORE_SPEC["securityContext"], "runAsGroup": 0})
    assert not present("datastore-invalid-update-strategy")
    assert present("datastore-invalid-update-strategy", updateStrategy="OnDelete")
    assert not present("datastore-invalid-toleration")
    assert present("datastore-invalid-toleration", tolerations=[])
    assert present("datastore-invalid-toleration", tolerations=[{"key": "another.example/key", "operator": "Exists",
                                                                   "effect": "NoSchedule"}])
    assert not present("datastore-invalid-toleration", tolerations=[
        *manifests.DATASTORE_SPEC["tolerations"], {"key": "extra", "operator": "Exists"}])
    # red-team round 13: the broken field repaired while another shipped field was given away is no repair
    assert present("datastore-invalid-update-strategy", affinity={})
    assert present("datastore-invalid-update-strategy", resources={"requests": {"cpu": "500m", "memory": "32Mi"}})
    assert present("datastore-invalid-toleration", replicas=2)
    assert not present("datastore-invalid-update-strategy", resources={
        "requests": {"cpu": "500m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}})  # more is no weakening
    assert faults.weaker_elsewhere(manifests.DATASTORE_SPEC, "updateStrategy") == []
