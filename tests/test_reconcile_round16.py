"""Red-team round 16, finding 1 (issue #34, docs/attacks-2026-12-01-round16.md): a pod that asks for a day to stop and
ignores SIGTERM held the reset, then the app's namespace, and every later deploy on the kept cluster failed. Pods the
reset deletes, or finds terminating, over a grace period longer than RESET_GRACE_S go at once. The live test is
tests/adversarial/test_attempt_surface.py."""

from __future__ import annotations

import copy

import pytest

from sregym_core.conductor.reconcile import RESET_GRACE_S, Baseline, cut_long_graces
from sregym_core.errors import DeployError

NS = "hotel"


def pod(name, uid, grace=None, terminating=None):
    meta = {"name": name, "uid": uid, "resourceVersion": "1"}
    if terminating is not None:
        meta.update(deletionTimestamp="2026-12-02T05:13:33Z", deletionGracePeriodSeconds=terminating)
    spec = {"containers": [{"name": "c", "image": "x"}]}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return {"metadata": meta, "spec": spec}


class Api:
    def __init__(self, pods):
        self.pods, self.calls = pods, []

    def list_items(self, path, kind):  # as Kube.list_items: the items carry their kind
        return [dict(copy.deepcopy(p), kind=kind) for p in self.pods] if kind == "Pod" else []

    def request(self, method, path, body=None, **_):
        self.calls.append((method, path.rsplit("/", 1)[-1], body))
        return {}

    def workloads(self, namespaces):
        return []


def test_pods_the_reset_deletes_or_finds_terminating_over_a_long_grace_go_at_once():
    api = Api([pod("atk-bot", "u1", grace=86400), pod("atk-quick", "u2", grace=5)])
    baseline = Baseline(api, (NS,))
    baseline.kinds = (("/api/v1/namespaces/{ns}/pods", "Pod"),)
    baseline.objects, baseline.versions, baseline.pods = {}, {}, {}
    baseline.reconcile()
    deletes = {name: body for method, name, body in api.calls if method == "DELETE" and name != "events"}
    assert deletes["atk-bot"]["gracePeriodSeconds"] == 0  # a day to stop: at once
    assert "gracePeriodSeconds" not in deletes["atk-quick"]  # its own grace, within bounds


def test_cut_long_graces_takes_only_terminating_pods_over_the_bound():
    api = Api([pod("deleted-slowly", "u1", grace=86400, terminating=86400),
               pod("deleted-quickly", "u2", terminating=RESET_GRACE_S), pod("running", "u3", grace=86400)])
    cut = cut_long_graces(api, (NS,))
    assert [(m, n, b["gracePeriodSeconds"]) for m, n, b in api.calls] == [("DELETE", "deleted-slowly", 0)]
    assert len(cut) == 1 and "86400 s" in cut[0]


def test_the_resets_wait_cuts_a_pod_the_put_back_template_replaced_over_a_long_grace():
    """Round 16, finding 1 again: the repaired template with a 599 s grace and a preStop hook that sleeps; once the
    reset put the template back, its old pods terminated over that grace and the reset's wait ran out."""
    import asyncio

    from sregym_core.conductor.reconcile import wait_ready

    class Going(Api):
        def request(self, method, path, body=None, **_):
            super().request(method, path, body)
            if method == "DELETE" and (body or {}).get("gracePeriodSeconds") == 0:
                self.pods = [p for p in self.pods if p["metadata"]["name"] != path.rsplit("/", 1)[-1]]
            return {}

    api = Going([pod("geo-old", "u1", grace=599, terminating=599)])
    asyncio.run(wait_ready(api, (NS,), 120, cut_graces=True))  # returns once the pod is gone (120 s: a hang's bound)
    assert api.pods == []
    # the plain wait (after a deploy) leaves pods to their own grace
    api = Going([pod("geo-old", "u1", grace=599, terminating=599)])
    with pytest.raises(DeployError, match="did not become ready"):
        asyncio.run(wait_ready(api, (NS,), 1))
    assert [p["metadata"]["name"] for p in api.pods] == ["geo-old"]
