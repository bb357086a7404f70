"""Which objects claiming a controller the reset leaves to it (the live test is
tests/adversarial/test_attempt_surface.py; this pins the rule itself)."""

from __future__ import annotations

from sregym_core.conductor.reconcile import _orphan_reason

RS = {"kind": "ReplicaSet", "metadata": {"name": "geo-1", "uid": "rs-uid"},
      "spec": {"selector": {"matchLabels": {"app": "geo"}}, "template": {}}}
JOB = {"kind": "Job", "metadata": {"name": "backfill", "uid": "job-uid"},
       "spec": {"selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "job-uid"}}, "template": {}}}
OWNERS = {"rs-uid": RS, "job-uid": JOB}


def pod(owner_kind, uid, labels):
    return {"kind": "Pod", "metadata": {"name": "p", "labels": labels, "ownerReferences": [
        {"kind": owner_kind, "name": "x", "uid": uid, "controller": True}]}}


def test_a_controllers_own_pods_stay():
    assert _orphan_reason(pod("ReplicaSet", "rs-uid", {"app": "geo", "pod-template-hash": "1"}), OWNERS) is None
    assert _orphan_reason(pod("Job", "job-uid", {"batch.kubernetes.io/controller-uid": "job-uid"}), OWNERS) is None


def test_forged_and_dangling_owners_do_not_protect_a_pod():
    assert "does not exist" in _orphan_reason(pod("ReplicaSet", "00000000", {"app": "geo"}), OWNERS)
    assert "does not exist" in _orphan_reason(pod("Deployment", "rs-uid", {"app": "geo"}), OWNERS)  # wrong kind
    assert "selector" in _orphan_reason(pod("ReplicaSet", "rs-uid", {"app": "backdoor"}), OWNERS)


def test_owners_of_kinds_not_reconciled_are_trusted():
    # an operator's custom resource: its uid cannot be checked here, so its objects are left alone
    assert _orphan_reason(pod("PostgresCluster", "cr-uid", {}), OWNERS) is None


# ---- routes into the app (issue #34 attack 5: an Endpoints object outlived its Service's reset)

from sregym_core.conductor.reconcile import _foreign_route  # noqa: E402

SERVICES = {"frontend": True, "legacy-db": False}  # baseline Services: with / without a selector


def endpoints(name, labels=None):
    return {"kind": "Endpoints", "metadata": {"name": name, "labels": labels or {}}}


def endpoint_slice(name, service, manager):
    return {"kind": "EndpointSlice", "metadata": {"name": name, "labels": {
        "kubernetes.io/service-name": service, "endpointslice.kubernetes.io/managed-by": manager}}}


def test_endpoints_of_a_service_outside_the_baseline_go_even_while_that_service_still_exists():
    assert _foreign_route("Endpoints", endpoints("backdoor"), SERVICES) == "its Service is not in the baseline"
    assert _foreign_route("Endpoints", endpoints("frontend"), SERVICES) is None
    assert _foreign_route("Endpoints", endpoints("legacy-db"), SERVICES) is None  # put back to the baseline's


def test_only_the_controllers_slices_of_baseline_services_stay():
    assert _foreign_route("EndpointSlice", endpoint_slice("frontend-x", "frontend",
                                                          "endpointslice-controller.k8s.io"), SERVICES) is None
    assert "not written" in _foreign_route("EndpointSlice", endpoint_slice("frontend-extra", "frontend", "me"), SERVICES)
    assert "no Service" in _foreign_route("EndpointSlice", endpoint_slice("b", "backdoor",
                                                                          "endpointslice-controller.k8s.io"), SERVICES)


class _FakeKube:
    """The API as reconcile sees it: lists per collection, and the writes it is asked to make."""

    def __init__(self, listing):
        self.listing, self.calls = listing, []

    def list_items(self, path, kind):
        return [dict(item, kind=kind) for item in self.listing.get(kind, [])]

    def request(self, method, path, body=None, **_):
        self.calls.append((method, path))


def test_reconcile_deletes_a_foreign_endpoints_whose_service_it_deletes_in_the_same_pass():
    from sregym_core.conductor.reconcile import Baseline

    frontend = {"metadata": {"name": "frontend", "uid": "s1"}, "spec": {"selector": {"app": "frontend"}}}
    kube = _FakeKube({"Service": [frontend, {"metadata": {"name": "backdoor", "uid": "s2"}, "spec": {}}],
                      "Endpoints": [{"metadata": {"name": "frontend", "uid": "e1"}},
                                    {"metadata": {"name": "backdoor", "uid": "e2"},
                                     "subsets": [{"addresses": [{"ip": "127.0.0.1"}]}]}]})
    baseline = Baseline(kube, ("app",))
    baseline.objects = {("Service", "app", "frontend"): dict(frontend, kind="Service"),
                        ("Endpoints", "app", "frontend"): {"kind": "Endpoints", "metadata": {"name": "frontend", "uid": "e1"}}}
    actions = baseline.reconcile()
    assert ("DELETE", "/api/v1/namespaces/app/endpoints/backdoor") in kube.calls
    assert ("DELETE", "/api/v1/namespaces/app/services/backdoor") in kube.calls
    assert not any(method == "POST" for method, _ in kube.calls)  # the controller's Endpoints were left alone
    assert any("Endpoints app/backdoor" in a for a in actions)
