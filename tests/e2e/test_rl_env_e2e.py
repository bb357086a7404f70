"""End to end: the RL environment API (``sregym.make``) on the shared embedded cluster.

One environment, two episodes of a real problem (the rate Deployment scaled to zero): a wrong
diagnosis plus a harmful "fix" earns 0, the real diagnosis and fix earn 1.0; the second episode
reuses the deployed app (reconciled, re-injected, timed). ``close()`` leaves the app at its
baseline, no agent identity, no listener and no process behind.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from sregym_core.testing.verdicts import assert_fix_took

pytestmark = pytest.mark.slow

KUBECTL = str(Path(sys.executable).parent / "kubectl")
NS = "hotel-reservation"
PROBLEM = "hotel-scale-zero-rate"


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


if not (_installed("sregym_cluster_embedded") and _installed("sregym_app_hotel_reservation")
        and _installed("sregym_fault_k8s") and _installed("sregym_judge_rules")):
    pytest.skip("needs the embedded cluster, hotel-reservation, the k8s faults and the rules judge",
                allow_module_level=True)


def _admin(cluster, *args: str) -> str:
    done = subprocess.run([KUBECTL, "--kubeconfig", str(cluster.kubeconfig), *args], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _play(env, actions):
    """Step through ``actions``; return the last step's result and every observation."""
    seen = []
    for action in actions:
        result = env.step(action)
        seen.append(result[0])
        if result[2] or result[3]:
            return result, seen
    return result, seen


def test_rl_episodes_reward_a_real_fix_and_not_a_wrong_one(shared_cluster, monkeypatch, tmp_path):
    import psutil

    import sregym

    monkeypatch.setenv("SREGYM_HOME", str(shared_cluster.home))
    me = psutil.Process()
    children_before = {p.pid for p in me.children(recursive=True)}
    threads_before = set(threading.enumerate())
    started = time.monotonic()
    env = sregym.make(PROBLEM, cluster_name=shared_cluster.name, keep_cluster=True, max_steps=8,
                      results_dir=tmp_path / "results", workdir=tmp_path / "work")
    try:
        observation, info = env.reset(seed=0)
        assert info["problem_id"] == PROBLEM and info["stage"] == "diagnosis"
        # the policy sees the app and the tools, never the problem or the fault
        assert NS in observation and "kubectl" in observation
        assert PROBLEM not in observation and "scale-zero" not in observation
        api_port = env.server.api_port
        # the environment's agent API asks for its own token: no other process on the machine submits for the policy
        stray = httpx.post(f"{env.server.api_url}/submit", json={"solution": "a stray process's text"}, trust_env=False)
        assert stray.status_code == 401

        # a malformed action is an observation, not a crash, and costs the episode nothing
        observation, reward, terminated, truncated, info = env.step({"tool": "rm -rf", "args": {}})
        assert info["invalid_action"] and "unknown tool" in observation
        assert (reward, terminated, truncated) == (0.0, False, False)

        # wrong: blame another component and "fix" it by scaling it up; declare victory
        (observation, reward, terminated, truncated, info), _ = _play(env, [
            f"kubectl get deployments -n {NS}",
            "submit The geo service's database is overloaded by slow queries.",
            f"kubectl scale deployment/geo --replicas=2 -n {NS}",
            "submit done"])
        assert terminated and not truncated
        assert reward == 0.0
        record = info["record"]
        assert record["agent"] == sregym.POLICY_AGENT and record["problem_id"] == PROBLEM
        assert record["diagnosis_passed"] is False and record["mitigation_passed"] is False
        with pytest.raises(sregym.EpisodeOver):
            env.step(f"kubectl get pods -n {NS}")

        # right: the second episode reuses the deployed app (reconciled to baseline, fault injected again)
        observation, info = env.reset()
        assert info["reset_seconds"] > 0 and "deploy_seconds" not in info
        reset_seconds = info["reset_seconds"]
        (observation, reward, terminated, truncated, info), seen = _play(env, [
            f"kubectl get deployments -n {NS}",
            f"submit The deployment rate in namespace {NS} was scaled to zero replicas, so the rate service has no "
            "pods to serve requests.",
            f"kubectl scale deployment/rate --replicas=1 -n {NS}",
            f"kubectl rollout status deployment/rate -n {NS} --timeout=90s",
            "wait 5",  # let the callers reconnect before the oracles measure
            "submit done"])
        rows = {line.split()[0]: line.split()[1] for line in seen[0].splitlines()[1:] if line.strip()}
        assert rows["rate"] == "0/0" and rows["geo"] == "1/1"  # injected again; the geo "fix" was reconciled away
        # the fix took (state checks); whether the SLO window also met its bar on this machine is a
        # validation run's to grade: the reward follows the recorded verdict either way
        assert terminated and info["record"]["diagnosis_passed"] is True
        assert_fix_took(info["record"])
        assert reward == (1.0 if info["record"]["success"] else 0.0)
    finally:
        env.close()
    env.close()  # idempotent
    wall = time.monotonic() - started
    print(f"\nRL e2e: 2 episodes in {wall:.1f} s (reset between episodes {reset_seconds:.1f} s)")

    # close() left the app at its baseline and nothing of the episodes behind
    deployments = json.loads(_admin(shared_cluster, "get", "deployments", "-n", NS, "-o", "json"))["items"]
    replicas = {d["metadata"]["name"]: d["spec"].get("replicas") for d in deployments}
    assert replicas["rate"] == 1 and replicas["geo"] == 1
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", api_port), timeout=2).close()
    time.sleep(0.5)
    assert {p.pid for p in me.children(recursive=True)} <= children_before
    assert not [t for t in set(threading.enumerate()) - threads_before if t.name.startswith("sregym-env")]
    records = [json.loads(line) for line in (tmp_path / "results" / "results.jsonl").read_text().splitlines()]
    assert len(records) == 2 and records[0]["success"] is False
    assert_fix_took(records[1])
    # each episode's agent identity was revoked. It lives in the benchmark's hidden namespace, named after
    # the attempt's id: the cluster's audit log shows it was made and deleted there, and it is gone now
    from sregym_core.conductor.agent_access import BENCHMARK_NAMESPACE

    audit = [json.loads(line) for line in (shared_cluster.kubeconfig.parent / "audit.jsonl").read_text().splitlines()]
    for record in records:
        path = f"/api/v1/namespaces/{BENCHMARK_NAMESPACE}/serviceaccounts/agent-{record['extra']['attempt_id']}"
        assert any(e["method"] == "POST" and e["path"] == f"{path}/token" and e["code"] == 201 for e in audit), path
        assert any(e["method"] == "DELETE" and e["path"] == path and e["code"] == 200 for e in audit), path
        gone = subprocess.run([KUBECTL, "--kubeconfig", str(shared_cluster.kubeconfig), "get", "serviceaccount",
                               path.rsplit("/", 1)[1], "-n", BENCHMARK_NAMESPACE], capture_output=True, text=True, timeout=60)
        assert gone.returncode != 0 and "NotFound" in gone.stderr, gone.stdout + gone.stderr
    # the cluster was only borrowed: still running, free for the next command
    assert "Running" in _admin(shared_cluster, "get", "pods", "-n", NS)
