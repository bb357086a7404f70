"""The kubelet's eviction manager: thresholds from kube-system/kubelet-config and the node's drop-in,
the DiskPressure condition, evicted pods with the kubelet's reason and message, admission refusals."""

from __future__ import annotations

import pytest
import yaml

from _fixtures_node import condition, node_cluster, pod_manifest, wait_for
from sregym_cluster_embedded.controllers.nodelifecycle import NodeLifecycleController
from sregym_cluster_embedded.node import eviction, kubelet


def test_thresholds_and_quantities():
    assert eviction.threshold_value("10%", 1000) == 100
    assert eviction.threshold_value("1Gi", 0) == 2**30
    assert eviction.parse_duration("5m0s", 1) == 300 and eviction.parse_duration("", 7) == 7
    assert eviction.format_ki(4096) == "4Ki"
    with pytest.raises(ValueError):
        eviction.parse_quantity("lots")
    base = {"evictionHard": {"memory.available": "100Mi", "nodefs.available": "10%"}, "maxPods": 110}
    assert eviction.merged(base, {"evictionHard": {"nodefs.available": "90%"}}) == {
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "90%"}, "maxPods": 110}


def test_a_nearly_full_host_disk_puts_no_node_under_pressure(monkeypatch, tmp_path):
    """CI runners and laptops often have less than 15% of their disk free: the cluster's own
    configuration must not evict the app for it, while the kubelet's defaults and a fault's drop-in do."""
    full = {"nodefs.available": (5.0, 100.0), "imagefs.available": (5.0, 100.0), "nodefs.inodesFree": (1.0, 100.0),
            "memory.available": (8 * 2.0**30, 16 * 2.0**30)}
    monkeypatch.setattr(eviction, "measure", lambda path: full)
    manager = eviction.EvictionManager(type("Agent", (), {"state_dir": tmp_path, "name": "node-1"})())
    assert manager.config == eviction.CLUSTER_CONFIG and manager.met() == []
    manager.config = {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration"}
    assert {row["signal"] for row in manager.met()} == {"nodefs.available", "imagefs.available", "nodefs.inodesFree"}
    manager.config = eviction.merged(eviction.CLUSTER_CONFIG, {"evictionHard": {"nodefs.available": "90%"}})
    assert [row["signal"] for row in manager.met()] == ["nodefs.available"]


def test_pressure_conditions_taint_the_node():
    node = {"metadata": {"name": "n"}, "spec": {},
            "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "DiskPressure", "status": "True"},
                                      {"type": "MemoryPressure", "status": "False"}]}}
    wanted = NodeLifecycleController.wanted_taints(object.__new__(NodeLifecycleController), node)
    assert wanted == [{"key": "node.kubernetes.io/disk-pressure", "effect": "NoSchedule"}]


@pytest.mark.anyio
@pytest.mark.slow
async def test_a_node_over_its_threshold_evicts_and_refuses_pods(monkeypatch):
    monkeypatch.setattr(kubelet, "EVICTION_MONITORING_S", 0.5)
    monkeypatch.setattr(eviction, "REFRESH_S", 0.2)
    async with node_cluster(1) as (client, nodes):
        agent = nodes.agents["node-1"]
        await client.create("pods", pod_manifest("victim", [{"name": "app", "image": "busybox",
                                                              "command": ["sleep", "3600"]}]), "default")
        await wait_for(lambda: client.get("pods", "victim", "default"),
                       lambda p: p["status"].get("phase") == "Running")
        base = await client.get("configmaps", "kubelet-config", "kube-system")
        assert yaml.safe_load(base["data"]["kubelet"])["evictionHard"]["nodefs.available"] == "0%"
        drop_in = {"evictionHard": {"nodefs.available": "99.99%"}, "evictionPressureTransitionPeriod": "1s"}
        # every node has its drop-in from the start, empty (read as no setting)
        empty = await client.get("configmaps", "kubelet-config-node-1", "kube-system")
        assert yaml.safe_load(empty["data"]["kubelet"]) is None
        await client.patch("configmaps", "kubelet-config-node-1", {"data": {"kubelet": yaml.safe_dump(drop_in)}},
                           "kube-system")
        pod = await wait_for(lambda: client.get("pods", "victim", "default"),
                             lambda p: p["status"].get("reason") == "Evicted", timeout=30)
        assert pod["status"]["phase"] == "Failed"
        assert pod["status"]["message"].startswith("The node was low on resource: ephemeral-storage. "
                                                   "Threshold quantity: ")
        assert condition(pod, "DisruptionTarget")["reason"] == "TerminationByKubelet"
        node = await wait_for(lambda: client.get("nodes", "node-1"),
                              lambda n: condition(n, "DiskPressure").get("status") == "True", timeout=30)
        assert condition(node, "DiskPressure")["reason"] == "KubeletHasDiskPressure"
        events = [e for e in await client.list("events", None) if e.get("reason") in ("Evicted", "EvictionThresholdMet")]
        assert {e["reason"] for e in events} == {"Evicted", "EvictionThresholdMet"}
        assert agent.eviction.status()["met"][0]["signal"] in ("nodefs.available", "imagefs.available")

        await client.create("pods", pod_manifest("late", [{"name": "app", "image": "busybox",
                                                            "command": ["sleep", "3600"]}]), "default")
        late = await wait_for(lambda: client.get("pods", "late", "default"),
                              lambda p: p["status"].get("phase") == "Failed", timeout=30)
        assert late["status"]["reason"] == "Evicted"
        assert late["status"]["message"] == "The node had condition: [DiskPressure]. "

        # the fix: the drop-in back to a sane threshold; the condition clears after the transition period
        await client.patch("configmaps", "kubelet-config-node-1",
                           {"data": {"kubelet": yaml.safe_dump({"evictionPressureTransitionPeriod": "1s"})}},
                           "kube-system")
        await wait_for(lambda: client.get("nodes", "node-1"),
                       lambda n: condition(n, "DiskPressure").get("status") == "False", timeout=40)
        await client.create("pods", pod_manifest("after", [{"name": "app", "image": "busybox",
                                                             "command": ["sleep", "3600"]}]), "default")
        await wait_for(lambda: client.get("pods", "after", "default"),
                       lambda p: p["status"].get("phase") == "Running", timeout=30)
