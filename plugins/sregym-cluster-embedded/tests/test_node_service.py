"""The node agent as a systemd service: the kubelet's start-up validation and the restart loop."""

from __future__ import annotations

import asyncio

import pytest

from sregym_cluster_embedded.node import service
from sregym_cluster_embedded.node.eviction import CLUSTER_CONFIG

from sregym_core.testing.waiting import until


def test_the_cluster_default_configuration_is_valid():
    assert service.validate(dict(CLUSTER_CONFIG)) is None
    assert service.validate({"imageGCHighThresholdPercent": 90, "imageGCLowThresholdPercent": 70}) is None


def test_swapped_image_gc_thresholds_fail_as_the_kubelet_says():
    problem = service.validate({"imageGCHighThresholdPercent": 85, "imageGCLowThresholdPercent": 90})
    assert problem.startswith("failed to validate kubelet configuration, error: invalid configuration: "
                              "imageGCLowThresholdPercent (--image-gc-low-threshold) 90 must be less than "
                              "imageGCHighThresholdPercent (--image-gc-high-threshold) 85")
    # the default high threshold (85) applies when only the low one is set
    assert "must be less than" in service.validate({"imageGCLowThresholdPercent": 85})


@pytest.mark.parametrize("config, words", [
    ({"imageGCHighThresholdPercent": 150}, "imageGCHighThresholdPercent (--image-gc-high-threshold) 150 must be "
                                           "between 0 and 100, inclusive"),
    ({"maxPods": -1}, "maxPods (--max-pods) -1 must not be a negative number"),
    ({"maxPods": "110"}, "cannot unmarshal string into Go struct field KubeletConfiguration.maxPods of type int32"),
])
def test_other_invalid_values(config, words):
    assert words in service.validate(config)


class _Agent:
    name = "node-1"

    def __init__(self, config):
        self.eviction = type("E", (), {"config": config})()
        self.starts = 0
        self.unit = service.KubeletService(self)

    async def start(self):
        self.starts += 1
        self.unit.may_start()


def test_crash_loop_restarts_until_the_configuration_is_fixed(monkeypatch):
    monkeypatch.setattr(service, "RESTART_S", 0.05)

    async def scenario():
        agent = _Agent({"imageGCLowThresholdPercent": 95})
        assert agent.unit.may_start() is False
        assert agent.unit.status()["agent"] == "crashloop" and "must be less than" in agent.unit.status()["crash"]
        # systemd keeps restarting it (and it keeps crashing)
        assert await until(lambda: agent.starts >= 2 and agent.unit.restarts >= 3)
        assert agent.unit.status()["agent"] == "crashloop"
        agent.eviction.config = {}  # someone fixed the file
        assert await until(lambda: agent.unit.status() == {})  # the next restart starts it for good
        assert agent.unit._restart is None
        # systemctl stop ends a loop
        agent.eviction.config = {"imageGCLowThresholdPercent": 95}
        assert agent.unit.may_start() is False
        agent.unit.stop()
        starts = agent.starts
        await asyncio.sleep(0.12)
        assert agent.starts == starts and agent.unit.status() == {}

    asyncio.run(scenario())


def test_node_faults_leave_the_benchmarks_own_pods_in_their_services():
    """The node lifecycle controller never marks the hidden namespaces' pods (workload generator,
    observability) not ready nor evicts them: with every node agent down the conductor still measures."""
    from sregym_cluster_embedded.controllers.nodelifecycle import NodeLifecycleController

    namespaces = {"hotel-workload": {"metadata": {"labels": {"sregym.dev/hidden": "true"}}},
                  "hotel-reservation": {"metadata": {"labels": {"kubernetes.io/metadata.name": "hotel-reservation"}}}}
    controller = object.__new__(NodeLifecycleController)
    controller.namespaces = type("Informer", (), {"get": staticmethod(lambda _ns, name: namespaces.get(name))})()

    def pod(namespace):
        return {"metadata": {"name": "p", "namespace": namespace}}
    assert controller.benchmark_pod(pod("hotel-workload")) and controller.benchmark_pod(pod("sregym-system"))
    assert not controller.benchmark_pod(pod("hotel-reservation")) and not controller.benchmark_pod(pod("kube-system"))
