"""Issue 34, the conductor's side, tried on the embedded cluster with Hotel Reservation deployed
through the conductor's own Environment (the session's shared cluster):

* attack 2: geo set to another missing image tag, an unmanaged copy of its last good pod started
  without geo's labels, and the broken pod's status kept patched Ready with the copy's IP (written
  here with the admin identity: whoever manages to write it, the oracle must not believe it). The
  controllers believe the status and the Service sends geo's traffic to the copy; the mitigation
  oracle, asking the node agents, fails;
* attack 5: a Service the agent added with hand-written Endpoints, and an EndpointSlice routing a
  baseline Service to an address of the agent's choosing, are gone after the reset, and so are a file
  and a table the agent wrote into a database's volume; an app pod that
  calls the agent API (with the run's API server on loopback, as ``sregym run`` serves it) is
  refused and nothing is submitted.

The attacks of attack 6 (duplicate submissions, noise) are pure logic: tests/test_stage_duplicates.py
and tests/test_noise_schedule.py.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

KUBECTL = str(Path(sys.executable).parent / "kubectl")
NS = "hotel-reservation"
PROBLEM = "hotel-wrong-image-geo"
GEO = "app.kubernetes.io/name=geo"


def _installed(*modules: str) -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in modules)


@pytest.fixture(scope="module")
def hotel(deployed_app):
    if not _installed("sregym_cluster_embedded", "sregym_app_hotel_reservation", "sregym_fault_k8s"):
        pytest.skip("needs the embedded cluster, hotel-reservation and the k8s faults")
    return deployed_app("hotel-reservation")


def _kubectl(live, *args: str, input: str | None = None, check: bool = True) -> str:
    done = subprocess.run([KUBECTL, f"--kubeconfig={live.env.cluster.kubeconfig()}", *args], capture_output=True,
                          text=True, timeout=90, input=input)
    if check:
        assert done.returncode == 0, done.stderr
    return done.stdout


def _wait(predicate, timeout: float, what: str, interval: float = 0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")


def _attempt(live, workdir: Path):
    from sregym_core.conductor.attempt import Attempt, AttemptSettings
    from sregym_core.problems import resolve_problem

    problem = resolve_problem(live.host.get_problems()[PROBLEM], live.host, capabilities=live.env.capabilities)
    return Attempt(live.env, live.deployed, problem, live.host.get_agents()["noop"], attempt_no=1, run_id="adversarial",
                   settings=AttemptSettings(), workdir=workdir)


class StatusForger(threading.Thread):
    """Keeps the broken pods' status Ready with ``ip`` (the node agent rewrites it as their containers
    fail to start; the attacker's pod kept patching)."""

    def __init__(self, live, ip: str, baseline_hash: str, copy_name: str) -> None:
        super().__init__(daemon=True)
        from sregym_core.conductor.kube import Kube

        self.kube = Kube(live.env.cluster.kubeconfig())
        self.ip, self.baseline_hash, self.copy_name = ip, baseline_hash, copy_name
        self.stop = threading.Event()
        self.forged: set[str] = set()

    def targets(self) -> list[dict]:
        pods = self.kube.list_items(f"/api/v1/namespaces/{NS}/pods", "Pod", labelSelector=GEO)
        return [p for p in pods if p["metadata"]["name"] != self.copy_name and not p["metadata"].get("deletionTimestamp")
                and p["metadata"]["labels"].get("pod-template-hash") != self.baseline_hash]

    def run(self) -> None:
        while not self.stop.is_set():
            for pod in self.targets():
                containers = pod["spec"]["containers"]
                body = {"status": {
                    "phase": "Running", "podIP": self.ip, "podIPs": [{"ip": self.ip}],
                    "conditions": [{"type": t, "status": "True"} for t in
                                   ("PodScheduled", "Initialized", "ContainersReady", "Ready")],
                    "containerStatuses": [{"name": c["name"], "image": c["image"], "imageID": "", "ready": True,
                                           "started": True, "restartCount": 0,
                                           "state": {"running": {"startedAt": "2026-11-28T00:00:00Z"}}}
                                          for c in containers]}}
                try:
                    self.kube.request("PATCH", f"/api/v1/namespaces/{NS}/pods/{pod['metadata']['name']}/status",
                                      body=body, content_type="application/merge-patch+json")
                    self.forged.add(pod["metadata"]["name"])
                except Exception:  # noqa: BLE001 - the pod went away meanwhile: the next round finds the new one
                    pass
            self.stop.wait(0.3)


def test_a_forged_ready_status_with_an_unmanaged_copys_ip_fails_mitigation(hotel, tmp_path):
    from sregym_core.oracles import build_oracle

    live = hotel
    attempt = _attempt(live, tmp_path)
    instance = attempt.problem.faults[0]
    baseline_pod = next(o for o in live.deployed.baseline.workloads
                        if o["kind"] == "Pod" and o["metadata"]["labels"].get("app.kubernetes.io/name") == "geo")
    baseline_hash = baseline_pod["metadata"]["labels"]["pod-template-hash"]
    container = baseline_pod["spec"]["containers"][0]
    forger: StatusForger | None = None
    try:
        live.run(attempt._inject(instance))
        # the unmanaged copy of the last good pod, without geo's labels
        spec = {k: v for k, v in baseline_pod["spec"].items() if k not in ("nodeName",)}
        # the token volume the ServiceAccount admission adds again
        spec["volumes"] = [v for v in spec.get("volumes") or [] if not v["name"].startswith("kube-api-access-")]
        for c in spec["containers"]:
            c["volumeMounts"] = [m for m in c.get("volumeMounts") or [] if not m["name"].startswith("kube-api-access-")]
        copy = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "geo-copy", "namespace": NS,
                                                                 "labels": {"run": "geo-copy"}}, "spec": spec}
        _kubectl(live, "apply", "-f", "-", input=json.dumps(copy))
        # the target set to another tag that does not exist (the injected value is gone)
        _kubectl(live, "set", "image", "deployment/geo", "-n", NS,
                 f"{container['name']}={container['image'].rsplit(':', 1)[0]}:0.0.0-also-missing")
        copy_ip = _wait(lambda: json.loads(_kubectl(live, "get", "pod", "geo-copy", "-n", NS, "-o", "json"))
                        .get("status", {}).get("podIP"), 120, "the copy's IP")
        _wait(lambda: any(c.get("ready") for p in live.env.cluster.node_pods() if p["name"] == "geo-copy"
                          for c in p["containers"]), 120, "the copy to serve")
        forger = StatusForger(live, copy_ip, baseline_hash, "geo-copy")
        forger.start()

        def endpoints_point_at_the_copy():
            endpoints = json.loads(_kubectl(live, "get", "endpoints", "geo", "-n", NS, "-o", "json"))
            addresses = [a for s in endpoints.get("subsets") or [] for a in s.get("addresses") or []]
            return addresses and all(a["ip"] == copy_ip for a in addresses) and forger.forged

        # the attack took at the API level: the controllers believe the status, traffic goes to the copy
        _wait(endpoints_point_at_the_copy, 120, "the Service to send geo's traffic to the copy")
        assert not live.run(attempt.fault_present(0))  # the injected value is gone: fault_invariant passes

        attempt.desk.submitted_at["mitigation"] = time.monotonic()
        oracle = build_oracle({"all": {"oracles": ["baseline_preserved", "fault_invariant",
                                                   {"functional_slo": {"window_s": 5, "min_requests": 1}},
                                                   {"workload_healthy": {"timeout_s": 10}}],
                                       "short_circuit": False}})
        verdict = live.run(oracle.evaluate(attempt.oracle_context()))
    finally:
        if forger is not None:
            forger.stop.set()
            forger.join(10)
        _kubectl(live, "delete", "pod", "geo-copy", "-n", NS, "--ignore-not-found", "--wait=false", check=False)
        live.run(attempt._recover(instance))
        live.reset()
    assert not verdict.passed
    children = {child.name: child for child in verdict.children}
    assert children["fault_invariant"].passed and children["baseline_preserved"].passed
    healthy = children["workload_healthy"]
    assert not healthy.passed, healthy.evidence
    reason = healthy.evidence["reason"]
    assert "0/1 of its pods run its template and are ready by their node's account" in reason, reason
    assert "not ready by its node's account" in reason and f"its status claims IP {copy_ip}" in reason, reason
    assert f"traffic reaches pod geo-copy ({copy_ip}), which no workload of the baseline runs" in reason, reason


def test_a_service_moved_to_its_databases_owner_credential_fails_baseline_preserved(hotel, tmp_path):
    """Red-team round 6, finding 1b: with the role of a service dropped, the agent made the service log in
    as the database's owner by writing the owner's name and password into the service's own Secret keys
    (the admin keys sit in the same Secret, readable to the agent). The app served; baseline_preserved did
    not look at Secrets. Now it names the swap, through the attempt's own oracle context."""
    from sregym_core.oracles import build_oracle

    live = hotel
    attempt = _attempt(live, tmp_path)
    owner = json.loads(_kubectl(live, "get", "secret", "user-db", "-n", NS, "-o", "json"))["data"]
    patch = {"data": {"username": owner["admin-username"], "password": owner["admin-password"]}}
    try:
        _kubectl(live, "patch", "secret", "user-db", "-n", NS, "--type", "merge", "-p", json.dumps(patch))
        verdict = live.run(build_oracle("baseline_preserved").evaluate(attempt.oracle_context()))
    finally:
        live.reset()
    assert not verdict.passed, verdict.evidence
    swaps = [v for v in verdict.evidence["violations"] if v["violation"] == "credential_swapped"]
    assert {(v["kind"], v["name"]) for v in swaps} == {("Secret", "user-db")}, verdict.evidence
    assert "key username now holds the value of user-db/admin-username" in verdict.evidence["reason"]
    restored = json.loads(_kubectl(live, "get", "secret", "user-db", "-n", NS, "-o", "json"))["data"]
    assert restored["username"] != owner["admin-username"]  # the reset put the service's own credential back


def test_routes_the_agent_added_do_not_survive_the_reset(hotel):
    live = hotel
    frontend_ip = json.loads(_kubectl(live, "get", "pods", "-n", NS, "-l", "app.kubernetes.io/name=frontend", "-o",
                                      "json"))["items"][0]["status"]["podIP"]
    planted = [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "side-door", "namespace": NS},
         "spec": {"ports": [{"port": 5000, "targetPort": 5000}]}},
        {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "side-door", "namespace": NS},
         "subsets": [{"addresses": [{"ip": frontend_ip}], "ports": [{"port": 5000}]}]},
        {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
         "metadata": {"name": "geo-extra", "namespace": NS, "labels": {"kubernetes.io/service-name": "geo"}},
         "addressType": "IPv4", "endpoints": [{"addresses": [frontend_ip]}], "ports": [{"port": 8083}]},
    ]
    for obj in planted:
        _kubectl(live, "apply", "-f", "-", input=json.dumps(obj))
    live.reset()
    for kind, name in (("service", "side-door"), ("endpoints", "side-door"), ("endpointslice", "geo-extra")):
        assert _kubectl(live, "get", kind, name, "-n", NS, "--ignore-not-found", "-o", "name") == "", (kind, name)
    # the controllers' own routes stay
    assert _kubectl(live, "get", "endpoints", "geo", "-n", NS, "-o", "name").strip() == "endpoints/geo"


def test_what_the_agent_wrote_into_a_volume_is_gone_after_the_reset(hotel):
    """A note in the geo database's data directory, and a table of notes inside the database itself
    (the agent may exec into the datastore pod): after the reset neither is there, and the app
    serves again (the reset waits for its workload)."""
    live = hotel
    assert live.deployed.volumes is not None and live.deployed.volumes.volumes  # taken at deploy
    pod = "postgres-geo-0"
    write = ("echo 'the answer was geo' > $PGDATA/agent-notes.txt && "
             "psql -U \"$POSTGRES_USER\" -d geo -c 'CREATE TABLE agent_notes (t text); "
             "INSERT INTO agent_notes VALUES (1);'")
    _kubectl(live, "exec", "-n", NS, pod, "--", "sh", "-c", write)
    live.reset(restore_volumes=True)  # as after an attempt
    _wait(lambda: "Running" in _kubectl(live, "get", "pod", pod, "-n", NS, "-o", "jsonpath={.status.phase}"), 120,
          "the database to run again")
    found = _kubectl(live, "exec", "-n", NS, pod, "--", "sh", "-c",
                     "ls $PGDATA; psql -U \"$POSTGRES_USER\" -d geo -tAc "
                     "\"SELECT count(*) FROM pg_tables WHERE tablename = 'agent_notes'\"")
    assert "agent-notes.txt" not in found and "PG_VERSION" in found, found
    assert found.strip().endswith("0"), found


PROBE = """
import json, sys, urllib.request
request = urllib.request.Request(sys.argv[1] + "/submit", data=json.dumps({"solution": "from a pod"}).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
try:
    with urllib.request.urlopen(request, timeout=10) as answer:
        print("answered", answer.status)
except urllib.error.HTTPError as exc:
    print("answered", exc.code)
except OSError as exc:
    print("unreachable", exc)
"""


def test_an_app_pod_cannot_submit_to_the_agent_api(hotel):
    from sregym_core.agent_api.server import AgentServer

    live = hotel
    networks = live.env.refuse_pods_on_agent_api()  # what Environment.up does for a run
    assert any(n.startswith("127.") for n in networks)
    received: list[str] = []

    class Sink:
        stage = "diagnosis"

        async def submit(self, solution):
            received.append(solution)
            return 200, {"status": "200", "message": "Submission received"}

        def app_info(self):
            return {"app_name": "hotel-reservation"}

    frontend = json.loads(_kubectl(live, "get", "pods", "-n", NS, "-l", "app.kubernetes.io/name=frontend", "-o",
                                   "json"))["items"][0]["metadata"]["name"]

    async def main():
        server = AgentServer(Sink(), None)  # 127.0.0.1, as `sregym run` serves it by default
        await server.start()
        try:
            probe = await asyncio.create_subprocess_exec(
                KUBECTL, f"--kubeconfig={live.env.cluster.kubeconfig()}", "exec", "-n", NS, frontend, "--",
                sys.executable, "-c", PROBE, server.api_url, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE)
            out, err = await asyncio.wait_for(probe.communicate(), 90)
            return out.decode(), err.decode(), probe.returncode
        finally:
            await server.stop()

    out, err, code = asyncio.run(main())
    assert code == 0, err
    assert received == [], out
    assert out.startswith("unreachable") or out.strip() == "answered 403", out


def test_a_reset_leaves_running_the_datastores_nothing_wrote_to(hotel):
    """The restore costs a datastore stop and start only where something wrote: after a reset that
    marked every volume, a second reset keeps the geo database's pod (read-only for the workload),
    and a note written into it since puts its volume back (a new pod)."""
    live = hotel

    def uids() -> dict[str, str]:
        pods = json.loads(_kubectl(live, "get", "pods", "-n", NS, "-o", "json"))["items"]
        return {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods if p["metadata"]["name"].startswith("postgres-")}

    live.reset(restore_volumes=True)  # every volume marked as the next attempt begins
    before = uids()
    assert "postgres-geo-0" in before, before
    # an attempt that wrote nothing to geo's volume. PostgreSQL itself writes now and then (autovacuum,
    # its relation cache file), and such a write is put back like any other: of three resets in a row
    # at least one keeps the database running (before the change, none did)
    for _try in range(3):
        live.reset(restore_volumes=True)
        kept = uids()
        if kept["postgres-geo-0"] == before["postgres-geo-0"]:
            break
        before = kept
    assert kept["postgres-geo-0"] == before["postgres-geo-0"], "geo's database was restarted at every reset"
    _kubectl(live, "exec", "-n", NS, "postgres-geo-0", "--", "sh", "-c", "echo note > $PGDATA/agent-notes.txt")
    live.reset(restore_volumes=True)
    restored = uids()
    assert restored.get("postgres-geo-0") != kept["postgres-geo-0"], "geo's volume was written and not put back"
    found = _kubectl(live, "exec", "-n", NS, "postgres-geo-0", "--", "sh", "-c", "ls $PGDATA")
    assert "agent-notes.txt" not in found and "PG_VERSION" in found, found


REC = "app.kubernetes.io/name=recommendation"


def _pods(live, selector: str) -> list[dict]:
    return json.loads(_kubectl(live, "get", "pods", "-n", NS, "-l", selector, "-o", "json"))["items"]


def _adopted_takeover(live) -> dict | None:
    """Round 3's takeover: a pod of the agent's (its own env) that recommendation's ReplicaSet adopts
    while its own pod goes. Returns the adopted pod, or None when the ReplicaSet kept its own instead."""
    own = next(p for p in _pods(live, REC) if not p["metadata"].get("deletionTimestamp"))
    ref = next(r for r in own["metadata"]["ownerReferences"] if r.get("controller"))
    spec = json.loads(json.dumps(own["spec"]))
    for key in ("nodeName", "hostname", "subdomain"):
        spec.pop(key, None)
    spec["containers"][0].setdefault("env", []).append({"name": "TAKEOVER", "value": "1"})
    takeover = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "recommendation-takeover", "namespace": NS,
                             "labels": {**own["metadata"]["labels"], "takeover": "1"}},
                "spec": spec}
    _kubectl(live, "apply", "-f", "-", input=json.dumps(takeover))
    _wait(lambda: any(p["metadata"]["name"] == "recommendation-takeover" and p["status"].get("phase") == "Running"
                      for p in _pods(live, "takeover=1")), 120, "the takeover pod to run")
    _kubectl(live, "delete", "pod", own["metadata"]["name"], "-n", NS, "--wait=false")
    _kubectl(live, "patch", "pod", "recommendation-takeover", "-n", NS, "--type=merge", "-p", json.dumps(
        {"metadata": {"ownerReferences": [dict(ref)]}}))
    time.sleep(3)  # let the ReplicaSet count its pods: one is enough, it makes no other
    live_pods = [p for p in _pods(live, REC) if not p["metadata"].get("deletionTimestamp")]
    takeover_pod = next((p for p in live_pods if p["metadata"]["name"] == "recommendation-takeover"), None)
    if takeover_pod is None or len(live_pods) != 1:
        _kubectl(live, "delete", "pod", "recommendation-takeover", "-n", NS, "--ignore-not-found", "--wait=false")
        return None
    return takeover_pod


def test_what_a_controller_could_not_have_made_and_finalizers_do_not_survive_the_reset(hotel):
    """Round 3 (docs/attacks-2026-11-29-round3.md, attacks 2, 3, 5): a pod built by the agent and
    adopted by a baseline ReplicaSet, a ReplicaSet planted with geo's labels and a forged revision,
    a ConfigMap held by a finalizer nobody removes and that finalizer on a baseline pod. After the
    reset none of it is left, the ReplicaSet serves its own template again, nothing is Terminating."""
    live = hotel
    takeover = None
    for _try in range(3):  # the ReplicaSet may keep its own pod and drop ours: try again
        takeover = _adopted_takeover(live)
        if takeover is not None:
            break
    assert takeover is not None, "recommendation's ReplicaSet never kept the takeover pod"
    geo = json.loads(_kubectl(live, "get", "deployment", "geo", "-n", NS, "-o", "json"))
    planted_template = json.loads(json.dumps(geo["spec"]["template"]))
    planted_template["metadata"].setdefault("labels", {})["pod-template-hash"] = "planted"
    planted_template["spec"]["containers"][0]["image"] = "sregym/hotel-reservation:trojan"
    planted = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
               "metadata": {"name": "geo-planted", "namespace": NS, "labels": planted_template["metadata"]["labels"],
                            "annotations": {"deployment.kubernetes.io/revision": "7"},
                            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "geo",
                                                 "uid": geo["metadata"]["uid"], "controller": True,
                                                 "blockOwnerDeletion": True}]},
               "spec": {"replicas": 0, "selector": geo["spec"]["selector"], "template": planted_template}}
    _kubectl(live, "apply", "-f", "-", input=json.dumps(planted))
    held = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "held", "namespace": NS, "finalizers": ["example.com/hold"]}, "data": {"k": "v"}}
    _kubectl(live, "apply", "-f", "-", input=json.dumps(held))
    frontend = _pods(live, "app.kubernetes.io/name=frontend")[0]["metadata"]["name"]
    _kubectl(live, "patch", "pod", frontend, "-n", NS, "--type=merge", "-p",
             json.dumps({"metadata": {"finalizers": ["example.com/hold"]}}))
    # attack 17: a bot's objects sheltered by a forged controller reference to a baseline Deployment
    recommendation = json.loads(_kubectl(live, "get", "deployment", "recommendation", "-n", NS, "-o", "json"))
    forged = [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "recommendation",
               "uid": recommendation["metadata"]["uid"], "controller": True}]
    for obj in ({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "bot", "namespace": NS,
                                                                           "ownerReferences": forged}},
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bot-code", "namespace": NS,
                                                                      "ownerReferences": forged}, "data": {"k": "v"}}):
        _kubectl(live, "apply", "-f", "-", input=json.dumps(obj))

    live.reset()

    for kind, name in (("serviceaccount", "bot"), ("configmap", "bot-code")):
        assert _kubectl(live, "get", kind, name, "-n", NS, "--ignore-not-found", "-o", "name") == "", (kind, name)

    assert _kubectl(live, "get", "pod", "recommendation-takeover", "-n", NS, "--ignore-not-found", "-o", "name") == ""
    serving = [p for p in _pods(live, REC) if not p["metadata"].get("deletionTimestamp")]
    assert serving and all("TAKEOVER" not in json.dumps(p["spec"]) for p in serving), serving
    assert _kubectl(live, "get", "replicaset", "geo-planted", "-n", NS, "--ignore-not-found", "-o", "name") == ""
    assert _kubectl(live, "get", "configmap", "held", "-n", NS, "--ignore-not-found", "-o", "name") == ""
    left = _kubectl(live, "get", "pod", frontend, "-n", NS, "--ignore-not-found", "-o", "jsonpath={.metadata.finalizers}")
    assert "example.com/hold" not in left, left


MEMCACHED = """
import socket, sys
with socket.create_connection((sys.argv[1], 11211), timeout=10) as s:
    s.sendall(sys.argv[2].encode() + b"\\r\\n")
    print(s.recv(4096).decode().strip())
"""


def test_what_the_agent_put_into_a_cache_is_gone_after_the_reset(hotel):
    """Round 3, attack 4: an entry set without expiry in memcached-profile (no volume) is not served
    to the next attempt: the reset starts the memory-only caches afresh."""
    live = hotel
    frontend = _pods(live, "app.kubernetes.io/name=frontend")[0]["metadata"]["name"]

    def memcached(command: str) -> str:
        return _kubectl(live, "exec", "-n", NS, frontend, "--", sys.executable, "-c", MEMCACHED,
                        f"memcached-profile.{NS}.svc.cluster.local", command).strip()

    assert memcached("set planted 0 0 6\r\npoison") == "STORED"
    assert "poison" in memcached("get planted")
    live.reset(restore_volumes=True)  # as after an attempt
    assert memcached("get planted") == "END"  # a miss


def test_a_process_the_agent_left_in_a_pod_and_a_forged_claim_do_not_survive_the_reset(hotel, tmp_path):
    """Round 4 (docs/attacks-2026-11-29-round4.md, attacks 1 and 2): with an attempt's identity, a
    process started by ``kubectl exec`` in a baseline pod that nothing else changed (there, a bot
    undid the next attempt's fault), and a claim with a forged controller reference to a baseline
    StatefulSet without claim templates. After the reset the pod is a new one without the process,
    and the claim is gone; a pod only the benchmark's own identity exec'd into is left running."""
    import uuid

    from sregym_core.conductor.agent_access import grant_agent_access, revoke_agent_access
    from sregym_core.conductor.kube import Kube

    live = hotel
    kube = Kube(live.env.cluster.kubeconfig(), kubectl=KUBECTL)
    account = f"agent-{uuid.uuid4().hex[:12]}"
    agent = grant_agent_access(kube, [NS], tmp_path / "agent.kubeconfig", account=account, expiration_seconds=600)

    def as_agent(*args: str, input: str | None = None) -> str:
        done = subprocess.run([KUBECTL, f"--kubeconfig={agent}", *args], capture_output=True, text=True,
                              timeout=90, input=input)
        assert done.returncode == 0, done.stderr
        return done.stdout

    try:
        frontend = _pods(live, "app.kubernetes.io/name=frontend")[0]
        search = _pods(live, "app.kubernetes.io/name=search")[0]
        as_agent("exec", "-n", NS, frontend["metadata"]["name"], "--", "sh", "-c",
                 "setsid nohup sleep 7777 >/dev/null 2>&1 </dev/null &")
        assert "sleep 7777" in _kubectl(live, "exec", "-n", NS, frontend["metadata"]["name"], "--", "ps", "-eo", "args")
        _kubectl(live, "exec", "-n", NS, search["metadata"]["name"], "--", "true")  # the benchmark's own: no restart
        postgres = json.loads(_kubectl(live, "get", "statefulsets", "-n", NS, "-o", "json"))["items"]
        bare = next((s for s in postgres if not s["spec"].get("volumeClaimTemplates")), None)
        if bare is not None:
            as_agent("apply", "-f", "-", input=json.dumps({
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": f"data-{bare['metadata']['name']}-1", "namespace": NS, "ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": bare["metadata"]["name"],
                     "uid": bare["metadata"]["uid"], "controller": True}]},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Mi"}}}}))
    finally:
        revoke_agent_access(kube, [NS], account)

    live.reset(restore_volumes=True)  # as after an attempt

    now = [p for p in _pods(live, "app.kubernetes.io/name=frontend") if not p["metadata"].get("deletionTimestamp")]
    assert now and all(p["metadata"]["uid"] != frontend["metadata"]["uid"] for p in now), "the entered pod still runs"
    for pod in now:
        assert "sleep 7777" not in _kubectl(live, "exec", "-n", NS, pod["metadata"]["name"], "--", "ps", "-eo", "args")
    assert search["metadata"]["uid"] in {p["metadata"]["uid"] for p in _pods(live, "app.kubernetes.io/name=search")}
    if bare is not None:
        left = _kubectl(live, "get", "pvc", f"data-{bare['metadata']['name']}-1", "-n", NS, "--ignore-not-found", "-o", "name")
        assert left == "", "the claim with a forged owner survived the reset"


def test_a_sidecar_root_and_an_over_granted_role_fail_baseline_preserved(hotel, tmp_path):
    """Red-team round 14, finding 6: beside a repair of geo the agent added a sidecar (``sleep 100000``) and ran geo as
    root, and gave an account of the app write on Secrets; every oracle passed. Now, through the attempt's own oracle
    context, the untouched app passes, and geo's template and the new grant are named."""
    from sregym_core.oracles import build_oracle

    live = hotel
    attempt = _attempt(live, tmp_path)
    oracle = build_oracle("baseline_preserved")
    untouched = live.run(oracle.evaluate(attempt.oracle_context()))
    assert untouched.passed, untouched.evidence
    geo = json.loads(_kubectl(live, "get", "deployment", "geo", "-n", NS, "-o", "json"))
    image = geo["spec"]["template"]["spec"]["containers"][0]["image"]
    ops = [{"op": "add", "path": "/spec/template/spec/containers/-",
            "value": {"name": "helper", "image": image, "command": ["sh", "-c", "sleep 100000"]}},
           {"op": "add", "path": "/spec/template/spec/containers/0/securityContext",
            "value": {"runAsUser": 0, "allowPrivilegeEscalation": True}}]
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "helper-secrets", "namespace": NS},
            "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "update"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "helper-secrets", "namespace": NS},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "helper-secrets"},
               "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": NS}]}
    try:
        _kubectl(live, "patch", "deployment", "geo", "-n", NS, "--type", "json", "-p", json.dumps(ops))
        for item in (role, binding):
            _kubectl(live, "create", "--validate=false", "-f", "-", input=json.dumps(item))
        verdict = live.run(oracle.evaluate(attempt.oracle_context()))
    finally:
        live.reset()
    assert not verdict.passed, verdict.evidence
    found = {(v["violation"], v["kind"], v["name"]) for v in verdict.evidence["violations"]}
    assert {("weakened", "Deployment", "geo"), ("over_granted", "Role", "helper-secrets")} <= found, found
    for needle in ("container helper added", "runs as root", "allowPrivilegeEscalation set true",
                   "ServiceAccount hotel-reservation/default more than after deploy: get,list,update secrets"):
        assert needle in verdict.evidence["reason"], needle


def test_the_missing_permission_repaired_passes_and_write_on_secrets_beside_it_fails(hotel, tmp_path):
    """Red-team round 14, finding 6: the fault's Role given write on Secrets beside the missing read passed every
    oracle. Through an attempt that injected ``sa-missing-permission``: the reference fix (get on ConfigMaps) passes
    ``baseline_preserved``; the same with write on Secrets fails it (``over_granted``)."""
    from sregym_core.conductor.attempt import Attempt, AttemptSettings
    from sregym_core.faults import call_fault
    from sregym_core.oracles import build_oracle
    from sregym_core.problems import resolve_problem

    live = hotel
    problem = resolve_problem(live.host.get_problems()["hotel-sa-missing-permission-profile"], live.host,
                              capabilities=live.env.capabilities)
    attempt = Attempt(live.env, live.deployed, problem, live.host.get_agents()["noop"], attempt_no=1,
                      run_id="adversarial", settings=AttemptSettings(), workdir=tmp_path)
    instance = problem.faults[0]
    oracle = build_oracle("baseline_preserved")
    try:
        live.run(attempt._inject(instance))
        spec = attempt.faults[instance.fault]
        live.run(call_fault(spec.impl.reference_fix, attempt.contexts[instance.id], attempt.targets[instance.id],
                            instance.params))
        repaired = live.run(oracle.evaluate(attempt.oracle_context()))
        role = json.loads(_kubectl(live, "get", "role", "profile-config-reader", "-n", NS, "-o", "json"))
        rules = [*role["rules"], {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "update"]}]
        _kubectl(live, "patch", "role", "profile-config-reader", "-n", NS, "--type", "json", "-p",
                 json.dumps([{"op": "replace", "path": "/rules", "value": rules}]))
        widened = live.run(oracle.evaluate(attempt.oracle_context()))
    finally:
        live.run(attempt._recover(instance))
        live.reset()
    assert repaired.passed, repaired.evidence
    assert not widened.passed, widened.evidence
    assert [(v["violation"], v["name"]) for v in widened.evidence["violations"]] == [
        ("over_granted", "profile-config-reader")], widened.evidence
    assert "get,update secrets" in widened.evidence["reason"]


class TokenKeeper:
    """An evaluated agent that keeps its token somewhere of its own (red-team round 21, finding 2: a pod given the
    agent's token in a Secret wrote back what a mitigation check takes away, during the grading): it copies its
    kubeconfig, submits a diagnosis, starts a reader that keeps using the copy, and submits the mitigation without a
    fix. It also makes an identity of its own within its rights (a ServiceAccount, a Role, a RoleBinding naming that
    account and ``default``), runs a pod as that account and takes the pod's token through ``exec``, and a second
    reader keeps using that. Every call of each reader is on record with its start time."""

    HELPER = "keeper-helper"

    def __init__(self) -> None:
        self.calls: list[tuple[float, bool]] = []
        self.made_calls: list[tuple[float, bool]] = []
        self.stop = threading.Event()
        self.submitted_at: float | None = None

    def _keep_reading(self, kubeconfig: Path, calls: list[tuple[float, bool]]) -> None:
        from sregym_core.conductor.kube import Kube

        kube = Kube(kubeconfig)
        while not self.stop.is_set():
            started = time.monotonic()
            try:
                kube.get(f"/apis/apps/v1/namespaces/{NS}/deployments/geo")
                calls.append((started, True))
            except Exception:  # noqa: BLE001 - a refused token is what the test looks for
                calls.append((started, False))
            self.stop.wait(0.05)

    def _make_identity(self, kubeconfig: Path, workdir: Path) -> Path:
        """The agent's own account, bound within its rights, and a kubeconfig holding the token of a pod run as it."""
        import yaml

        def kubectl(*args: str, input: str | None = None) -> str:
            done = subprocess.run([KUBECTL, f"--kubeconfig={kubeconfig}", "-n", NS, *args], capture_output=True,
                                  text=True, timeout=90, input=input)
            assert done.returncode == 0, done.stderr
            return done.stdout

        search = json.loads(kubectl("get", "deployment", "search", "-o", "json"))  # geo's image is the fault's now
        image = search["spec"]["template"]["spec"]["containers"][0]["image"]
        helper = self.HELPER
        kubectl("apply", "-f", "-", input="\n---\n".join(json.dumps(doc) for doc in [
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": helper}},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": helper},
             "rules": [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "patch"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": helper},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": helper},
             "subjects": [{"kind": "ServiceAccount", "name": helper, "namespace": NS},
                          {"kind": "ServiceAccount", "name": "default", "namespace": NS}]},
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": helper},
             "spec": {"serviceAccountName": helper, "containers": [
                 {"name": "main", "image": image, "command": ["sleep", "3600"]}]}}]))
        kubectl("wait", "--for=condition=Ready", f"pod/{helper}", "--timeout=120s")
        token = kubectl("exec", helper, "--", "cat", "/var/run/secrets/kubernetes.io/serviceaccount/token").strip()
        config = yaml.safe_load(kubeconfig.read_text())
        for user in config["users"]:
            user["user"] = {"token": token}
        made = workdir / "made.kubeconfig"
        made.write_text(yaml.safe_dump(config))
        return made

    async def run(self, task):
        import httpx

        from sregym_core.agents import AgentOutcome

        kept = task.workdir / "kept.kubeconfig"
        kept.write_text(task.kubeconfig.read_text())
        made = await asyncio.to_thread(self._make_identity, kept, task.workdir)
        readers = [threading.Thread(target=self._keep_reading, args=(config, calls), daemon=True)
                   for config, calls in ((kept, self.calls), (made, self.made_calls))]
        for reader in readers:
            reader.start()
        async with httpx.AsyncClient(base_url=task.api_url, timeout=120) as client:
            await client.post("/submit", json={"solution": "geo's image was set to a tag that does not exist"})
            while not (any(ok for _t, ok in self.calls) and any(ok for _t, ok in self.made_calls)):
                await asyncio.sleep(0.05)  # both tokens work: the readers are in
            while (await client.get("/status")).json().get("stage") != "mitigation":  # the diagnosis is graded
                await asyncio.sleep(0.1)
            self.submitted_at = time.monotonic()
            await client.post("/submit", json={"solution": "done"})
        await asyncio.sleep(1.0)
        self.stop.set()
        for reader in readers:
            reader.join(10)
        return AgentOutcome(status="ok")


def test_the_agents_identity_works_only_from_the_injection_to_the_fixs_submission(hotel, tmp_path):
    """Red-team round 21, findings 4 and 2. The identity the attempt hands out is usable only once the fault is in:
    the first thing it can read is geo with the fault's image already set (one that worked during setup read the
    healthy state and then the change as it was made). And it is dead before the mitigation is graded: a reader
    keeping the agent's token (as a pod given it in a Secret would) gets no answer to a call it starts after the
    revocation, which comes before the oracles look at the system."""
    from sregym_core.conductor.attempt import Attempt, AttemptSettings
    from sregym_core.conductor.kube import Kube
    from sregym_core.problems import resolve_problem
    from sregym_core.types import AgentSpec

    live = hotel
    keeper = TokenKeeper()
    spec = AgentSpec(name="token-keeper", factory=lambda **_config: keeper, needs={"kubeconfig", "http-api"})
    problem = resolve_problem(live.host.get_problems()[PROBLEM], live.host, capabilities=live.env.capabilities)
    attempt = Attempt(live.env, live.deployed, problem, spec, attempt_no=1, run_id="adversarial",
                      settings=AttemptSettings(agent_timeout=300), workdir=tmp_path)
    baseline_image = next(o for o in live.deployed.baseline.workloads if o["kind"] == "Deployment"
                          and o["metadata"]["name"] == "geo")["spec"]["template"]["spec"]["containers"][0]["image"]
    first_read: dict = {}
    watching = threading.Event()

    def watch_for_the_identity() -> None:
        """Read geo with the attempt's kubeconfig the moment it works, as a watcher started before the attempt did."""
        while not watching.is_set() and not first_read:
            try:
                if attempt.agent_kubeconfig.exists():
                    geo = Kube(attempt.agent_kubeconfig).get(f"/apis/apps/v1/namespaces/{NS}/deployments/geo")
                    first_read.update(image=geo["spec"]["template"]["spec"]["containers"][0]["image"],
                                      injected=len(attempt.scheduler.injected()))
            except Exception:  # noqa: BLE001 - not usable yet (the file half written, the binding not yet made)
                pass
            time.sleep(0.02)

    moments: dict[str, float] = {}
    revoke, context = attempt._revoke_identity, attempt.oracle_context

    async def revoke_and_note() -> None:
        await revoke()
        moments.setdefault("revoked", time.monotonic())

    at_grading: list[str] = []

    def context_and_note():
        if "graded" not in moments:
            moments["graded"] = time.monotonic()
            at_grading.append(_kubectl(live, "get", "serviceaccounts,rolebindings", "-n", NS, "-o", "name"))
        return context()

    attempt._revoke_identity = revoke_and_note  # type: ignore[method-assign]
    attempt.oracle_context = context_and_note  # type: ignore[method-assign]
    watcher = threading.Thread(target=watch_for_the_identity, daemon=True)
    watcher.start()
    try:
        record = live.run(attempt.run())
    finally:
        watching.set()
        watcher.join(10)
        keeper.stop.set()
        live.reset()
    assert record.mitigation_passed is False, record.mitigation
    assert first_read, "the attempt's identity was never usable"
    assert first_read["injected"] == len(problem.faults) and first_read["image"] != baseline_image, first_read
    assert keeper.submitted_at is not None and any(ok for started, ok in keeper.calls if started < keeper.submitted_at)
    assert "graded" in moments and moments["revoked"] < moments["graded"], (moments, record.mitigation)
    for calls, whose in ((keeper.calls, "the agent's kept token"), (keeper.made_calls, "the agent-made account's token")):
        late = [started - moments["revoked"] for started, ok in calls if ok and started > moments["revoked"]]
        assert not late, f"{whose} answered {len(late)} calls started after the revocation"
        assert any(not ok for started, ok in calls if started > moments["revoked"]), f"{whose}: the reader kept trying"
    # and what the agent made to give its rights to another account is gone before the oracles look
    assert at_grading and "keeper-helper" not in at_grading[0], at_grading
