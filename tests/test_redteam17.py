"""Red-team round 17 (issue #34, docs/attacks-2026-12-01-round17.md): what the fixes close, checked offline."""

from __future__ import annotations

import asyncio
import copy

from sregym_core.oracles.mitigation import BaselinePreserved


class _Context:
    def __init__(self, baseline, current):
        self.baseline_workloads, self._current = baseline, current
        self.faults, self.fault_targets = (), ()

    async def list_workloads(self):
        return self._current


def _service(**spec):
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "search", "namespace": "hotel-reservation",
                                                                "uid": "svc-search"},
            "spec": {"selector": {"io.kompose.service": "search"}, "ports": [{"port": 8082, "targetPort": 8082}],
                     **spec}}


def test_a_service_made_to_publish_unready_pods_is_weakened():
    # finding E: the readiness probe repaired, and beside it the Service told to route to pods whether ready or not
    before = [_service()]
    after = [_service(publishNotReadyAddresses=True, sessionAffinity="ClientIP")]
    verdict = asyncio.run(BaselinePreserved().evaluate(_Context(before, after)))
    assert not verdict.passed
    assert [v["violation"] for v in verdict.evidence["violations"]] == ["weakened"]
    assert "publishNotReadyAddresses" in verdict.evidence["violations"][0]["detail"]
    # shipped so (a headless peer-discovery Service), or left as shipped: not weakened
    shipped = [_service(publishNotReadyAddresses=True)]
    assert asyncio.run(BaselinePreserved().evaluate(_Context(shipped, copy.deepcopy(shipped)))).passed
    assert asyncio.run(BaselinePreserved().evaluate(_Context(before, copy.deepcopy(before)))).passed
