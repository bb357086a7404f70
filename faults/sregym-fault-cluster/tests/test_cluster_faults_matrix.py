"""The slow or multi-node cluster faults, live (matrix: run with --matrix).

* webhook timeouts: every pod create waits out the API server's one-minute deadline;
* a stale Corefile breaks every name in the cluster; the recurring actor waits for scheduled runs;
* internalTrafficPolicy Local needs a node without callers, the storage faults a node the volume is
  not on (PV node affinity) or a second node to attach the one disk to (Multi-Attach): on a one-node
  cluster they are skipped.
  Run it on a multi-node cluster: ``sregym cluster up --name multi --nodes 3`` and
  ``SREGYM_E2E_CLUSTER=multi pytest --matrix faults/sregym-fault-cluster/tests/test_cluster_faults_matrix.py``.
"""

from __future__ import annotations

import json

import pytest

import sregym_fault_cluster.plugin
from sregym_core.testing.live import LiveCase as Case
from sregym_core.testing.live import LiveFaultContract, load_request_for
from cluster_probes import init_log, oom_killed_at, terminating
from sregym_core.testing.probes import all_of, event, fails, unschedulable, waiting

pytestmark = pytest.mark.matrix


def certificate_expired(live) -> str | None:
    """A user's HTTPS request through the ingress controller refused: the served certificate expired."""
    from test_ingress_faults_live import _https

    answer = _https(live)
    return f"users: {answer}" if answer == "TLS: certificate has expired" else None

ALL = ("admission-webhook-outage", "admission-webhook-ca-mismatch", "mutating-webhook-memory", "psa-restricted", "dns-nxdomain-service",
       "admission-webhook-timeouts", "dns-stale-zone", "recurring-memory-actor", "internal-traffic-local",
       "pv-node-affinity-conflict", "pvc-rwo-shared", "sa-missing-permission", "cronjob-sidecar-blocks",
       "finalizer-deadlock")
ALL += ("ingress-tls-expired", "ingress-misrouted-path", "ingress-class-mismatch")  # their live cases: test_ingress_faults_live.py
ALL += ("kube-proxy-buggy-image", "pod-ip-exhaustion", "calico-route-reflector-drift")  # their live cases: test_cluster_net_faults_live.py


def _request_for(kind, rng):
    return load_request_for("sregym_app_hotel_reservation.workload.mix")(kind, rng)


SLOW = {"admission-webhook-timeouts": Case("rate", event("FailedCreate", "did not complete within", "rate"),
                                           symptom_timeout=180.0),
        "dns-stale-zone": Case("profile", fails("search")),
        "recurring-memory-actor": Case("geo", oom_killed_at("geo", "12Mi"), symptom_timeout=150.0),
        # the new pods' config-sync init container is refused its ConfigMap read (old pods keep serving)
        "sa-missing-permission": Case("profile", all_of(waiting("profile", "CrashLoopBackOff", "Error"),
                                                        init_log("profile", "config-sync", "Forbidden")),
                                      endpoint="recommend"),
        # later runs skipped, the synced certificate expired: users through the Ingress refused
        "cronjob-sidecar-blocks": Case("frontend", all_of(
            event("JobAlreadyActive", "concurrency policy is Forbid", "cert-sync"), certificate_expired),
            symptom_timeout=150.0),
        # the rotated settings ConfigMap cannot replace the one held by the read-only guardian's finalizer
        "finalizer-deadlock": Case("geo", all_of(waiting("geo", "CreateContainerConfigError"),
                                                 terminating("configmap", "geo-settings")), symptom_timeout=120.0)}
MULTI_NODE = {"internal-traffic-local": Case("geo", fails("search")),
              # search asks reservation for free rooms, which asks its database
              "pv-node-affinity-conflict": Case("postgres-reservation", all_of(
                  unschedulable("postgres-reservation", "had volume node affinity conflict"), fails("search"))),
              "pvc-rwo-shared": Case("frontend", all_of(
                  event("FailedAttachVolume", "Multi-Attach error for volume", "frontend"), waiting("frontend", "ContainerCreating")),
                  endpoint="search")}


class TestClusterFaultsMatrix(LiveFaultContract):
    plugin = sregym_fault_cluster.plugin
    request_for = staticmethod(_request_for)
    cases = SLOW
    not_here = {name: "covered by test_cluster_faults_live.py or TestMultiNode" for name in ALL if name not in SLOW}


class TestMultiNode(LiveFaultContract):
    plugin = sregym_fault_cluster.plugin
    request_for = staticmethod(_request_for)
    cases = MULTI_NODE
    not_here = {name: "covered by test_cluster_faults_live.py or TestClusterFaultsMatrix" for name in ALL
                if name not in MULTI_NODE}

    @pytest.fixture(autouse=True)
    def _two_nodes(self, request, embedded_cluster):
        if "case_name" not in request.fixturenames:
            return
        import subprocess

        out = subprocess.run(["kubectl", "--kubeconfig", str(embedded_cluster.kubeconfig), "get", "nodes", "-o",
                              "json"], capture_output=True, text=True, timeout=60)
        if out.returncode != 0 or len(json.loads(out.stdout)["items"]) < 2:
            pytest.skip("needs a cluster with two nodes or more")
