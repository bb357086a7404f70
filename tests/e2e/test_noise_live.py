"""Ambient noise on the real embedded cluster: ``sregym run --noise FILE --seed N`` with a profile of
seconds, the reference and noop agents on a lite problem.

The profile draws all of pod-failure, rollout-restart, flapping-alert and config-reload in its first
round, with pod-kill, warning-events and log-burst later. Asserts that the experiments happen on the seeded schedule (the recorded injects are the plan
``plan_noise`` computes for that seed), are visible through kubectl while they live, never change
the verdicts (reference passes, noop fails), carry no word that gives them away, and leave nothing
behind (no extra pods or events, no pause image, no reload stamp, every deployment ready, every
inject reverted); and that the trajectory carries the same injects and reverts as system steps.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from sregym_core.testing.jsonstream import JsonValues, objects
from sregym_core.testing.verdicts import assert_fix_took

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
SREGYM, KUBECTL = str(BIN / "sregym"), str(BIN / "kubectl")
NS = "hotel-reservation"
PROBLEM = "hotel-wrong-image-geo"
# seed 170 draws the four newer kinds (pod-failure, rollout-restart, flapping-alert, config-reload) in
# the first round, each on its own service away from geo; later rounds mix in the older ones
SEED = 170
PROFILE = {"kinds": ["pod-failure", "rollout-restart", "flapping-alert", "config-reload", "pod-kill", "warning-events",
                     "log-burst"], "concurrent": 4, "duration_s": 10, "cooldown_s": 20, "first_at_s": 0}
OURS = ("cache-warmer-", "report-builder-")  # pods the log-burst / cpu-stress sources create
EXPORTER = "-sync-exporter-"  # the flapping-alert source's pod: <target>-sync-exporter-<suffix>


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


if not all(_installed(m) for m in ("sregym_cluster_embedded", "sregym_app_hotel_reservation", "sregym_agent_baselines",
                                   "sregym_fault_k8s", "sregym_noise_basic")):
    pytest.skip("needs the embedded cluster, hotel-reservation, the baseline agents, k8s faults and noise-basic",
                allow_module_level=True)


@pytest.fixture(scope="module")
def env(shared_cluster):
    deploy = subprocess.run([SREGYM, "deploy", "hotel-reservation", "--cluster", shared_cluster.name, "--workdir",
                             str(shared_cluster.workdir)], env=shared_cluster.environ, capture_output=True, text=True,
                            timeout=600)
    assert deploy.returncode == 0, deploy.stderr[-3000:]
    return shared_cluster


def _kubectl_json(cluster, *args: str) -> dict:
    proc = subprocess.run([KUBECTL, *args, "-o", "json"], env={**cluster.environ, "KUBECONFIG": str(cluster.kubeconfig)},
                          capture_output=True, text=True, timeout=60)
    return json.loads(proc.stdout) if proc.returncode == 0 and proc.stdout.strip() else {"items": []}


class Watcher(threading.Thread):
    """What anyone with kubectl sees in the namespace while the run goes on: ``kubectl get pods``
    and ``kubectl get events`` with ``--watch -o json``, so even an object that lives a second
    (the agents here submit within seconds, and grading reverts the noise) is seen."""

    def __init__(self, cluster) -> None:
        super().__init__(daemon=True)
        self.cluster, self.stop = cluster, threading.Event()
        self.pods: dict[str, dict] = {}
        self.images: dict[str, set[str]] = {}  # every image each pod was seen running
        self.events: dict[str, dict] = {}
        self.restarted: set[str] = set()  # deployments seen with a rollout-restart stamp
        self._procs: list[subprocess.Popen] = []
        self._lock = threading.Lock()
        self.restarts: list[tuple[str, int, str]] = []  # (resource, exit code, stderr) of watches that ended early

    def _seen(self, obj: dict) -> None:
        name = obj["metadata"]["name"]
        if obj.get("kind") == "Event":
            self.events.setdefault(name, obj)
        elif obj.get("kind") == "Deployment":
            if "kubectl.kubernetes.io/restartedAt" in (obj["spec"]["template"]["metadata"].get("annotations") or {}):
                self.restarted.add(name)
        elif obj.get("kind") == "Pod":
            self.pods.setdefault(name, obj)
            self.images.setdefault(name, set()).update(c.get("image", "") for c in obj["spec"].get("containers") or [])

    def _stream(self, resource: str) -> None:
        # A watch can end early (the server closes a watcher that falls behind, or answers 410 when
        # the list's resourceVersion left its history on a busy cluster): start it again, as an
        # informer re-lists, and keep why it ended for the assertion messages.
        while True:
            with self._lock:  # never start a watch after run() has stopped them all
                if self.stop.is_set():
                    return
                proc = subprocess.Popen([KUBECTL, "get", resource, "-n", NS, "--watch", "-o", "json"],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        env={**self.cluster.environ, "KUBECONFIG": str(self.cluster.kubeconfig)})
                self._procs.append(proc)
            # linear in what kubectl prints: past 500 objects the initial list comes as pages of 500, each
            # printed as one value, and re-decoding a growing buffer on every line fell minutes behind
            # the watch on a busy cluster (issue #33)
            stream = JsonValues()
            for line in proc.stdout:
                for item in objects(stream.feed(line)):
                    self._seen(item)
            proc.wait()
            if not self.stop.is_set():
                self.restarts.append((resource, proc.returncode, proc.stderr.read()[-500:]))

    def run(self) -> None:
        streams = [threading.Thread(target=self._stream, args=(r,), daemon=True) for r in ("pods", "events", "deployments")]
        for thread in streams:
            thread.start()
        self.stop.wait()
        with self._lock:
            for proc in self._procs:
                if proc.poll() is None:
                    proc.terminate()
                    proc.wait(timeout=10)
        for thread in streams:
            thread.join(timeout=10)


def _expected_plan(profile_path: Path):
    from sregym_core.conductor.noise import load_profile, plan_noise
    from sregym_core.plugins import new_plugin_host

    host = new_plugin_host()
    return host, plan_noise(load_profile(str(profile_path)), host.get_problems()[PROBLEM],
                            host.get_apps()["hotel-reservation"], host.get_noise_sources(), seed=SEED, horizon_s=600)


def test_seeded_noise_is_visible_reverted_and_changes_no_verdict(env, tmp_path):
    profile_path = tmp_path / "short.json"
    profile_path.write_text(json.dumps(PROFILE))
    host, plan = _expected_plan(profile_path)
    before = {p["metadata"]["name"] for p in _kubectl_json(env, "get", "pods", "-n", NS)["items"]}
    watcher = Watcher(env)
    watcher.start()
    results = tmp_path / "results"
    try:
        proc = subprocess.run([SREGYM, "run", "--problem", PROBLEM, "--agent", "reference", "--agent", "noop",
                               "--cluster", env.name, "--results", str(results), "--noise", str(profile_path),
                               "--seed", str(SEED), "--timeout", "120"],
                              env=env.environ, capture_output=True, text=True, timeout=900)
    finally:
        watcher.stop.set()
        watcher.join(timeout=30)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = {r["agent"]: r for r in map(json.loads, (results / "results.jsonl").read_text().splitlines())}
    assert {p.kind for p in plan if p.at_s == 0} == {"pod-failure", "rollout-restart", "flapping-alert", "config-reload"}

    # verdicts unchanged by the noise
    assert records["reference"]["diagnosis_passed"]
    assert_fix_took(records["reference"])  # state checks; the SLO bar is graded by validation runs
    assert records["noop"]["mitigation_passed"] is False and not records["noop"]["success"]

    app = host.get_apps()["hotel-reservation"]
    from sregym_core.conductor.noise import related_components

    avoid = related_components(app, ["geo"])
    seen_kinds = set()
    for agent, record in records.items():
        events = record["extra"]["noise_events"]
        injects = [e for e in events if e["action"] == "inject"]
        assert injects, agent
        assert not [e for e in events if e["action"] == "error"], events
        # on the seeded schedule: the injects are the plan's first experiments, in order, each at
        # (or just after) its planned unpaused time
        planned = [(p.kind, p.target, p.at_s) for p in plan][:len(injects)]
        assert [(e["kind"], e["target"], e["planned_at_s"]) for e in injects] == planned, agent
        assert all(e["offset_s"] >= e["planned_at_s"] for e in injects)
        # every inject reverted; grading paused the schedule
        for e in injects:
            assert any(r["action"] == "revert" and (r["kind"], r["target"], r["planned_at_s"])
                       == (e["kind"], e["target"], e["planned_at_s"]) for r in events), e
        assert "pause" in [e["action"] for e in events]
        assert all(e["target"] not in avoid for e in injects)
        seen_kinds |= {e["kind"] for e in injects}
        # the trajectory carries the same injects and reverts as system steps (time, kind, target)
        trajectory = json.loads((results / record["trajectory_path"]).read_text())
        ambient = [s["extra"]["ambient_event"] for s in trajectory["steps"] if s["source"] == "system"
                   and "ambient_event" in s.get("extra", {})]
        assert [(e["at"], e["kind"], e["target"], e["action"]) for e in ambient] == \
               [(e["at"], e["kind"], e["target"], e["action"]) for e in events if e["action"] in ("inject", "revert", "error")]
    assert {"pod-failure", "rollout-restart", "flapping-alert", "config-reload"} <= seen_kinds
    injected = [(e["kind"], e["target"]) for r in records.values() for e in r["extra"]["noise_events"] if e["action"] == "inject"]

    # visible through kubectl while they lived
    if "log-burst" in seen_kinds:
        assert any(name.startswith("cache-warmer-") for name in watcher.pods)
    if "warning-events" in seen_kinds:
        assert any(e.get("type") == "Warning" and "probe failed" in e.get("message", "").lower()
                   for e in watcher.events.values())
    if "pod-kill" in seen_kinds:
        killed = {e["target"] for r in records.values() for e in r["extra"]["noise_events"]
                  if e["action"] == "inject" and e["kind"] == "pod-kill"}
        for target in killed:
            assert any(n.startswith(f"{target}-") and n not in before for n in watcher.pods), target  # a replacement
    from sregym_noise_basic.sources import PAUSE_IMAGE, RELOAD_ANNOTATION

    for kind, target in injected:
        target_pods = [n for n in watcher.pods if n.startswith(f"{target}-") and EXPORTER not in n]
        if kind == "pod-failure":  # a pod of the target ran the pause image for a while
            assert any(PAUSE_IMAGE in watcher.images[n] for n in target_pods), (target, watcher.images)
        if kind == "rollout-restart":  # new pods replaced the old ones; the template carried the restart stamp
            assert any(n not in before for n in target_pods), target
            assert target in watcher.restarted, target
        if kind == "flapping-alert":  # an exporter beside the target, annotated for Prometheus to scrape
            exporters = [watcher.pods[n] for n in watcher.pods if n.startswith(f"{target}{EXPORTER}")]
            assert exporters and exporters[0]["metadata"]["annotations"]["prometheus.io/scrape"] == "true"
        if kind == "config-reload":  # a ConfigReloaded event on the Deployment; the ConfigMap's stamp is gone again
            assert any(e.get("reason") == "ConfigReloaded" and e["involvedObject"]["name"] == target
                       for e in watcher.events.values()), \
                (target, sorted((e.get("reason"), e["involvedObject"]["name"]) for e in watcher.events.values()),
                 watcher.restarts)
            config_map = _kubectl_json(env, "get", "configmap", f"{target}-config", "-n", NS)
            assert RELOAD_ANNOTATION not in (config_map["metadata"].get("annotations") or {})
    # nothing gives the experiments away by name, label or message
    visible = json.dumps([[p["metadata"] for p in watcher.pods.values()],
                          [(e["metadata"]["name"], e.get("reason"), e.get("message")) for e in watcher.events.values()]])
    assert "noise" not in visible.lower()

    # nothing left behind
    pods = _kubectl_json(env, "get", "pods", "-n", NS)["items"]
    assert not [p["metadata"]["name"] for p in pods if p["metadata"]["name"].startswith(OURS) or EXPORTER in p["metadata"]["name"]]
    assert not [p["metadata"]["name"] for p in pods
                if any(c.get("image") == PAUSE_IMAGE for c in p["spec"].get("containers") or [])]
    reloads = {n for n, e in watcher.events.items() if e.get("reason") == "ConfigReloaded"}
    assert not reloads & {e["metadata"]["name"] for e in _kubectl_json(env, "get", "events", "-n", NS)["items"]}
    # the warning-events noise's own events: its revert deletes them all with one kubectl call. Only the
    # FailedMount one names them: the embedded kubelet posts the same readiness-timeout message when a
    # probe really times out (under load it does, and those events rightly stay)
    ours = {n for n, e in watcher.events.items() if "failed to sync configmap cache" in e.get("message", "")}
    left = {e["metadata"]["name"] for e in _kubectl_json(env, "get", "events", "-n", NS)["items"]}
    assert not ours & left
    deployments = _kubectl_json(env, "get", "deployments", "-n", NS)["items"]
    assert deployments, "the app's Deployments are gone"
    assert all((d["status"].get("readyReplicas") or 0) == d["spec"]["replicas"] for d in deployments), \
        [(d["metadata"]["name"], d["status"]) for d in deployments]
