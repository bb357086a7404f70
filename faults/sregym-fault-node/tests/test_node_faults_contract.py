"""Static contract checks of the node faults (the live ones are in test_node_faults_e2e.py)."""

from __future__ import annotations

import sregym_fault_node.plugin
from sregym_fault_node import hooks

from sregym_core.testing.contracts import FaultContract


class TestNodeFaults(FaultContract):
    plugin = sregym_fault_node.plugin
    live_only = {name: "it acts through the cluster's node fault hooks" for name in (
        "disk-full", "network-delay", "network-loss", "node-not-ready")} | {
        "clock-drift": "it acts through the cluster's node fault hooks (the fault shim's clock rule)",
        "conntrack-exhaustion": "it reads the service proxy's conntrack tables through the node fault hooks",
        "kubelet-eviction-threshold": "it reads the node agent's eviction manager through the node fault hooks",
        "kubelet-crash": "it restarts every node agent through the node fault hooks (live: test_kubelet_crash_live.py)",
        "shm-exhaustion": "it waits for the StatefulSet's pod to roll (live: test_node_os_faults_live.py)",
        "shm-too-small": "it waits for the StatefulSet's pod to roll (live: test_node_os_faults_live.py)"}


def test_node_faults_need_the_hooks():
    from sregym_core.errors import PermanentFaultError

    class NoHooks:
        cluster = object()
        state: dict = {}

    try:
        hooks.cluster(NoHooks(), "stop_node")
    except PermanentFaultError as exc:
        assert "node fault hook" in str(exc)
    else:
        raise AssertionError("a cluster without hooks must be refused")


def test_fresh_claim_drops_binding():
    pvc = {"metadata": {"name": "d", "namespace": "n", "uid": "u", "resourceVersion": "9",
                        "annotations": {"pv.kubernetes.io/bind-completed": "yes", "keep": "1"}},
           "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                    "volumeName": "pvc-u", "storageClassName": "standard"},
           "status": {"phase": "Bound"}}
    fresh = hooks._fresh_claim(pvc)
    assert fresh["metadata"] == {"name": "d", "namespace": "n", "annotations": {"keep": "1"}}
    assert "volumeName" not in fresh["spec"] and fresh["spec"]["storageClassName"] == "standard"
    assert "status" not in fresh
