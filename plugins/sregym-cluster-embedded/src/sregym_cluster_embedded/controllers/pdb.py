"""Disruption controller: PodDisruptionBudget status (healthy, desired, disruptions allowed)."""

from __future__ import annotations

import math

from .base import Controller, Key
from .util import Obj, is_deleting, is_pod_active, is_pod_ready, match_selector, name_of, set_condition
from .writes import write_status


def _resolve(value, total: int) -> int:
    if isinstance(value, str) and value.endswith("%"):
        try:
            return math.ceil(float(value[:-1]) * total / 100)
        except ValueError:
            return 0
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


class DisruptionController(Controller):
    name = "pdb"
    component = "controllermanager"

    def setup(self) -> None:
        self.pdbs = self.watch("poddisruptionbudgets.policy")
        self.pods = self.watch("pods", lambda _e, pod, _o: self._pod(pod))

    def _pod(self, pod: Obj) -> None:
        ns = pod["metadata"].get("namespace", "")
        for pdb in self.pdbs.list(ns):
            if match_selector(pdb.get("spec", {}).get("selector"), pod["metadata"].get("labels"), empty_matches=True):
                self.enqueue((ns, name_of(pdb)))

    async def reconcile(self, key: Key) -> None:
        pdb = self.pdbs.get(*key)
        if pdb is None or is_deleting(pdb):
            return
        spec = pdb.get("spec", {})
        pods = [p for p in self.pods.list(key[0]) if is_pod_active(p)
                and match_selector(spec.get("selector"), p["metadata"].get("labels"), empty_matches=True)]
        expected = len(pods)
        healthy = sum(1 for p in pods if is_pod_ready(p))
        if spec.get("minAvailable") is not None:
            desired = _resolve(spec["minAvailable"], expected)
        elif spec.get("maxUnavailable") is not None:
            desired = max(0, expected - _resolve(spec["maxUnavailable"], expected))
        else:
            desired = expected
        allowed = max(0, healthy - desired)
        previous = pdb.get("status") or {}
        conds = list(previous.get("conditions") or [])
        if allowed > 0:
            conds = set_condition(conds, "DisruptionAllowed", "True", "SufficientPods", "",
                                  probe_field="lastTransitionTime")
        else:
            conds = set_condition(conds, "DisruptionAllowed", "False", "InsufficientPods", "",
                                  probe_field="lastTransitionTime")
        for cond in conds:
            cond["observedGeneration"] = pdb["metadata"].get("generation", 1)
        status = {"observedGeneration": pdb["metadata"].get("generation", 1), "disruptionsAllowed": allowed,
                  "currentHealthy": healthy, "desiredHealthy": desired, "expectedPods": expected,
                  "conditions": conds}
        if previous.get("disruptedPods"):
            status["disruptedPods"] = previous["disruptedPods"]
        await write_status(self.client, "poddisruptionbudgets.policy", pdb, status, self.pdbs)
