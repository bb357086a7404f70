"""What red-team round 15 (issue #34, docs/attacks-2026-12-01-round15.md) left behind a reset, put back: a baseline object
given an owner the agent made (the garbage collector deleted it after the reset deleted that owner), an object made
immutable (no later fault could write it), and the namespace's ``kube-root-ca.crt`` replaced by another CA. The reset's
writes are checked here against a recording API; the live test is tests/adversarial/test_attempt_surface.py."""

from __future__ import annotations

import copy

from sregym_core.conductor.kube import ApiStatusError
from sregym_core.conductor.reconcile import Baseline
from sregym_core.oracles.mitigation import baseline_preserved

NS = "hotel"
CONFIGMAPS = f"/api/v1/namespaces/{NS}/configmaps"
REAL_CA = {"ca.crt": "-----BEGIN CERTIFICATE----- the cluster's"}


def configmap(name, uid, rv="1", **extra):
    return {"metadata": {"name": name, "uid": uid, "resourceVersion": rv}, "data": {"k": name}, **extra}


class Api:
    """The API as the reset sees it: objects per kind; a write to an immutable object is refused (422) as the API server
    refuses it; every write is recorded in order."""

    def __init__(self, listing):
        self.listing, self.calls = listing, []

    def list_items(self, path, kind):
        return [dict(copy.deepcopy(item), kind=kind) for item in self.listing.get(kind, [])]

    def get(self, path, **_):
        name = path.rsplit("/", 1)[1]
        for items in self.listing.values():
            for item in items:
                if item["metadata"]["name"] == name:
                    return copy.deepcopy(item)
        raise ApiStatusError(404, f"{name} not found")

    def request(self, method, path, body=None, **_):
        self.calls.append((method, path, body))
        name = path.rsplit("/", 1)[1]
        live = next((i for items in self.listing.values() for i in items if i["metadata"]["name"] == name), None)
        if method == "PUT" and live is not None and live.get("immutable"):
            raise ApiStatusError(422, "data: Forbidden: field is immutable when `immutable` is set")
        if method == "DELETE" and live is not None:
            for items in self.listing.values():
                if live in items:
                    items.remove(live)
        if method == "POST" and body is not None:
            self.listing.setdefault("ConfigMap", []).append(copy.deepcopy(body))
        return {}

    def workloads(self, namespaces):
        return []

    def writes(self):
        return [(m, p.rsplit("/", 1)[-1] if m != "POST" else (b or {}).get("metadata", {}).get("name"))
                for m, p, b in self.calls if not p.endswith("/events")]


def deployed():
    return {"ConfigMap": [configmap("reservation-config", "cm-res"), configmap("search-config", "cm-search"),
                          {"metadata": {"name": "kube-root-ca.crt", "uid": "ca-1", "resourceVersion": "2"},
                           "data": dict(REAL_CA)}]}


def snapshot(api):
    return Baseline(api, (NS,)).take()


def test_a_baseline_object_given_an_owner_is_put_back_before_that_owner_is_deleted():
    api = Api(deployed())
    baseline = snapshot(api)
    owner = configmap("atk-owner", "cm-atk")
    api.listing["ConfigMap"].insert(0, owner)  # listed first: deleted first unless the owners come off before
    api.listing["ConfigMap"][1]["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "atk-owner", "uid": "cm-atk"}]
    actions = baseline.reconcile()
    writes = api.writes()
    assert ("PUT", "reservation-config") in writes and ("DELETE", "atk-owner") in writes
    assert writes.index(("PUT", "reservation-config")) < writes.index(("DELETE", "atk-owner"))
    put = next(b for m, p, b in api.calls if m == "PUT" and p.endswith("/reservation-config"))
    assert "ownerReferences" not in put["metadata"]
    assert ("DELETE", "reservation-config") not in writes
    assert any("owners the agent added" in a for a in actions)


def test_an_object_made_immutable_is_made_again_as_deployed():
    api = Api(deployed())
    baseline = snapshot(api)
    api.listing["ConfigMap"][1]["immutable"] = True
    baseline.reconcile()
    writes = api.writes()
    assert writes[-3:] == [("PUT", "search-config"), ("DELETE", "search-config"), ("POST", "search-config")]
    made = next(b for m, _p, b in api.calls if m == "POST" and b["metadata"]["name"] == "search-config")
    assert "immutable" not in made and made["data"] == {"k": "search-config"}


def test_the_namespaces_root_ca_replaced_and_made_immutable_is_put_back():
    api = Api(deployed())
    baseline = snapshot(api)
    planted = api.listing["ConfigMap"][2]
    planted["data"], planted["immutable"] = {"ca.crt": "-----BEGIN CERTIFICATE----- the agent's"}, True
    actions = baseline.reconcile()
    assert [w for w in api.writes() if w[1] == "kube-root-ca.crt"] == [("DELETE", "kube-root-ca.crt"),
                                                                        ("POST", "kube-root-ca.crt")]
    made = next(b for m, _p, b in api.calls if m == "POST")
    assert made["data"] == REAL_CA and "immutable" not in made
    assert any("kube-root-ca.crt (the cluster's own)" in a for a in actions)
    # ... one deleted is made again; one as it was is left alone
    api = Api(deployed())
    baseline = snapshot(api)
    api.listing["ConfigMap"].pop(2)
    baseline.reconcile()
    assert ("POST", "kube-root-ca.crt") in api.writes()
    api = Api(deployed())
    snapshot(api).reconcile()
    assert not [w for w in api.writes() if w[1] == "kube-root-ca.crt"]


class _Context:
    def __init__(self, baseline, current):
        self.baseline_workloads, self._current = baseline, current
        self.faults, self.fault_targets = (), ()

    async def list_workloads(self):
        return self._current


def test_baseline_preserved_names_an_added_owner_and_an_object_made_immutable():
    import asyncio

    before = [dict(configmap("reservation-config", "cm-res"), kind="ConfigMap", metadata={
        "name": "reservation-config", "namespace": NS, "uid": "cm-res"})]
    after = copy.deepcopy(before)
    after[0]["metadata"]["ownerReferences"] = [{"kind": "ConfigMap", "name": "atk-owner", "uid": "cm-atk"}]
    after[0]["immutable"] = True
    verdict = asyncio.run(baseline_preserved().evaluate(_Context(before, after)))
    found = {v["violation"] for v in verdict.evidence["violations"]}
    assert not verdict.passed and {"owner_added", "made_immutable"} <= found
    assert asyncio.run(baseline_preserved().evaluate(_Context(before, copy.deepcopy(before)))).passed
