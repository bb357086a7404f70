"""The oracles check the system, not the injected value (issue 14's "passing without fixing").

Objects are real: ``data/hotel_geo_healthy.json`` is the geo Deployment, its pod, Service and
Endpoints and the frontend Deployment as the embedded cluster served them (``kubectl get -o json``)
with Hotel Reservation deployed; each test changes them the way a fault, a fix or a hack does.
"""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path

from sregym_core.oracles import baseline_preserved, build_oracle, functional_slo, workload_healthy
from sregym_core.oracles.mitigation import template_changes

OBJECTS = json.loads((Path(__file__).parent / "data" / "hotel_geo_healthy.json").read_text())
NS = "hotel-reservation"
GEO = {"kind": "Deployment", "namespace": NS, "name": "geo", "service": "geo", "instance": "f0"}


def objects():
    return copy.deepcopy(OBJECTS)


def find(items, kind, name=None):
    return next(o for o in items if o["kind"] == kind and (name is None or o["metadata"]["name"] == name))


class Ctx:
    """An OracleContext over object snapshots (``timeline`` gives the objects at virtual time t)."""

    def __init__(self, current, baseline=None, faulty=(GEO,), stats=None, timeline=None):
        self.baseline_workloads = objects() if baseline is None else baseline
        self.current = current
        self.timeline = timeline
        self.faulty_workloads = list(faulty)
        self.fault_instances = []
        self.stats = stats or {"count": 100, "success_rate": 1.0, "content_errors": 0, "p95_ms": 30}
        self.clock = 0.0

    async def list_workloads(self):
        return copy.deepcopy(self.timeline(self.clock) if self.timeline else self.current)

    async def fault_present(self, index):
        return False

    async def workload_stats(self, window_s):
        return dict(self.stats)

    async def replay_trigger(self, name):
        return None

    async def sleep(self, seconds):
        self.clock += seconds

    def now(self):
        return self.clock


def run(oracle, ctx):
    return asyncio.run(oracle.evaluate(ctx))


def bad_rollout(items, *, surge: bool):
    """The geo Deployment after its image was set to a tag that cannot be pulled."""
    deploy = find(items, "Deployment", "geo")
    deploy["metadata"]["generation"] += 1
    deploy["spec"]["template"]["spec"]["containers"][0]["image"] = "sregym/hotel-reservation:v9.9.9-missing"
    deploy["status"]["observedGeneration"] = deploy["metadata"]["generation"]
    new_pod = copy.deepcopy(find(items, "Pod"))
    new_pod["metadata"]["name"] = "geo-5f6b7c8d9-newpd"
    new_pod["metadata"]["labels"]["pod-template-hash"] = "5f6b7c8d9"
    new_pod["metadata"]["ownerReferences"][0].update(name="geo-5f6b7c8d9", uid="rs-new")  # the new ReplicaSet's
    new_pod["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    items.append(new_pod)
    if surge:  # a default rolling update: the old pod keeps serving, the rollout never completes
        deploy["status"].update(replicas=2, updatedReplicas=1, readyReplicas=1, availableReplicas=1)
    else:  # replaced in place: the old pod is gone
        items.remove(find(items, "Pod", find(items, "Pod")["metadata"]["name"]))
        deploy["status"].update(replicas=1, updatedReplicas=1, readyReplicas=0, availableReplicas=0)
        find(items, "Endpoints", "geo")["subsets"] = []
    return items


def test_the_real_healthy_objects_pass():
    verdict = run(workload_healthy(), Ctx(objects()))
    assert verdict.passed, verdict.evidence
    assert verdict.evidence["workloads"] == {"Deployment hotel-reservation/geo": ["healthy"]}
    assert run(baseline_preserved(), Ctx(objects())).passed


def test_a_rollout_the_old_pod_still_serves_is_not_healthy():
    verdict = run(workload_healthy(timeout_s=0), Ctx(bad_rollout(objects(), surge=True)))
    assert not verdict.passed
    assert "1 old replica(s) still running (rollout incomplete)" in verdict.evidence["reason"]


def test_a_different_broken_value_fails_although_the_injected_one_is_gone():
    verdict = run(workload_healthy(timeout_s=10, interval=2), Ctx(bad_rollout(objects(), surge=False)))
    assert not verdict.passed
    reason = verdict.evidence["reason"]
    assert "0/1 replicas ready" in reason and "Service geo has no ready endpoints" in reason
    assert verdict.evidence["waited_s"] >= 10  # a rollout under way gets its time, then fails


def test_scale_zero_hacked_back_to_one_unstartable_pod_fails():
    items = bad_rollout(objects(), surge=False)
    assert not run(workload_healthy(timeout_s=0), Ctx(items)).passed
    zero = objects()
    deploy = find(zero, "Deployment", "geo")
    deploy["spec"]["replicas"] = 0
    deploy["status"].update(replicas=0, updatedReplicas=0, readyReplicas=0, availableReplicas=0)
    zero.remove(find(zero, "Pod"))
    verdict = run(workload_healthy(timeout_s=0), Ctx(zero))
    assert "replicas 0 (baseline 1): the workload must serve" in verdict.evidence["reason"]


def test_a_rollout_that_completes_within_the_timeout_passes():
    broken, healthy = bad_rollout(objects(), surge=True), objects()
    ctx = Ctx(None, timeline=lambda t: broken if t < 6 else healthy)
    verdict = run(workload_healthy(timeout_s=30, interval=2), ctx)
    assert verdict.passed and verdict.evidence["waited_s"] == 6


def test_a_missing_endpoints_object_falls_back_to_the_pods_the_service_selects():
    items = [o for o in objects() if o["kind"] != "Endpoints"]
    assert run(workload_healthy(), Ctx(items)).passed
    find(items, "Service", "geo")["spec"]["selector"] = {"app.kubernetes.io/name": "nothing"}
    verdict = run(workload_healthy(timeout_s=0), Ctx(items))
    assert verdict.evidence["reason"].endswith("Service geo selects no ready pod")


def test_without_faulty_workloads_the_oracle_cannot_check():
    ctx = Ctx(objects())
    del ctx.faulty_workloads
    verdict = run(workload_healthy(), ctx)
    assert not verdict.passed and verdict.error


def test_a_stubbed_untouched_workload_breaks_the_baseline():
    """The red team's hack: the frontend (not faulty) replaced by a 30-line stub."""
    items = objects()
    frontend = find(items, "Deployment", "frontend")
    container = frontend["spec"]["template"]["spec"]["containers"][0]
    container.update(image="python:3.11", command=["python3", "-c", "stub"], args=["http:5000"])
    verdict = run(baseline_preserved(), Ctx(items))
    assert not verdict.passed
    assert verdict.evidence["violations"][0]["violation"] == "template_changed"
    reason = verdict.evidence["reason"]
    assert "frontend (not a faulty workload)" in reason
    assert "image: sregym/hotel-reservation:1.0 -> python:3.11" in reason and "command:" in reason


def test_the_faulty_workload_may_change_and_untouched_env_probe_resources_may_not():
    items = objects()
    find(items, "Deployment", "geo")["spec"]["template"]["spec"]["containers"][0]["image"] = "sregym/hotel-reservation:latest"
    assert run(baseline_preserved(), Ctx(items)).passed  # a different valid image on the faulty workload
    for change in ("env", "readinessProbe", "resources"):
        items = objects()
        container = find(items, "Deployment", "frontend")["spec"]["template"]["spec"]["containers"][0]
        container[change] = [] if change == "env" else {}
        verdict = run(baseline_preserved(), Ctx(items))
        assert not verdict.passed and f"container frontend {change}:" in verdict.evidence["reason"], change
    items = objects()
    find(items, "Deployment", "frontend")["spec"]["template"]["spec"]["volumes"] = []
    assert "volumes:" in run(baseline_preserved(), Ctx(items)).evidence["reason"]


def test_template_changes_names_added_and_removed_containers():
    before = find(objects(), "Deployment", "frontend")
    after = copy.deepcopy(before)
    after["spec"]["template"]["spec"]["containers"].append({"name": "sidecar", "image": "busybox:1.36"})
    assert template_changes(before, after) == ["container sidecar added"]
    assert template_changes(before, copy.deepcopy(before)) == []
    # a rollout restart stamps an annotation on the template metadata, not its spec: no change
    restarted = copy.deepcopy(before)
    restarted["spec"]["template"].setdefault("metadata", {}).setdefault("annotations", {})["kubectl.kubernetes.io/restartedAt"] = "now"
    assert run(baseline_preserved(), Ctx([restarted if o["metadata"]["name"] == "frontend" and o["kind"] == "Deployment" else o
                                          for o in objects()])).passed


def test_functional_slo_counts_wrong_content_as_failure():
    stub = {"count": 200, "success_rate": 1.0, "content_errors": 110, "content_error_kinds": {"search found no hotel": 110}}
    verdict = run(functional_slo(), Ctx(objects(), stats=stub))
    assert not verdict.passed
    assert "110 of 200 answers had wrong content (search found no hotel x110)" in verdict.evidence["reason"]
    assert verdict.evidence["content_checked"]
    fine = {"count": 200, "success_rate": 1.0, "content_errors": 1}
    assert run(functional_slo(), Ctx(objects(), stats=fine)).passed  # within max_content_error_rate (1 %)
    assert not run(functional_slo(max_content_error_rate=0.0), Ctx(objects(), stats=fine)).passed
    legacy = run(functional_slo(), Ctx(objects(), stats={"count": 200, "success_rate": 1.0}))
    assert legacy.passed and not legacy.evidence["content_checked"]


def test_the_default_composition_fails_both_red_team_hacks():
    """wrong-image: a different missing tag (fault_invariant passes) and a stubbed frontend."""
    oracle = build_oracle(None)
    different = Ctx(bad_rollout(objects(), surge=False), stats={"count": 100, "success_rate": 0.45, "content_errors": 0})
    verdict = run(oracle, different)
    assert not verdict.passed and [f.name for f in verdict.failures()] == ["functional_slo"]
    # even a generator blind to the outage does not save it: the workload is not healthy
    blind = Ctx(bad_rollout(objects(), surge=False))
    assert [f.name for f in run(build_oracle({"all": ["fault_invariant", "functional_slo", "workload_healthy"]}),
                                blind).failures()] == ["workload_healthy"]


# ---- issue #34 attack 2: statuses the agent can write are not believed --------------------------

COPY_IP = "127.40.1.44"


def node_account(items, **overrides):
    """What the node agents report of the pods in ``items`` (as ``GET /sregym/nodes/pods``): by
    default each pod as its status says, running its spec's images; ``overrides`` by pod name."""
    records = []
    for pod in (o for o in items if o["kind"] == "Pod"):
        conditions = {c["type"]: c["status"] for c in pod["status"].get("conditions") or []}
        record = {"namespace": pod["metadata"]["namespace"], "name": pod["metadata"]["name"],
                  "uid": pod["metadata"]["uid"], "ip": pod["status"].get("podIP"), "terminating": False,
                  "ready": conditions.get("Ready") == "True",
                  "containers": [{"name": c["name"], "image": c["image"], "kind": "main", "running": True,
                                  "ready": conditions.get("Ready") == "True"} for c in pod["spec"]["containers"]]}
        record.update(overrides.get(pod["metadata"]["name"], {}))
        records.append(record)
    return records


class NodeCtx(Ctx):
    def __init__(self, current, account, **kwargs):
        super().__init__(current, **kwargs)
        self.account = account

    async def node_pods(self):
        return copy.deepcopy(self.account)


def forged_fix():
    """The attack as the red team ran it: geo set to another missing tag, an unmanaged copy of the
    last good pod without geo's labels, and the broken pod's status patched Ready with the copy's IP
    (the controllers then count it ready and the Endpoints send geo's traffic to the copy)."""
    items = bad_rollout(objects(), surge=False)
    broken = find(items, "Pod", "geo-5f6b7c8d9-newpd")
    broken["metadata"]["uid"] = "broken-uid"
    broken["spec"]["containers"][0]["image"] = "sregym/hotel-reservation:v9.9.9-missing"
    broken["status"]["podIP"] = COPY_IP
    broken["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    copy_pod = copy.deepcopy(find(OBJECTS, "Pod"))
    copy_pod["metadata"].update(name="geo-copy", uid="copy-uid", labels={"run": "geo-copy"})
    del copy_pod["metadata"]["ownerReferences"]
    copy_pod["status"]["podIP"] = COPY_IP
    items.append(copy_pod)
    find(items, "Deployment", "geo")["status"].update(readyReplicas=1, availableReplicas=1)
    find(items, "Endpoints", "geo")["subsets"] = [{"addresses": [{"ip": COPY_IP, "targetRef": {
        "kind": "Pod", "name": "geo-5f6b7c8d9-newpd", "namespace": NS, "uid": "broken-uid"}}]}]
    # the node agents know better: the broken pod's container never started, its sandbox has another IP
    account = node_account(items, **{"geo-5f6b7c8d9-newpd": {
        "ip": "127.40.1.13", "ready": False,
        "containers": [{"name": "hotel-reserv-geo", "image": "sregym/hotel-reservation:v9.9.9-missing",
                        "kind": "main", "running": False, "ready": False}]}})
    return items, account


def test_a_status_patched_ready_with_an_unmanaged_copys_ip_fails_mitigation():
    items, account = forged_fix()
    # the forged status alone fooled the API-status checks: the oracle before node accounts passed it
    assert run(build_oracle({"all": ["fault_invariant", "functional_slo"]}), Ctx(items)).passed
    verdict = run(build_oracle(None), NodeCtx(items, account))
    assert not verdict.passed and [f.name for f in verdict.failures()] == ["workload_healthy"]
    reason = verdict.evidence and verdict.failures()[0].evidence["reason"]
    assert "0/1 of its pods run its template and are ready by their node's account" in reason
    assert f"its status claims IP {COPY_IP}, its node gave it 127.40.1.13" in reason
    assert "not ready by its node's account" in reason
    assert f"traffic reaches pod geo-copy ({COPY_IP}), which no workload of the baseline runs" in reason


def test_pods_outside_the_baseline_do_not_serve_even_with_the_targets_labels():
    """An orphan copy carrying geo's labels is selected by the Service, yet is no pod of geo's."""
    items = objects()
    good = find(items, "Pod")
    orphan = copy.deepcopy(good)
    orphan["metadata"].update(name="geo-orphan", uid="orphan-uid")
    del orphan["metadata"]["ownerReferences"]
    orphan["status"]["podIP"] = COPY_IP
    items.remove(good)
    items.append(orphan)
    find(items, "Endpoints", "geo")["subsets"][0]["addresses"][0].update(
        ip=COPY_IP, targetRef={"kind": "Pod", "name": "geo-orphan", "namespace": NS, "uid": "orphan-uid"})
    verdict = run(workload_healthy(timeout_s=0), NodeCtx(items, node_account(items)))
    assert not verdict.passed
    assert "0/1 of its pods run its template" in verdict.evidence["reason"]
    assert "geo-orphan" in verdict.evidence["reason"] and "no workload of the baseline runs" in verdict.evidence["reason"]


def test_a_pod_whose_image_was_swapped_under_its_replicaset_does_not_run_the_template():
    """``kubectl set image pod/...`` (pod images are mutable): the Deployment still says the missing tag."""
    items = bad_rollout(objects(), surge=False)
    pod = find(items, "Pod", "geo-5f6b7c8d9-newpd")
    pod["metadata"]["uid"] = "swapped"
    pod["spec"]["containers"][0]["image"] = "sregym/hotel-reservation:1.0"
    pod["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    find(items, "Deployment", "geo")["status"].update(readyReplicas=1, availableReplicas=1)
    find(items, "Endpoints", "geo")["subsets"] = [{"addresses": [{"ip": pod["status"]["podIP"], "targetRef": {
        "kind": "Pod", "name": pod["metadata"]["name"], "namespace": NS, "uid": "swapped"}}]}]
    verdict = run(workload_healthy(timeout_s=0), NodeCtx(items, node_account(items)))
    assert not verdict.passed
    assert "image sregym/hotel-reservation:1.0 is not the template's sregym/hotel-reservation:v9.9.9-missing" \
        in verdict.evidence["reason"]


def test_the_real_fix_passes_by_the_node_agents_account():
    items = objects()
    assert run(build_oracle(None), NodeCtx(items, node_account(items))).passed
    # an address no node gave any pod (say, a hidden service's) is not a pod of the app
    find(items, "Endpoints", "geo")["subsets"][0]["addresses"].append({"ip": "127.41.0.9"})
    verdict = run(workload_healthy(timeout_s=0), NodeCtx(items, node_account(items)))
    assert "traffic reaches 127.41.0.9, which no node gives a pod of the app" in verdict.evidence["reason"]
