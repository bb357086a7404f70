"""The cluster network faults, live on Hotel Reservation (matrix: run with --matrix).

* kube-proxy-buggy-image: ``kubectl get pods -n kube-system -l k8s-app=kube-proxy`` shows every
  node's pod running the ``-buggy`` build, and searches (frontend → search over gRPC) fail;
* pod-ip-exhaustion: the recreated frontend pods stay ContainerCreating with a
  ``FailedCreatePodSandBox`` event saying no IP addresses are available, and ``kubectl get
  ippools`` shows the shrunk pool.
* calico-route-reflector-drift (two nodes or more, e.g. ``SREGYM_E2E_CLUSTER`` pointing at
  ``sregym cluster up --nodes 3``): ``kubectl get bgppeers`` shows the peer selecting the
  deprecated master label, and searches (frontend → search → geo/rate, across nodes) fail.

Each: inject, symptom through real kubectl, ``is_present``, the reference fix, gone, recovered.
"""

from __future__ import annotations

import json

import pytest

import sregym_fault_cluster.plugin
from sregym_core.testing.live import LiveCase as Case
from sregym_core.testing.live import LiveFaultContract, load_request_for
from sregym_core.testing.probes import all_of, event, fails, waiting

pytestmark = pytest.mark.matrix


def kube_proxy_buggy(live) -> str | None:
    """Every kube-proxy pod (one per node) runs the buggy build, as ``kubectl get pods`` shows it."""
    out = live.kubectl("get", "pods", "-n", "kube-system", "-l", "k8s-app=kube-proxy", "-o", "json")
    try:
        pods = [p for p in json.loads(out)["items"] if not p["metadata"].get("deletionTimestamp")]
    except (ValueError, KeyError):
        return None
    images = {p["spec"]["nodeName"]: p["spec"]["containers"][0]["image"] for p in pods
              if (p.get("status") or {}).get("phase") == "Running"}
    if images and all(image.endswith("-buggy") for image in images.values()):
        return f"kube-proxy pods: {images}"
    return None


def pool_shrunk(live) -> str | None:
    out = live.kubectl("get", "ippools", "-o", "jsonpath={.items[*].spec.cidr}")
    return f"ippools: {out}" if out.strip().endswith(("/26", "/27", "/28")) else None


def peer_drifted(live) -> str | None:
    out = live.kubectl("get", "bgppeers", "-o", "jsonpath={.items[*].spec.peerSelector}")
    return f"bgppeers select: {out}" if "node-role.kubernetes.io/master" in out else None


CASES = {
    "kube-proxy-buggy-image": Case("search", all_of(kube_proxy_buggy, fails("search", tries=6)),
                                   symptom_timeout=120.0),
    "pod-ip-exhaustion": Case("frontend", all_of(
        event("FailedCreatePodSandBox", "no IP addresses available", "frontend"),
        waiting("frontend", "ContainerCreating"), pool_shrunk), symptom_timeout=120.0),
    "calico-route-reflector-drift": Case("frontend", all_of(peer_drifted, fails("search", tries=6)),
                                         symptom_timeout=120.0),
}


class TestClusterNetFaultsLive(LiveFaultContract):
    plugin = sregym_fault_cluster.plugin
    request_for = staticmethod(lambda kind, rng: load_request_for("sregym_app_hotel_reservation.workload.mix")(kind, rng))
    cases = CASES
    not_here = {spec.name: "covered by test_cluster_faults_live.py or test_cluster_faults_matrix.py"
                for spec in sregym_fault_cluster.plugin.sregym_faults() if spec.name not in CASES}
