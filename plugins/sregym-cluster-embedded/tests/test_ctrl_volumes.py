"""Storage wiring as the real controllers behave: network disks attached to one node at a time
(Multi-Attach errors), and local volumes whose node affinity rules out other nodes."""

from __future__ import annotations

import types

import anyio
import pytest
from _fixtures_ctrl import FakeClient, anyio_backend, settle  # noqa: F401
from sregym_cluster_embedded.controllers import start_controllers
from sregym_cluster_embedded.controllers.attachdetach import DRIVER, unique_name

pytestmark = pytest.mark.anyio


def node(name):
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}, "spec": {},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def claim(name, storage_class, modes=("ReadWriteOnce",)):
    return {"metadata": {"name": name}, "spec": {"accessModes": list(modes), "storageClassName": storage_class,
                                                  "resources": {"requests": {"storage": "1Gi"}}}}


def pod(name, claim_name, **spec):
    return {"metadata": {"name": name, "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}],
                     "volumes": [{"name": "shared", "persistentVolumeClaim": {"claimName": claim_name}}], **spec}}


async def start(client, tmp_path, names):
    await client.create("storageclasses.storage.k8s.io", {
        "metadata": {"name": "standard-rwo"}, "provisioner": DRIVER, "volumeBindingMode": "WaitForFirstConsumer"})
    await client.create("storageclasses.storage.k8s.io", {
        "metadata": {"name": "standard", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
        "provisioner": "sregym.io/local", "volumeBindingMode": "WaitForFirstConsumer"})
    for n in ("node-1", "node-2", "node-3"):
        await client.create("nodes", node(n))
    ctrl = start_controllers(client, types.SimpleNamespace(state_dir=str(tmp_path)), only=names)
    await ctrl.wait_synced()
    return ctrl


def events(client, name, reason):
    return [e for e in client.events if e["involved"] == name and e["reason"] == reason]


def attached(client, node_name):
    found = next(n for n in client.objects("nodes") if n["metadata"]["name"] == node_name)
    return [e["name"] for e in (found.get("status") or {}).get("volumesAttached") or []]


async def test_rwo_network_disk_attaches_to_one_node_and_multi_attach_names_the_user(tmp_path):
    client = FakeClient()
    ctrl = await start(client, tmp_path, ["pvc", "scheduler", "attachdetach"])
    try:
        await client.create("persistentvolumeclaims", claim("cache", "standard-rwo"))
        await client.create("pods", pod("web-a", "cache", nodeSelector={"kubernetes.io/hostname": "node-1"}))
        await settle(lambda: events(client, "web-a", "SuccessfulAttachVolume"))
        pv = client.objects("persistentvolumes")[0]
        assert pv["spec"]["csi"]["driver"] == DRIVER and "nodeAffinity" not in pv["spec"]
        assert attached(client, "node-1") == [unique_name(pv)]
        vas = client.objects("volumeattachments.storage.k8s.io")
        assert [(v["spec"]["nodeName"], v["status"]["attached"]) for v in vas] == [("node-1", True)]

        # a second pod on another node: scheduled (RWO is not a scheduling rule), never attached
        await client.create("pods", pod("web-b", "cache", nodeSelector={"kubernetes.io/hostname": "node-2"}))
        await settle(lambda: events(client, "web-b", "FailedAttachVolume"))
        event = events(client, "web-b", "FailedAttachVolume")[0]
        assert event["message"] == (f'Multi-Attach error for volume "{pv["metadata"]["name"]}" '
                                    "Volume is already used by pod(s) web-a")
        assert event["type"] == "Warning" and event["component"] == "attachdetach-controller"
        assert attached(client, "node-2") == []
        # the same node shares a ReadWriteOnce volume freely
        await client.create("pods", pod("web-c", "cache", nodeSelector={"kubernetes.io/hostname": "node-1"}))
        await settle(lambda: any(p["metadata"]["name"] == "web-c" and p["spec"].get("nodeName")
                                 for p in client.objects("pods")))
        assert not events(client, "web-c", "FailedAttachVolume")

        # the users on node-1 go: detached there, attached to node-2
        for name in ("web-a", "web-c"):
            await client.delete("pods", name)
        client.finish_termination()
        await settle(lambda: attached(client, "node-2") == [unique_name(pv)])
        assert attached(client, "node-1") == []
        assert events(client, "web-b", "SuccessfulAttachVolume")
    finally:
        await ctrl.stop()


async def test_read_write_many_attaches_everywhere(tmp_path):
    client = FakeClient()
    ctrl = await start(client, tmp_path, ["pvc", "scheduler", "attachdetach"])
    try:
        await client.create("persistentvolumeclaims", claim("shared", "standard-rwo", modes=("ReadWriteMany",)))
        for index, n in enumerate(("node-1", "node-2")):
            await client.create("pods", pod(f"p{index}", "shared", nodeSelector={"kubernetes.io/hostname": n}))
        await settle(lambda: attached(client, "node-1") and attached(client, "node-2"))
        assert "FailedAttachVolume" not in client.reasons()
    finally:
        await ctrl.stop()


async def test_local_volume_node_affinity_conflict_is_reported_by_the_scheduler(tmp_path):
    client = FakeClient()
    ctrl = await start(client, tmp_path, ["pvc", "scheduler"])
    try:
        await client.create("persistentvolumeclaims", claim("data", "standard"))
        await client.create("pods", pod("db-0", "data", nodeSelector={"kubernetes.io/hostname": "node-1"}))
        await settle(lambda: client.objects("persistentvolumes")
                     and any(p["spec"].get("nodeName") for p in client.objects("pods")))
        pv = client.objects("persistentvolumes")[0]
        terms = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
        assert terms[0]["matchExpressions"][0]["values"] == ["node-1"]
        await client.delete("pods", "db-0")
        client.finish_termination()
        await client.create("pods", pod("db-0", "data", nodeSelector={"kubernetes.io/hostname": "node-2"}))
        await settle(lambda: events(client, "db-0", "FailedScheduling"))
        assert events(client, "db-0", "FailedScheduling")[0]["message"] == (
            "0/3 nodes are available: 1 node(s) had volume node affinity conflict, 2 node(s) didn't match Pod's "
            "node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")
    finally:
        await ctrl.stop()


async def test_read_write_once_pod_admits_one_pod_in_the_cluster(tmp_path):
    client = FakeClient()
    ctrl = await start(client, tmp_path, ["pvc", "scheduler", "attachdetach"])
    try:
        await client.create("persistentvolumeclaims", claim("solo", "standard-rwo", modes=("ReadWriteOncePod",)))
        await client.create("pods", pod("first", "solo", nodeSelector={"kubernetes.io/hostname": "node-1"}))
        await settle(lambda: events(client, "first", "SuccessfulAttachVolume"))
        # the same node does not help: the scheduler refuses the second pod everywhere
        await client.create("pods", pod("second", "solo", nodeSelector={"kubernetes.io/hostname": "node-1"}))
        await settle(lambda: events(client, "second", "FailedScheduling"))
        assert events(client, "second", "FailedScheduling")[0]["message"] == (
            "0/3 nodes are available: node has pod using PersistentVolumeClaim with the same name and "
            "ReadWriteOncePod access mode. preemption: 0/3 nodes are available: 3 Preemption is not helpful for "
            "scheduling.")
        await client.delete("pods", "first")
        client.finish_termination()
        await settle(lambda: any(p["metadata"]["name"] == "second" and p["spec"].get("nodeName")
                                 for p in client.objects("pods")))
    finally:
        await ctrl.stop()


async def test_a_claim_naming_a_volume_binds_when_the_volume_arrives_after_it(tmp_path):
    # the order of two watches is not the order of two writes: the claim may be seen first (CI saw
    # a claim stay Pending for five minutes beside its Available volume)
    client = FakeClient()
    ctrl = await start(client, tmp_path, ["pvc"])
    try:
        await client.create("persistentvolumeclaims", {
            "metadata": {"name": "data", "namespace": "default"},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "", "volumeName": "late",
                     "resources": {"requests": {"storage": "1Gi"}}}}, "default")
        await anyio.sleep(0.5)  # the claim is reconciled while its volume is unknown
        await client.create("persistentvolumes", {
            "metadata": {"name": "late"},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "",
                     "hostPath": {"path": str(tmp_path / "late")}}})

        def bound():
            pvc = next(c for c in client.objects("persistentvolumeclaims", "default") if c["metadata"]["name"] == "data")
            pv = next(v for v in client.objects("persistentvolumes") if v["metadata"]["name"] == "late")
            return (pvc.get("status") or {}).get("phase") == "Bound" and (pv["spec"].get("claimRef") or {}).get("name") == "data"

        await settle(bound)
    finally:
        await ctrl.stop()
