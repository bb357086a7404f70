"""kubelet-crash live on Hotel Reservation (matrix: run with --matrix; every node goes down for minutes).

The contract: inject (the swapped image GC thresholds in kube-system/kubelet-config, every kubelet
restarted), then what an SRE sees through kubectl: every node NotReady/Unknown with the
``node.kubernetes.io/unreachable`` taint, and users failing (their Services lost every endpoint);
``is_present``; the reference fix (thresholds in order); nodes Ready and users served again.
Best on a cluster with several nodes (``SREGYM_E2E_CLUSTER=<name>`` reuses one).
"""

from __future__ import annotations

import json

import pytest

import sregym_fault_node.plugin
from sregym_core.testing.live import LiveCase as Case
from sregym_core.testing.live import LiveFaultContract, load_request_for
from sregym_core.testing.probes import all_of, fails

pytestmark = pytest.mark.matrix


def every_node_unreachable(live) -> str | None:
    """Every Node's Ready condition Unknown (its kubelet stopped posting status) and tainted unreachable."""
    try:
        nodes = json.loads(live.kubectl("get", "nodes", "-o", "json"))["items"]
    except (ValueError, KeyError):
        return None
    seen = []
    for node in nodes:
        ready = next((c for c in node.get("status", {}).get("conditions") or [] if c.get("type") == "Ready"), {})
        taints = {t.get("key") for t in node.get("spec", {}).get("taints") or []}
        if ready.get("status") != "Unknown" or "node.kubernetes.io/unreachable" not in taints:
            return None
        seen.append(f"{node['metadata']['name']}: {ready.get('message')}")
    return "; ".join(seen) or None


class TestKubeletCrashLive(LiveFaultContract):
    plugin = sregym_fault_node.plugin
    request_for = staticmethod(lambda kind, rng: load_request_for("sregym_app_hotel_reservation.workload.mix")(kind, rng))
    cases = {"kubelet-crash": Case("frontend", all_of(every_node_unreachable, fails("search")),
                                   symptom_timeout=150.0)}
    not_here = {spec.name: "covered by test_node_faults_e2e.py or test_node_os_faults_live.py"
                for spec in sregym_fault_node.plugin.sregym_faults() if spec.name != "kubelet-crash"}
