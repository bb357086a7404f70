"""kube.restart_dependents waits for each restarted caller's rollout, but not past the moment its new
pods have run for a grace period without getting ready: a caller whose start or readiness needs the
target the fault cut off never gets ready."""

from __future__ import annotations

import json

from sregym_core.faultkit import kube

STAMP = "2026-11-28T12:00:00Z"


def deployment(status=None, stamp=STAMP, replicas=1):
    obj = {"metadata": {"name": "caller", "generation": 2},
           "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "caller"}},
                    "template": {"metadata": {"annotations": {kube.RESTARTED_AT: stamp}},
                                 "spec": {"containers": [{"name": "main"}]}}}}
    if status is not None:
        obj["status"] = status
    return obj


def pod(stamp, state, deleting=False, init=None, last=None):
    meta = {"annotations": {kube.RESTARTED_AT: stamp}}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-28T12:00:05Z"
    status = {"containerStatuses": [{"state": {state: {}}, "lastState": {last: {}} if last else {}}]}
    if init:
        status["initContainerStatuses"] = [{"state": {init: {}}}]
    return {"metadata": meta, "status": status}


class Ctx:
    namespace = "app"

    def __init__(self, dep, pods=()):
        self.dep, self.pods, self.calls = dep, list(pods), []

    def kubectl(self, *args, **_):
        self.calls.append(args)
        if args[:2] == ("get", "deployment"):
            return json.dumps(self.dep) if self.dep else ""
        if args[:2] == ("get", "pods"):
            assert "app=caller" in args
            return json.dumps({"items": self.pods})
        raise AssertionError(args)


ROLLING = {"observedGeneration": 2, "replicas": 2, "updatedReplicas": 1, "availableReplicas": 1}


def state(dep, pods=()):
    return kube.rollout_state(Ctx(dep, pods), "caller")


def test_a_complete_rollout_or_an_unmanaged_object_is_complete():
    done = {"observedGeneration": 2, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1}
    assert state(deployment(done)) == "complete"
    assert state(deployment()) == "complete"  # no status: no controller to wait for
    assert state(None) == "complete"  # gone


def test_new_pods_that_ran_a_process_have_started():
    assert state(deployment(ROLLING), [pod("old", "running"), pod(STAMP, "running")]) == "started"
    # blocked in an init container that waits for the target (hotel's wait-for-postgres)
    assert state(deployment(ROLLING), [pod(STAMP, "waiting", init="running")]) == "started"
    # crash-looping: between two runs
    assert state(deployment(ROLLING), [pod(STAMP, "waiting", last="terminated")]) == "started"


def test_old_pods_unstarted_pods_and_a_stale_status_are_pending():
    assert state(deployment(ROLLING), [pod("old", "running")]) == "pending"
    assert state(deployment(ROLLING), [pod(STAMP, "waiting")]) == "pending"
    assert state(deployment(ROLLING), [pod(STAMP, "waiting", init="waiting")]) == "pending"
    assert state(deployment(ROLLING), [pod(STAMP, "running", deleting=True)]) == "pending"
    assert state(deployment(ROLLING, replicas=2), [pod(STAMP, "running")]) == "pending"
    stale = dict(ROLLING, observedGeneration=1, updatedReplicas=2, replicas=2, availableReplicas=2)
    assert state(deployment(stale, replicas=2), [pod(STAMP, "running")] * 2) == "pending"


def test_a_rollout_whose_pods_are_refused_is_blocked():
    refused = dict(ROLLING, replicas=0, updatedReplicas=0, availableReplicas=0, conditions=[
        {"type": "Progressing", "status": "True"},
        {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
         "message": 'Internal error occurred: failed calling webhook "pods.example": x509: unknown authority'}])
    assert state(deployment(refused), []) == "blocked"
    cleared = dict(refused, conditions=[{"type": "ReplicaFailure", "status": "False"}])
    assert state(deployment(cleared), []) == "pending"


def test_restart_dependents_waits_for_completion_or_a_started_grace(monkeypatch):
    restarts, polls = [], []
    clock = [0.0]
    monkeypatch.setattr(kube, "dependents", lambda ctx, target: ["done", "stuck", "slow", "refused"])
    timeline = {"done": lambda t: "complete" if t >= 2 else "pending",
                "refused": lambda t: "blocked" if t >= 1 else "pending",  # another fault refuses its pods
                "stuck": lambda t: "started" if t >= 3 else "pending",  # never ready
                "slow": lambda t: "complete" if t >= 10 else "started"}

    def rollout_state(ctx, name):
        polls.append((clock[0], name))
        return timeline[name](clock[0])

    monkeypatch.setattr(kube, "rollout_state", rollout_state)
    monkeypatch.setattr(kube.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(kube.time, "sleep", lambda s: clock.__setitem__(0, clock[0] + s))

    class Restarting:
        def rollout_restart(self, kind, name):
            restarts.append((kind, name))

    kube.restart_dependents(Restarting(), target=None, timeout=180)
    assert restarts == [("deployment", "done"), ("deployment", "stuck"), ("deployment", "slow"),
                        ("deployment", "refused")]
    assert max(t for t, n in polls if n == "refused") == 1.0 + kube.STUCK_GRACE_S
    assert max(t for t, n in polls if n == "done") == 2.0  # not asked again once complete
    assert max(t for t, n in polls if n == "slow") == 10.0  # completed within its grace
    assert max(t for t, n in polls if n == "stuck") == 3.0 + kube.STUCK_GRACE_S  # started, never ready: the grace
    assert clock[0] == 3.0 + kube.STUCK_GRACE_S  # not the 180 s timeout
