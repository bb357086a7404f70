"""FleetCast live on the embedded cluster, one deployment for the whole module (slow).

Deployed through the conductor's own path (``deployed_app``): the operator (kopf, in its pod) turns
the shipped DatastoreCluster into a replicated Redis StatefulSet and reports it Running; the
workload is served on every request kind with the seeded catalogue; a StatefulSet edited under the
operator is put back. Then the live fault contract: each fault is injected, its symptom shows on
the resource or its pods (a Warning Event and ``Failed``/``StatefulSetRejected`` on the
DatastoreCluster, an unschedulable pod, Pending claims, the operator's pod unable to pull), the
reference fix edits the resource or the operator back, the fault is gone and the app answers again.
A default run proves two faults (a rotating daily sample); ``--matrix`` proves all six.
"""

from __future__ import annotations

import json
import random
import time

import pytest
import sregym_app_fleetcast.plugin
from sregym_app_fleetcast.catalog import BY_ID, EPOCH
from sregym_app_fleetcast.topology import API, API_PORT, CRD_NAME, DATASTORE, OPERATOR
from sregym_appkit.testing import assert_every_kind_answered_right, deployment_for_module, live_fault_contract

from sregym_core.testing.live import LiveCase, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.second_lane]  # FleetCast: the second live lane (conftest.py)
FRONTEND = (API, API_PORT)
IDS = sorted(BY_ID)


def request_for(kind: str, rng: random.Random) -> tuple[str, str]:
    """One request of ``kind`` as the live probes send it (GET kinds only; the contract's latency
    sample asks for ``search``: a satellite's position, FleetCast's lookup)."""
    norad = rng.choice(IDS)
    position = ("GET", f"/api/satellites/{norad}/position?t={EPOCH + rng.randrange(86400)}")
    return {"home": ("GET", "/"), "list": ("GET", "/api/satellites"),
            "satellite": ("GET", f"/api/satellites/{norad}"), "position": position, "search": position}[kind]


@pytest.fixture(scope="module")
def fc(deployed_app):
    yield from deployment_for_module(deployed_app, "fleetcast")


def _resource(live) -> dict:
    return json.loads(live.kubectl("get", CRD_NAME, DATASTORE, "-n", live.namespace, "-o", "json"))


def _running(live) -> dict | None:
    resource = _resource(live)
    return resource if (resource.get("status") or {}).get("phase") == "Running" else None


def test_the_operator_runs_the_datastore_and_the_workload_gets_seeded_answers(fc):
    live = fc.live(time.time(), request_for=request_for, frontend=FRONTEND)
    # the deploy's volume snapshot scales the StatefulSet down and the operator back up: wait for the event
    resource = wait_for(lambda: _running(live), 120, 1) or _resource(live)
    assert resource["status"]["phase"] == "Running" and resource["status"]["readyReplicas"] == 3, resource.get("status")
    assert {c["type"]: c["reason"] for c in resource["status"]["conditions"]} == {
        "Reconciled": "Synced", "Ready": "AllReplicasReady"}
    sts = json.loads(live.kubectl("get", "statefulset", DATASTORE, "-n", live.namespace, "-o", "json"))
    assert sts["metadata"]["ownerReferences"][0]["kind"] == "DatastoreCluster"
    for kind, name in (("service", DATASTORE), ("service", f"{DATASTORE}-headless"), ("pdb", DATASTORE),
                       ("pvc", f"data-{DATASTORE}-0")):
        assert json.loads(live.kubectl("get", kind, name, "-n", live.namespace, "-o", "json"))["metadata"]["name"] == name
    # the primary replicates to the two others: a replica connects a moment after its pod is ready (a
    # landing check caught one still in wait_bgsave), so wait for both, with an outer bound against a hang
    def replication() -> str:
        return live.kubectl("exec", "-n", live.namespace, f"{DATASTORE}-0", "--", "redis-cli", "info", "replication")

    def both_connected() -> str | None:
        text = replication()
        return text if "connected_slaves:2" in text else None

    info = wait_for(both_connected, 120, 1) or replication()
    assert "role:master" in info and "connected_slaves:2" in info, info

    assert_every_kind_answered_right(live, ("home", "list", "satellite", "position", "observe"), 60, timeout_s=240)


def _container(live) -> dict:
    sts = json.loads(live.kubectl("get", "statefulset", DATASTORE, "-n", live.namespace, "-o", "json"))
    return sts["spec"]["template"]["spec"]["containers"][0]


def test_a_statefulset_edited_under_the_operator_is_put_back(fc):
    """A container changed under the operator (a stub's image) is put back from the resource at once;
    a new spec's replica count is applied at once (a count set by someone else waits out a grace minute:
    test_fleetcast_units.py)."""
    live = fc.live(time.time(), request_for=request_for, frontend=FRONTEND)
    image = _container(live)["image"]
    live.kubectl("set", "image", f"statefulset/{DATASTORE}", "redis=python:3.11", "-n", live.namespace)
    assert wait_for(lambda: _container(live)["image"] == image, 60, 1), "the operator did not put the image back"
    # a new spec's count is applied (down to 2: a replica asks for a core, a small cluster may hold no 4th)
    live.kubectl("patch", CRD_NAME, DATASTORE, "-n", live.namespace, "--type=merge", "-p", '{"spec":{"replicas":2}}')
    try:
        assert wait_for(lambda: _running(live) and _resource(live)["status"]["readyReplicas"] == 2, 120, 1)
    finally:
        live.kubectl("patch", CRD_NAME, DATASTORE, "-n", live.namespace, "--type=merge", "-p", '{"spec":{"replicas":3}}')
    assert wait_for(lambda: _running(live), 120, 1)


def test_the_agent_may_edit_the_resource_but_not_its_status(fc, tmp_path):
    """The agent's restricted identity (as an attempt grants it) may patch the DatastoreCluster, the
    object these problems break, and never its status, which the operator reports."""
    import subprocess

    from sregym_core.conductor.agent_access import grant_agent_access, revoke_agent_access

    account = "sregym-agent-fleetcast-test"
    kubeconfig = grant_agent_access(fc.env.kube, [fc.app.namespace], tmp_path / "agent.kubeconfig", account=account)

    def agent(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([fc.env.kubectl, "--kubeconfig", str(kubeconfig), "-n", fc.app.namespace, *args],
                              capture_output=True, text=True, timeout=60)
    try:
        resource = f"{CRD_NAME}/{DATASTORE}"
        assert agent("auth", "can-i", "patch", resource).stdout.strip() == "yes"
        assert agent("auth", "can-i", "patch", resource, "--subresource=status").stdout.strip() == "no"
        done = agent("annotate", resource, "fleetcast.sregym.io/checked-by=agent", "--overwrite")
        assert done.returncode == 0, done.stderr
        refused = agent("patch", resource, "--subresource=status", "--type=merge", "-p", '{"status":{"phase":"Running"}}')
        assert refused.returncode != 0 and "forbidden" in refused.stderr.lower(), refused.stderr
    finally:
        agent("annotate", f"{CRD_NAME}/{DATASTORE}", "fleetcast.sregym.io/checked-by-")
        revoke_agent_access(fc.env.kube, [fc.app.namespace], account)


def test_an_operator_on_its_image_that_reconciles_nothing_is_still_the_fault(fc):
    """Red-team round 19, finding 3: the operator's image put back, but its WATCH_NAMESPACES pointed at a namespace
    it may not read. Its pod is Ready (/healthz answers) and it reconciles nothing, the operator fault's own symptom:
    the fault still counts as present, and the whole container as shipped makes it gone."""
    from sregym_core.faults import call_fault
    from sregym_core.types import Target

    live = fc.live(time.time(), request_for=request_for, frontend=FRONTEND)
    spec = fc.host.get_faults()["operator-image-typo"]
    target = Target(app=fc.app, component=fc.app.component(OPERATOR), namespace=fc.app.namespace)
    ctx = fc.context()
    assert wait_for(lambda: _running(live), 120, 1)
    # an event with an outer bound: the operator resyncs every 4 s, a busy machine may take longer
    assert wait_for(lambda: not fc.run(call_fault(spec.impl.is_present, ctx, target, {})), 120, 1), \
        "the shipped operator reconciles"
    live.kubectl("set", "env", f"deployment/{OPERATOR}", "WATCH_NAMESPACES=fleetcast-standby", "-n", live.namespace)
    try:
        live.kubectl("rollout", "status", f"deployment/{OPERATOR}", "-n", live.namespace, "--timeout=180s")
        assert fc.run(call_fault(spec.impl.is_present, ctx, target, {})) is True
    finally:
        live.kubectl("set", "env", f"deployment/{OPERATOR}", "WATCH_NAMESPACES=fleetcast", "-n", live.namespace)
        live.kubectl("rollout", "status", f"deployment/{OPERATOR}", "-n", live.namespace, "--timeout=180s")
    assert wait_for(lambda: not fc.run(call_fault(spec.impl.is_present, ctx, target, {})), 120, 1)


# ------------------------------------------------------------------ the live fault contract


def _event(live, reason: str) -> str | None:
    events = json.loads(live.kubectl("get", "events", "-n", live.namespace, "-o", "json"))["items"]
    for event in events:
        if event.get("reason") == reason and (event.get("involvedObject") or {}).get("kind") == "DatastoreCluster":
            return f"{event.get('type')} {reason}: {event.get('message', '')[:200]}"
    return None


def rejected(live) -> str | None:
    """The resource is Failed because Kubernetes refused its StatefulSet, and says so in an Event."""
    status = _resource(live).get("status") or {}
    cond = next((c for c in status.get("conditions") or [] if c["type"] == "Reconciled"), {})
    if status.get("phase") == "Failed" and cond.get("reason") == "StatefulSetRejected" and "is invalid" in cond.get("message", ""):
        return _event(live, "StatefulSetRejected")
    return None


def unschedulable(live) -> str | None:
    pods = json.loads(live.kubectl("get", "pods", "-n", live.namespace, "-l", f"app.kubernetes.io/name={DATASTORE}",
                                   "-o", "json"))["items"]
    for pod in pods:
        for cond in (pod.get("status") or {}).get("conditions") or []:
            if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
                phase = _resource(live)["status"].get("phase")
                return f"{pod['metadata']['name']} unschedulable ({cond.get('message', '')[:120]}); resource {phase}"
    return None


def claims_pending(live) -> str | None:
    claims = json.loads(live.kubectl("get", "pvc", "-n", live.namespace, "-o", "json"))["items"]
    pending = [c["metadata"]["name"] for c in claims if c["status"].get("phase") == "Pending"
               and c["spec"].get("storageClassName") == "fast-ssd"]
    if pending and _event(live, "StorageClassNotFound"):
        return f"claims Pending: {pending}; {_event(live, 'StorageClassNotFound')}"
    return None


def operator_cannot_pull(live) -> str | None:
    pods = json.loads(live.kubectl("get", "pods", "-n", live.namespace, "-l", f"app.kubernetes.io/name={OPERATOR}",
                                   "-o", "json"))["items"]
    for pod in pods:
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            reason = ((status.get("state") or {}).get("waiting") or {}).get("reason")
            if reason in ("ErrImagePull", "ImagePullBackOff"):
                return f"{pod['metadata']['name']}: {reason} ({status.get('image')})"
    return None


class TestFleetCastLiveFaults(live_fault_contract(sregym_app_fleetcast.plugin, request_for, FRONTEND)):
    cases = {
        "datastore-replicas-overload": LiveCase(DATASTORE, unschedulable, endpoint="satellite", symptom_timeout=120),
        "datastore-missing-storage-class": LiveCase(DATASTORE, claims_pending, endpoint="satellite", symptom_timeout=90),
        "datastore-invalid-toleration": LiveCase(DATASTORE, rejected, endpoint="satellite"),
        "datastore-invalid-run-as-user": LiveCase(DATASTORE, rejected, endpoint="satellite"),
        "datastore-invalid-update-strategy": LiveCase(DATASTORE, rejected, endpoint="satellite"),
        "operator-image-typo": LiveCase(OPERATOR, operator_cannot_pull, endpoint="satellite"),
    }
