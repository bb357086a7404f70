"""Controllers with the real node agents in process: a node agent that stops renewing its Lease makes the
node NotReady (Unknown), its pods are tainted out after tolerationSeconds and replaced on the other node."""

from __future__ import annotations

import pytest
from _fixtures_ctrl import anyio_backend, settle  # noqa: F401
from _fixtures_node import node_cluster
from sregym_cluster_embedded.controllers import Timings, start_controllers

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_stopped_node_agent_goes_unknown_and_pods_move():
    async with node_cluster(2) as (client, nodes):
        # the agents renew their Lease every 10 s, so the grace period must stay above that
        timings = Timings(node_monitor_grace_seconds=11, node_monitor_period=0.3, default_toleration_seconds=1)
        ctrl = start_controllers(client, client.settings, timings=timings)
        try:
            await client.create("deployments.apps", {"metadata": {"name": "sleeper"}, "spec": {
                "replicas": 2, "selector": {"matchLabels": {"app": "sleeper"}},
                "template": {"metadata": {"labels": {"app": "sleeper"}}, "spec": {
                    "terminationGracePeriodSeconds": 1,
                    "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
                        "labelSelector": {"matchLabels": {"app": "sleeper"}}, "topologyKey": "kubernetes.io/hostname"}]}},
                    "containers": [{"name": "main", "image": "busybox", "command": ["sleep", "3600"]}]}}}}, "default")

            async def available(n):
                d = await client.get("deployments.apps", "sleeper", "default")
                return (d.get("status") or {}).get("availableReplicas") == n
            await settle(lambda: available(2), timeout=30)
            pods = await client.list("pods", "default")
            assert sorted(p["spec"]["nodeName"] for p in pods) == ["node-1", "node-2"]
            await nodes.stop_node("node-1")

            async def unknown():
                node = await client.get("nodes", "node-1")
                ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"][0]
                return ready["status"] == "Unknown" and ready["reason"] == "NodeStatusUnknown"
            await settle(unknown, timeout=30)
            node = await client.get("nodes", "node-1")
            assert {("node.kubernetes.io/unreachable", "NoExecute"), ("node.kubernetes.io/unreachable", "NoSchedule")} <= \
                {(t["key"], t["effect"]) for t in node["spec"]["taints"]}

            async def evicted():
                pods = await client.list("pods", "default")
                on_one = [p for p in pods if p["spec"].get("nodeName") == "node-1"]
                return on_one and all(p["metadata"].get("deletionTimestamp") for p in on_one)
            await settle(evicted, timeout=30)
            events = [(e["reason"], e.get("source", {}).get("component")) for e in await client.list("events", "default")]
            assert ("TaintManagerEviction", "taint-eviction-controller") in events
            # anti-affinity keeps the replacement Pending: the only other node already has one
            async def pending_replacement():
                pods = [p for p in await client.list("pods", "default") if not p["metadata"].get("deletionTimestamp")]
                return len(pods) == 2 and any(not p["spec"].get("nodeName") for p in pods)
            await settle(pending_replacement, timeout=30)
            await nodes.start_node("node-1")

            async def ready_again():
                node = await client.get("nodes", "node-1")
                ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"][0]
                return ready["status"] == "True" and not any(
                    t["key"] == "node.kubernetes.io/unreachable" for t in node["spec"].get("taints") or [])
            try:
                await settle(ready_again, timeout=30)
            except AssertionError:
                node = await client.get("nodes", "node-1")
                raise AssertionError(f"{node['status']['conditions']} {node['spec']}") from None
            try:
                await settle(lambda: available(2), timeout=30)
            except AssertionError:
                pods = [(p["metadata"]["name"], p["spec"].get("nodeName"), p["metadata"].get("deletionTimestamp"),
                         p["status"]) for p in await client.list("pods", "default")]
                raise AssertionError(str(pods)) from None
        finally:
            await ctrl.stop()
