"""Which objects claiming a controller the reset leaves to it (the live test is
tests/adversarial/test_attempt_surface.py; this pins the rule itself)."""

from __future__ import annotations

from sregym_core.conductor.reconcile import _orphan_reason

RS = {"kind": "ReplicaSet", "metadata": {"name": "geo-1", "uid": "rs-uid"},
      "spec": {"selector": {"matchLabels": {"app": "geo"}}, "template": {}}}
JOB = {"kind": "Job", "metadata": {"name": "backfill", "uid": "job-uid"},
       "spec": {"selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "job-uid"}}, "template": {}}}
OWNERS = {"rs-uid": RS, "job-uid": JOB}


def pod(owner_kind, uid, labels):
    return {"kind": "Pod", "metadata": {"name": "p", "labels": labels, "ownerReferences": [
        {"kind": owner_kind, "name": "x", "uid": uid, "controller": True}]}}


def test_a_controllers_own_pods_stay():
    assert _orphan_reason(pod("ReplicaSet", "rs-uid", {"app": "geo", "pod-template-hash": "1"}), OWNERS) is None
    assert _orphan_reason(pod("Job", "job-uid", {"batch.kubernetes.io/controller-uid": "job-uid"}), OWNERS) is None


def test_forged_and_dangling_owners_do_not_protect_a_pod():
    assert "does not exist" in _orphan_reason(pod("ReplicaSet", "00000000", {"app": "geo"}), OWNERS)
    assert "does not exist" in _orphan_reason(pod("Deployment", "rs-uid", {"app": "geo"}), OWNERS)  # wrong kind
    assert "selector" in _orphan_reason(pod("ReplicaSet", "rs-uid", {"app": "backdoor"}), OWNERS)


def test_owners_of_kinds_not_reconciled_are_trusted():
    # an operator's custom resource: its uid cannot be checked here, so its objects are left alone
    assert _orphan_reason(pod("PostgresCluster", "cr-uid", {}), OWNERS) is None
