"""The node-OS faults live on Hotel Reservation (matrix: run with --matrix).

* shm-exhaustion / shm-too-small: PostgreSQL's own error in its log ('could not resize shared memory
  segment ... No space left on device'), the pod crash-looping; they need a root node agent (tmpfs).
* kubelet-eviction-threshold: the datastore's pod Evicted with the kubelet's message and its
  replacement unschedulable on the disk-pressure taint; best on a cluster with several nodes
  (``sregym cluster up --name multi --nodes 3``, ``SREGYM_E2E_CLUSTER=multi``), and slow (one pod
  evicted per ten-second round).
* conntrack-exhaustion: kube-proxy's conntrack sizing cut to 32 entries: the nodes warn
  ``ConntrackFull`` (``nf_conntrack: table full, dropping packet``) once the workload's connections
  fill a table.

clock-drift is proved live where a clock decides something: TrainTicket's login tokens
(``apps/sregym-app-train-ticket/tests/test_train_ticket_live.py``).
"""

from __future__ import annotations

import json
import os

import pytest

import sregym_fault_node.plugin
from sregym_core.testing.live import LiveCase as Case
from sregym_core.testing.live import LiveFaultContract, load_request_for
from sregym_core.testing.probes import all_of, event, log_line, unschedulable

pytestmark = pytest.mark.matrix


SHM_ERROR = "could not resize shared memory segment"


def conntrack_full(live):
    """A node's kernel warning that its conntrack table is full (an event on the Node, any namespace)."""
    out = live.kubectl("get", "events", "-A", "--field-selector", "reason=ConntrackFull", "-o", "json")
    try:
        items = json.loads(out)["items"]
    except (ValueError, KeyError):
        return None
    for item in items:
        if "table full" in (item.get("message") or ""):
            return f"{item['involvedObject']['name']}: {item['message']} (x{item.get('count', 1)})"
    return None


CASES = {
    "shm-exhaustion": Case("postgres-reservation", all_of(log_line("postgres-reservation", SHM_ERROR,
                                                                   "No space left on device")), endpoint="reserve"),
    "shm-too-small": Case("postgres-profile", all_of(log_line("postgres-profile", SHM_ERROR)), endpoint="search"),
    "kubelet-eviction-threshold": Case("postgres-rate", all_of(
        event("Evicted", "The node was low on resource: ephemeral-storage"),
        unschedulable("postgres-rate", "node.kubernetes.io/disk-pressure")), symptom_timeout=240.0),
    "conntrack-exhaustion": Case("frontend", conntrack_full, endpoint="search", symptom_timeout=180.0),
}


class TestNodeOsFaultsLive(LiveFaultContract):
    plugin = sregym_fault_node.plugin
    request_for = staticmethod(lambda kind, rng: load_request_for("sregym_app_hotel_reservation.workload.mix")(kind, rng))
    cases = CASES
    not_here = {name: "covered by test_node_faults_e2e.py" for name in (
        "node-not-ready", "cpu-noisy-neighbor", "disk-full", "network-delay", "network-loss")}
    not_here["kubelet-crash"] = "covered by test_kubelet_crash_live.py"
    not_here["clock-drift"] = "covered by apps/sregym-app-train-ticket/tests/test_train_ticket_live.py (TrainTicket's login tokens, on a cluster of several nodes)"

    @pytest.fixture(autouse=True)
    def _needs_root(self, request):
        if "case_name" in request.fixturenames and os.geteuid() != 0:
            pytest.skip("needs root: the node agent mounts tmpfs volumes and reads no host disk otherwise")
