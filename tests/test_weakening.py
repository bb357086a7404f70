"""A fix may not leave a workload weaker than it was deployed (red-team round 13, findings 2 and 3): a probe kept but
made useless, a bound raised past any use, a request dropped, on the faulty workload's own fields and on the ones the
fault never touched."""

from __future__ import annotations

import asyncio
import copy

from sregym_core.faultkit.weakening import container_weaker, probe_weaker, resources_weaker
from sregym_core.oracles import baseline_preserved

SHIPPED_PROBE = {"httpGet": {"path": "/health", "port": 8081}, "periodSeconds": 5, "failureThreshold": 3}


def test_a_probe_that_never_acts_or_checks_nothing_is_weaker():
    assert probe_weaker(None, SHIPPED_PROBE) == "removed"
    assert "acts only after" in probe_weaker({**SHIPPED_PROBE, "periodSeconds": 300, "failureThreshold": 100000},
                                             SHIPPED_PROBE)
    assert "checks nothing" in probe_weaker({"exec": {"command": ["true"]}}, SHIPPED_PROBE)
    assert "checks nothing" in probe_weaker({"exec": {"command": ["sh", "-c", "exit 0"]}}, SHIPPED_PROBE)
    # another working check, or a gentler one within reason, is a repair
    assert probe_weaker({"tcpSocket": {"port": 8081}}, SHIPPED_PROBE) is None
    assert probe_weaker({**SHIPPED_PROBE, "periodSeconds": 10, "failureThreshold": 6}, SHIPPED_PROBE) is None
    assert probe_weaker({"exec": {"command": ["pg_isready"]}}, SHIPPED_PROBE) is None
    assert probe_weaker({"exec": {"command": ["true"]}}, None) is None  # the app shipped none


def test_a_bound_past_any_use_or_a_dropped_request_is_weaker():
    shipped = {"requests": {"memory": "64Mi", "cpu": "50m"}, "limits": {"memory": "256Mi"}}
    assert "limit is gone" in resources_weaker({"requests": {"memory": "64Mi", "cpu": "50m"}}, shipped)
    assert "over 16 times" in resources_weaker({"requests": {"memory": "12Mi", "cpu": "50m"}, "limits": {"memory": "64Gi"}},
                                               shipped)
    assert "cpu request is gone" in resources_weaker({"limits": {"memory": "256Mi"}}, shipped)
    assert "under a tenth" in resources_weaker({"requests": {"memory": "64Mi", "cpu": "1m"}, "limits": {"memory": "256Mi"}},
                                               shipped)
    # a limit raised within reason, the fault's lowered request beside it, a larger request: repairs
    assert resources_weaker({"requests": {"memory": "12Mi", "cpu": "50m"}, "limits": {"memory": "512Mi"}}, shipped) is None
    assert resources_weaker({"requests": {"memory": "128Mi", "cpu": "200m"}, "limits": {"memory": "1Gi"}}, shipped) is None


def _deployment(container):
    return {"kind": "Deployment", "metadata": {"name": "geo", "namespace": "hotel", "uid": "d1"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "geo"}},
                     "template": {"metadata": {"labels": {"app": "geo"}}, "spec": {"containers": [container]}}}}


class _Context:
    def __init__(self, baseline, current):
        self.baseline_workloads, self._current, self.fault_instances = baseline, current, ()
        self.faulty_workloads = [{"kind": "Deployment", "namespace": "hotel", "name": "geo", "service": "geo",
                                  "instance": "f0"}]

    async def list_workloads(self):
        return self._current


def test_baseline_preserved_fails_a_faulty_workload_left_weaker_than_deployed():
    shipped = {"name": "geo", "image": "geo:1", "readinessProbe": SHIPPED_PROBE,
               "resources": {"requests": {"memory": "64Mi"}, "limits": {"memory": "256Mi"}}}
    baseline = [_deployment(shipped)]
    # the fault's field repaired (a bigger limit) and an untouched one taken away (the readiness probe): weaker
    repaired = copy.deepcopy(shipped)
    repaired["resources"]["limits"]["memory"] = "512Mi"
    unready = {k: v for k, v in repaired.items() if k != "readinessProbe"}
    verdict = asyncio.run(baseline_preserved().evaluate(_Context(baseline, [_deployment(unready)])))
    assert not verdict.passed and verdict.evidence["violations"][0]["violation"] == "weakened"
    assert "readinessProbe removed" in verdict.evidence["reason"]
    assert asyncio.run(baseline_preserved().evaluate(_Context(baseline, [_deployment(repaired)]))).passed
    assert container_weaker(repaired, shipped) == []
