"""End to end through the kubeconfig provider: a cluster SREGym did not create, reached only through
an admin kubeconfig (the embedded cluster's, standing in for kind or a managed cluster).

The run has only the provider's capabilities (``any``, ``real``): no embedded shortcut is taken
(no Pod Security labelling by the benchmark, no node-agent hooks). The observability stack is
installed from the manifests its plugin ships, each attempt's agent identity is a ServiceAccount
created and revoked through RBAC, the app is reconciled to its baseline between attempts, and a
problem whose fault needs the embedded node agent is skipped with the reason.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


if not all(_installed(m) for m in ("sregym_cluster_embedded", "sregym_app_hotel_reservation", "sregym_agent_baselines",
                                   "sregym_fault_k8s", "sregym_observability")):
    pytest.skip("needs a cluster to stand in (embedded), hotel-reservation, the baseline agents, the k8s faults "
                "and the observability stack", allow_module_level=True)


def test_run_through_the_kubeconfig_provider(embedded_cluster, tmp_path):
    results = tmp_path / "results"
    environ = {**embedded_cluster.environ, "SREGYM_KUBECONFIG": str(embedded_cluster.kubeconfig)}
    started = time.monotonic()
    done = subprocess.run([str(BIN / "sregym"), "run", "--provider", "kubeconfig",
                           "--problem", "hotel-scale-zero-rate", "--problem", "hotel-network-delay-geo",
                           "--agent", "reference", "--agent", "noop", "--agent-timeout", "300",
                           "--results", str(results)], env=environ, capture_output=True, text=True, timeout=900)
    print(f"\nkubeconfig provider run: {time.monotonic() - started:.1f} s")
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    # the node-agent fault is not run on a cluster without the embedded node agent, and says why
    assert ("hotel-network-delay-geo: skipped: fault 'network-delay' needs embedded, node-agent "
            "(cluster 'sregym' provides any, real)") in done.stderr
    records = {r["agent"]: r for r in map(json.loads, (results / "results.jsonl").read_text().splitlines())}
    assert set(records) == {"reference", "noop"}
    assert all(r["problem_id"] == "hotel-scale-zero-rate" for r in records.values())
    assert records["reference"]["success"] is True, json.dumps(records["reference"]["mitigation"])[:3000]
    assert records["noop"]["mitigation_passed"] is False

    kubectl = [str(BIN / "kubectl"), "--kubeconfig", str(embedded_cluster.kubeconfig)]

    def get(*args: str) -> dict:
        out = subprocess.run([*kubectl, "get", *args, "-o", "json"], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    # observability from the shipped manifests, running
    stack = get("pods", "-n", "observability")["items"]
    assert stack and all(p["status"].get("phase") == "Running" for p in stack)
    # every attempt's identity was revoked; the app is back at its baseline
    accounts = [a["metadata"]["name"] for a in get("serviceaccounts", "-n", "hotel-reservation")["items"]]
    assert not [a for a in accounts if a.startswith("agent-")]
    rate = get("deployment", "rate", "-n", "hotel-reservation")
    assert rate["spec"]["replicas"] == 1 and rate["status"].get("readyReplicas") == 1
