"""Scheduler filters, FailedScheduling wording, preemption, and node lifecycle taints/eviction."""

from __future__ import annotations

import asyncio
import types
from datetime import UTC, datetime, timedelta

import pytest
from _fixtures_ctrl import FakeClient, anyio_backend, settle  # noqa: F401
from sregym_cluster_embedded.controllers import start_controllers
from sregym_cluster_embedded.controllers.scheduling import summarize

pytestmark = pytest.mark.anyio


def node(name, cpu="2", memory="4Gi", taints=None, labels=None, **spec):
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": {"taints": taints or [], **spec},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": stamp}]}}


def pod(name, cpu=None, memory=None, **spec):
    res = {"requests": {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}}
    return {"metadata": {"name": name, "labels": {"app": name}},
            "spec": {"containers": [{"name": "c", "image": "busybox", "resources": res}], **spec}}


async def start(client, settings=None):
    ctrl = start_controllers(client, settings or types.SimpleNamespace(), only=["scheduler", "nodelifecycle"])
    await ctrl.wait_synced()
    return ctrl


def bound(client, name):
    return next(p for p in client.objects("pods") if p["metadata"]["name"] == name)["spec"].get("nodeName")


def test_summary_sorted_like_the_scheduler():
    assert summarize(3, {"Insufficient memory": 2, "node(s) had untolerated taint {k: v}": 1}) == \
        "0/3 nodes are available: 1 node(s) had untolerated taint {k: v}, 2 Insufficient memory."


async def test_spreads_and_respects_resources():
    client = FakeClient()
    for n in ("node-1", "node-2"):
        await client.create("nodes", node(n, cpu="1"))
    ctrl = await start(client)
    try:
        for i in range(4):
            await client.create("pods", pod(f"p{i}", cpu="400m"))
        await settle(lambda: all(p["spec"].get("nodeName") for p in client.objects("pods")))
        placement = [p["spec"]["nodeName"] for p in client.objects("pods")]
        assert placement.count("node-1") == 2 and placement.count("node-2") == 2
        assert client.reasons().count("Scheduled") == 4
        assert any(e["message"] == "Successfully assigned default/p0 to node-1" or
                   e["message"] == "Successfully assigned default/p0 to node-2" for e in client.events)
        await client.create("pods", pod("big", cpu="500m", memory="8Gi"))
        await settle(lambda: "FailedScheduling" in client.reasons())
        ev = next(e for e in client.events if e["reason"] == "FailedScheduling")
        assert ev["message"] == ("0/2 nodes are available: 2 Insufficient cpu, 2 Insufficient memory. preemption: "
                                 "0/2 nodes are available: 2 No preemption victims found for incoming pod.")
        assert ev["component"] == "default-scheduler" and ev["type"] == "Warning"
        big = await client.get("pods", "big")
        cond = [c for c in big["status"]["conditions"] if c["type"] == "PodScheduled"][0]
        assert (cond["status"], cond["reason"]) == ("False", "Unschedulable")
        # freeing room lets it schedule on retry
        await client.patch("pods", "big", {"spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}]}})
        await settle(lambda: bound(client, "big") is not None)
    finally:
        await ctrl.stop()


async def test_taints_selectors_cordon_and_message():
    client = FakeClient()
    await client.create("nodes", node("node-1", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]))
    await client.create("nodes", node("node-2", memory="1Gi"))
    await client.create("nodes", node("node-3", memory="1Gi", labels={"disk": "ssd"}))
    ctrl = await start(client)
    try:
        await client.create("pods", pod("m", memory="2Gi"))
        await settle(lambda: "FailedScheduling" in client.reasons())
        ev = next(e for e in client.events if e["reason"] == "FailedScheduling")
        assert ev["message"] == ("0/3 nodes are available: 1 node(s) had untolerated taint {k: v}, 2 Insufficient memory. "
                                 "preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, "
                                 "2 No preemption victims found for incoming pod.")
        await client.create("pods", pod("sel", nodeSelector={"disk": "ssd"}))
        await settle(lambda: bound(client, "sel") == "node-3")
        tol = pod("tol", tolerations=[{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}],
                  nodeSelector={"kubernetes.io/hostname": "node-1"})
        await client.create("pods", tol)
        await settle(lambda: bound(client, "tol") == "node-1")
        for n in ("node-2", "node-3"):
            await client.patch("nodes", n, {"spec": {"unschedulable": True}})
        await client.create("pods", pod("late"))
        await settle(lambda: any(e["reason"] == "FailedScheduling" and e["involved"] == "late" for e in client.events))
        msg = [e for e in client.events if e["involved"] == "late"][0]["message"]
        assert msg.startswith("0/3 nodes are available: 1 node(s) had untolerated taint {k: v}, 2 node(s) were unschedulable.")
        # the lifecycle controller mirrors cordon as a taint
        await settle(lambda: any(t["key"] == "node.kubernetes.io/unschedulable"
                                 for t in next(n for n in client.objects("nodes") if n["metadata"]["name"] == "node-2")["spec"]["taints"]))
    finally:
        await ctrl.stop()


async def test_anti_affinity_host_ports_and_preemption():
    client = FakeClient()
    await client.create("nodes", node("node-1", cpu="1"))
    await client.create("nodes", node("node-2", cpu="1"))
    ctrl = await start(client)
    try:
        anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"role": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}}
        for i in range(3):
            p = pod(f"db{i}", affinity=anti)
            p["metadata"]["labels"]["role"] = "db"
            await client.create("pods", p)
        await settle(lambda: "FailedScheduling" in client.reasons())
        nodes = {bound(client, f"db{i}") for i in range(3)} - {None}
        assert nodes == {"node-1", "node-2"}
        ev = next(e for e in client.events if e["reason"] == "FailedScheduling")
        assert "2 node(s) didn't match pod anti-affinity rules" in ev["message"]
        hp = lambda n: pod(n, containers=[{"name": "c", "image": "x", "ports": [{"containerPort": 80, "hostPort": 8080, "protocol": "TCP"}]}])  # noqa: E731
        for n in ("h1", "h2", "h3"):
            await client.create("pods", hp(n))
        await settle(lambda: any(e["involved"] == "h3" and e["reason"] == "FailedScheduling" for e in client.events))
        assert "2 node(s) didn't have free ports for the requested pod ports" in [e for e in client.events if e["involved"] == "h3"][-1]["message"]
        # preemption: fill both nodes with low-priority pods, then a high-priority pod evicts one
        await client.create("pods", pod("low1", cpu="900m", nodeSelector={"kubernetes.io/hostname": "node-1"}, priority=0))
        await client.create("pods", pod("low2", cpu="900m", nodeSelector={"kubernetes.io/hostname": "node-2"}, priority=0))
        await settle(lambda: bound(client, "low1") and bound(client, "low2"))
        await client.create("pods", pod("vip", cpu="500m", priority=1000))
        await settle(lambda: "Preempted" in client.reasons())
        await settle(lambda: bound(client, "vip") is not None)
        assert {p["metadata"]["name"] for p in client.objects("pods")} & {"low1", "low2"} != {"low1", "low2"}
    finally:
        await ctrl.stop()


async def test_stale_lease_marks_node_unknown_and_evicts():
    client = FakeClient()
    old = (datetime.now(UTC) - timedelta(seconds=100)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    n = node("node-1")
    n["status"]["conditions"][0]["lastHeartbeatTime"] = old
    await client.create("nodes", n)
    await client.create("leases.coordination.k8s.io", {"metadata": {"name": "node-1"},
                                                       "spec": {"holderIdentity": "node-1", "renewTime": old}},
                        "kube-node-lease")
    p = pod("victim", nodeName="node-1")
    await client.create("pods", p)
    keep = pod("keeper", nodeName="node-1", tolerations=[{"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                                                          "effect": "NoExecute"}])
    await client.create("pods", keep)
    settings = types.SimpleNamespace(node_monitor_grace_period=1, default_toleration_seconds=1, node_monitor_period=0.2)
    ctrl = await start(client, settings)
    try:
        def ready():
            nd = client.objects("nodes")[0]
            return [c for c in nd["status"]["conditions"] if c["type"] == "Ready"][0]
        await settle(lambda: ready()["status"] == "Unknown")
        assert ready()["reason"] == "NodeStatusUnknown" and ready()["message"] == "Kubelet stopped posting node status."
        taints = {(t["key"], t["effect"]) for t in client.objects("nodes")[0]["spec"]["taints"]}
        assert ("node.kubernetes.io/unreachable", "NoExecute") in taints
        await settle(lambda: [p["metadata"]["name"] for p in client.objects("pods")] == ["keeper"])
        assert "TaintManagerEviction" in client.reasons() and "NodeNotReady" in client.reasons()
        # the agent comes back: heartbeat renewed, Ready True, taints go away
        fresh = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        await client.patch("leases.coordination.k8s.io", "node-1", {"spec": {"renewTime": fresh}}, "kube-node-lease")
        await client.patch("nodes", "node-1", {"status": {"conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": fresh}]}}, subresource="status")
        await settle(lambda: not client.objects("nodes")[0]["spec"].get("taints"))
    finally:
        await ctrl.stop()


async def test_manual_no_execute_taint_honours_toleration_seconds():
    client = FakeClient()
    await client.create("nodes", node("node-1"))
    await client.create("pods", pod("plain", nodeName="node-1"))
    await client.create("pods", pod("patient", nodeName="node-1", tolerations=[
        {"key": "maint", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 3}]))
    await client.create("pods", pod("forever", nodeName="node-1", tolerations=[
        {"key": "maint", "operator": "Exists", "effect": "NoExecute"}]))
    ctrl = await start(client, types.SimpleNamespace(node_monitor_period=0.2))
    try:
        loop = asyncio.get_running_loop()
        tainted = loop.time()
        await client.patch("nodes", "node-1", {"spec": {"taints": [{"key": "maint", "value": "x", "effect": "NoExecute"}]}})
        names = lambda: sorted(p["metadata"]["name"] for p in client.objects("pods"))  # noqa: E731
        gone: dict[str, float] = {}  # when each evicted pod was first seen gone

        def only_forever_left() -> bool:
            for name in {"plain", "patient"} - set(names()) - set(gone):
                gone[name] = loop.time()
            return names() == ["forever"]
        await settle(only_forever_left)
        # the pod without a toleration goes at once, the patient one only after its 3 s (counted from when the
        # taint was seen, to the second: a floor of 2 s, which a loaded machine only makes easier to pass)
        assert gone["plain"] < gone["patient"]
        assert gone["patient"] - tainted >= 2.0
    finally:
        await ctrl.stop()


async def test_preemptors_spread_over_nodes_and_spare_higher_priority_pods():
    client = FakeClient()
    client.graceful_pods = True
    for n in ("node-1", "node-2"):
        await client.create("nodes", node(n, cpu="1"))
    ctrl = await start(client)
    try:
        # each node: one pod that outranks the batch workload and one that does not
        for i, n in ((1, "node-1"), (2, "node-2")):
            await client.create("pods", pod(f"infra{i}", cpu="100m", nodeSelector={"kubernetes.io/hostname": n},
                                            priority=100000000))
            await client.create("pods", pod(f"app{i}", cpu="800m", nodeSelector={"kubernetes.io/hostname": n},
                                            priority=0))
        await settle(lambda: all(p["spec"].get("nodeName") for p in client.objects("pods")))
        for i in (1, 2):
            await client.create("pods", pod(f"batch{i}", cpu="900m", priority=1000000))
        await settle(lambda: client.reasons().count("Preempted") == 2)
        # while the victims terminate, a lower-priority pod cannot take the space nominated to the batch
        await client.create("pods", pod("early", cpu="100m", priority=0))
        await settle(lambda: any(e["involved"] == "early" and e["reason"] == "FailedScheduling" for e in client.events))
        assert client.finish_termination() == 2
        await settle(lambda: bound(client, "batch1") and bound(client, "batch2"))
        assert bound(client, "early") is None
        names = {p["metadata"]["name"] for p in client.objects("pods")}
        assert {"infra1", "infra2"} <= names and not {"app1", "app2"} & names
        # one preemptor per node: the second did not pile onto the node nominated for the first
        assert {bound(client, "batch1"), bound(client, "batch2")} == {"node-1", "node-2"}
        # a replacement of a victim finds no room: the freed space went to the preemptors
        await client.create("pods", pod("app1-new", cpu="800m", priority=0))
        await settle(lambda: any(e["involved"] == "app1-new" and e["reason"] == "FailedScheduling" for e in client.events))
        assert bound(client, "app1-new") is None
        assert client.reasons().count("Preempted") == 2
    finally:
        await ctrl.stop()
