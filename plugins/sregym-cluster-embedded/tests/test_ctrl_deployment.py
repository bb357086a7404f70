"""Deployment and ReplicaSet controllers against the in-memory client."""

from __future__ import annotations

import asyncio
import types

import pytest
from _fixtures_ctrl import FakeClient, anyio_backend, settle  # noqa: F401
from sregym_cluster_embedded.controllers import start_controllers
from sregym_cluster_embedded.controllers.deployment import REVISION, surge_and_unavailable

pytestmark = pytest.mark.anyio
SETTINGS = types.SimpleNamespace(name="t")


def deployment(name="web", replicas=2, image="nginx:1", **spec):
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
                 "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": name, "image": image}]}}, **spec},
    }


@pytest.fixture
async def cluster():
    client = FakeClient()
    ctrl = start_controllers(client, SETTINGS, only=["deployment", "replicaset"])
    await ctrl.wait_synced()
    yield client
    await ctrl.stop()


def test_surge_rounds_up_and_unavailable_rounds_down():
    d = deployment(replicas=3)
    assert surge_and_unavailable(d) == (1, 0)
    d["spec"]["strategy"]["rollingUpdate"] = {"maxSurge": "10%", "maxUnavailable": "10%"}
    d["spec"]["replicas"] = 5
    assert surge_and_unavailable(d) == (1, 0)
    d["spec"]["strategy"]["rollingUpdate"] = {"maxSurge": 0, "maxUnavailable": 0}
    assert surge_and_unavailable(d) == (0, 1)


async def test_create_scales_up_with_events_and_status(cluster: FakeClient):
    await cluster.create("deployments.apps", deployment())
    await settle(lambda: len(cluster.objects("pods")) == 2)
    (rs,) = cluster.objects("replicasets.apps")
    phash = rs["metadata"]["labels"]["pod-template-hash"]
    assert rs["metadata"]["name"] == f"web-{phash}"
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": phash}
    assert rs["metadata"]["annotations"][REVISION] == "1"
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] == "2"
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"] == "3"
    assert rs["metadata"]["ownerReferences"][0]["controller"] is True
    for pod in cluster.objects("pods"):
        assert pod["metadata"]["name"].startswith(f"web-{phash}-") and len(pod["metadata"]["name"]) == len(f"web-{phash}-") + 5
        assert pod["metadata"]["labels"]["pod-template-hash"] == phash
    msgs = [e["message"] for e in cluster.events if e["reason"] == "ScalingReplicaSet"]
    assert msgs == [f"Scaled up replica set web-{phash} from 0 to 2"]
    assert cluster.reasons().count("SuccessfulCreate") == 2
    await cluster.mark_pods()

    async def done():
        d = await cluster.get("deployments.apps", "web")
        return d.get("status", {}).get("availableReplicas") == 2 and d["status"]["conditions"][1]["reason"] == "NewReplicaSetAvailable"
    await settle(done)
    d = await cluster.get("deployments.apps", "web")
    assert d["metadata"]["annotations"][REVISION] == "1"
    st = d["status"]
    assert st["replicas"] == st["updatedReplicas"] == st["readyReplicas"] == 2
    assert "unavailableReplicas" not in st and st["observedGeneration"] == 1
    avail, prog = st["conditions"]
    assert (avail["type"], avail["reason"], avail["message"]) == ("Available", "MinimumReplicasAvailable", "Deployment has minimum availability.")
    assert prog["message"] == f'ReplicaSet "web-{phash}" has successfully progressed.'


async def _ready_rollout(client: FakeClient, name="web", want_revision="1"):
    """Keep marking pods ready until the deployment reports a completed rollout."""
    async def done():
        await client.mark_pods()
        d = await client.get("deployments.apps", name)
        st = d.get("status", {})
        prog = [c for c in st.get("conditions", []) if c["type"] == "Progressing"]
        return (st.get("observedGeneration") == d["metadata"]["generation"] and prog
                and prog[0]["reason"] == "NewReplicaSetAvailable"
                and d["metadata"]["annotations"].get(REVISION) == want_revision
                and st.get("updatedReplicas") == st.get("replicas") == d["spec"]["replicas"])
    await settle(done)


async def _delete_terminated(client: FakeClient):
    pass


async def test_rolling_update_undo_and_history_cleanup(cluster: FakeClient):
    await cluster.create("deployments.apps", deployment(replicas=4, revisionHistoryLimit=1))
    await _ready_rollout(cluster)
    first = cluster.objects("replicasets.apps")[0]
    await cluster.patch("deployments.apps", "web", {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:2"}]}}}})
    # never more than replicas + surge pods exist at once, never fewer than replicas - unavailable ready
    peak = 0

    async def rolled():
        nonlocal peak
        peak = max(peak, len(cluster.objects("pods")))
        return True
    for _ in range(3):
        await rolled()
        await asyncio.sleep(0.05)
    await _ready_rollout(cluster, want_revision="2")
    assert peak <= 5
    sets = {r["metadata"]["name"]: r for r in cluster.objects("replicasets.apps")}
    assert len(sets) == 2 and sets[first["metadata"]["name"]]["spec"]["replicas"] == 0
    assert all(p["spec"]["containers"][0]["image"] == "nginx:2" for p in cluster.objects("pods"))
    scaling = [e["message"] for e in cluster.events if e["reason"] == "ScalingReplicaSet"]
    assert any(m.startswith(f"Scaled down replica set {first['metadata']['name']} from 4 to") for m in scaling)
    # rollout undo: kubectl json-patches the template back to the old RS template minus the hash
    template = dict(first["spec"]["template"])
    template["metadata"] = {"labels": {"app": "web"}}
    await cluster.patch("deployments.apps", "web", [{"op": "replace", "path": "/spec/template", "value": template}], patch_type="json")
    await _ready_rollout(cluster, want_revision="3")
    reused = await cluster.get("replicasets.apps", first["metadata"]["name"])
    assert reused["metadata"]["annotations"][REVISION] == "3"
    assert reused["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"] == "1"
    assert reused["spec"]["replicas"] == 4
    # a third template: with revisionHistoryLimit 1 only one idle RS survives
    await cluster.patch("deployments.apps", "web", {"spec": {"template": {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": "now"}}}}})
    await _ready_rollout(cluster, want_revision="4")
    await settle(lambda: len(cluster.objects("replicasets.apps")) == 2)


async def test_recreate_scales_old_to_zero_first(cluster: FakeClient):
    await cluster.create("deployments.apps", deployment(replicas=2, strategy={"type": "Recreate"}))
    await _ready_rollout(cluster)
    await cluster.patch("deployments.apps", "web", {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "x:2"}]}}}})
    await _ready_rollout(cluster, want_revision="2")
    images = {p["spec"]["containers"][0]["image"] for p in cluster.objects("pods")}
    assert images == {"x:2"}


async def test_recreate_goes_on_once_a_terminating_old_pod_is_gone(cluster: FakeClient):
    """Old pods terminate for a while (graceful deletion). Their ReplicaSet stops counting them as soon
    as they begin terminating, so only the pod's own deletion can tell the Deployment to go on."""
    cluster.graceful_pods = True
    await cluster.create("deployments.apps", deployment(replicas=1, strategy={"type": "Recreate"}))
    await _ready_rollout(cluster)
    (old_pod,) = cluster.objects("pods")
    await cluster.patch("pods", old_pod["metadata"]["name"], {"spec": {"nodeName": "node-1"}}, "default")
    await cluster.patch("deployments.apps", "web", {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "x:2"}]}}}})

    def terminating() -> bool:
        pods = cluster.objects("pods")
        return len(pods) == 1 and bool(pods[0]["metadata"].get("deletionTimestamp"))
    await settle(terminating)
    await asyncio.sleep(0.3)  # the rollout waits: nothing of the new template while the old pod lives
    assert [p["spec"]["containers"][0]["image"] for p in cluster.objects("pods")] == ["nginx:1"]
    await cluster.delete("pods", old_pod["metadata"]["name"], "default")  # the kubelet reports it gone
    await _ready_rollout(cluster, want_revision="2")
    assert {p["spec"]["containers"][0]["image"] for p in cluster.objects("pods")} == {"x:2"}


async def test_paused_deployment_does_not_roll_out(cluster: FakeClient):
    await cluster.create("deployments.apps", deployment(replicas=1))
    await _ready_rollout(cluster)
    await cluster.patch("deployments.apps", "web", {"spec": {"paused": True, "template": {"spec": {"containers": [{"name": "web", "image": "x:9"}]}}}})

    async def paused():
        d = await cluster.get("deployments.apps", "web")
        return any(c["reason"] == "DeploymentPaused" for c in d["status"]["conditions"])
    await settle(paused)
    assert len(cluster.objects("replicasets.apps")) == 1
    await cluster.patch("deployments.apps", "web", {"spec": {"paused": False}})
    await _ready_rollout(cluster, want_revision="2")


async def test_progress_deadline_exceeded(cluster: FakeClient):
    await cluster.create("deployments.apps", deployment(replicas=1, progressDeadlineSeconds=1))

    async def exceeded():
        d = await cluster.get("deployments.apps", "web")
        prog = [c for c in d.get("status", {}).get("conditions", []) if c["type"] == "Progressing"]
        return prog and prog[0]["reason"] == "ProgressDeadlineExceeded"
    await settle(exceeded)
    d = await cluster.get("deployments.apps", "web")
    prog = [c for c in d["status"]["conditions"] if c["type"] == "Progressing"][0]
    assert prog["status"] == "False" and prog["message"].endswith("has timed out progressing.")
    assert d["status"]["unavailableReplicas"] == 1


async def test_replicaset_failed_create_event_carries_api_message(cluster: FakeClient):
    cluster.fail_create["pods"] = 'pods "web-x" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2'
    await cluster.create("deployments.apps", deployment(replicas=1))
    await settle(lambda: "FailedCreate" in cluster.reasons())
    ev = next(e for e in cluster.events if e["reason"] == "FailedCreate")
    assert ev["type"] == "Warning" and ev["message"].startswith("Error creating: pods \"web-x\" is forbidden: exceeded quota")
    assert ev["component"] == "replicaset-controller"
    await settle(lambda: any(c["type"] == "ReplicaFailure" for c in (cluster.objects("replicasets.apps")[0].get("status") or {}).get("conditions", [])))

    async def surfaced():
        d = await cluster.get("deployments.apps", "web")
        return any(c["type"] == "ReplicaFailure" and c["reason"] == "FailedCreate" and "exceeded quota" in c["message"]
                   for c in (d.get("status") or {}).get("conditions", []))
    await settle(surfaced)
    del cluster.fail_create["pods"]
    rs_name = cluster.objects("replicasets.apps")[0]["metadata"]["name"]
    await cluster.patch("replicasets.apps", rs_name, {"metadata": {"annotations": {"poke": "1"}}})  # skip the retry wait

    async def recovered():
        d = await cluster.get("deployments.apps", "web")
        conds = (d.get("status") or {}).get("conditions", [])
        return len(cluster.objects("pods")) == 1 and not any(c["type"] == "ReplicaFailure" for c in conds)
    await settle(recovered)


async def test_scale_down_prefers_not_ready_pods(cluster: FakeClient):
    await cluster.create("deployments.apps", deployment(replicas=3))
    await settle(lambda: len(cluster.objects("pods")) == 3)
    pods = cluster.objects("pods")
    ready_names = {p["metadata"]["name"] for p in pods[:2]}
    for p in pods[:2]:
        await cluster.patch("pods", p["metadata"]["name"], {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}, subresource="status")
    await cluster.patch("deployments.apps", "web", {"spec": {"replicas": 2}})
    await settle(lambda: len(cluster.objects("pods")) == 2)
    assert {p["metadata"]["name"] for p in cluster.objects("pods")} == ready_names
    assert any(e["message"].startswith("Deleted pod: ") for e in cluster.events)
