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

    def workloads(self, namespaces):
        return []


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


# ---- issue #34, round 3: what a controller could not have made, and finalizers that hold

TEMPLATE = {"containers": [{"name": "main", "image": "sregym/hotel:1", "env": [{"name": "A", "value": "1"}]}]}
RS_T = {"kind": "ReplicaSet", "metadata": {"name": "recommendation-5d", "uid": "rs-t", "namespace": "app"},
        "spec": {"selector": {"matchLabels": {"app": "recommendation"}}, "template": {"spec": TEMPLATE}}}


def templated_pod(containers, labels=None):
    return {"kind": "Pod", "metadata": {"name": "p", "labels": labels or {"app": "recommendation"}, "ownerReferences": [
        {"kind": "ReplicaSet", "name": "recommendation-5d", "uid": "rs-t", "controller": True}]},
            "spec": {"containers": containers}}


def test_a_pod_adopted_by_a_replicaset_but_not_made_from_its_template_goes():
    owners = {"rs-t": RS_T}
    assert _orphan_reason(templated_pod(TEMPLATE["containers"]), owners) is None
    takeover = [dict(TEMPLATE["containers"][0], env=[{"name": "A", "value": "1"}, {"name": "TAKEOVER", "value": "1"}])]
    assert "not made by it" in _orphan_reason(templated_pod(takeover), owners)
    other_image = [dict(TEMPLATE["containers"][0], image="sregym/hotel:trojan")]
    assert "not made by it" in _orphan_reason(templated_pod(other_image), owners)


def test_a_replicaset_that_is_not_its_deployments_baseline_template_goes():
    deployment = {"kind": "Deployment", "metadata": {"name": "geo", "uid": "d1", "namespace": "app"},
                  "spec": {"template": {"spec": TEMPLATE}}}
    baseline = {("Deployment", "app", "geo"): deployment}

    def replicaset(containers):
        return {"kind": "ReplicaSet", "metadata": {"name": "geo-x", "namespace": "app", "ownerReferences": [
            {"kind": "Deployment", "name": "geo", "uid": "d1", "controller": True}]},
                "spec": {"template": {"spec": {"containers": containers}}}}

    assert _orphan_reason(replicaset(TEMPLATE["containers"]), {"d1": deployment}, baseline) is None
    planted = replicaset([dict(TEMPLATE["containers"][0], image="sregym/hotel:atk3-trojan")])
    assert "baseline template" in _orphan_reason(planted, {"d1": deployment}, baseline)


class _RecordingKube(_FakeKube):
    def request(self, method, path, body=None, **_):
        self.calls.append((method, path, body))


def test_the_reset_takes_the_agents_finalizers_off_before_deleting_and_off_what_stays():
    from sregym_core.conductor.reconcile import Baseline

    held = {"metadata": {"name": "mine", "uid": "c9", "finalizers": ["example.com/hold"]}, "data": {}}
    pod_held = {"metadata": {"name": "rec-1", "uid": "p1", "labels": {"app": "recommendation"},
                             "finalizers": ["example.com/hold", "batch.kubernetes.io/job-tracking"],
                             "ownerReferences": [{"kind": "ReplicaSet", "name": "recommendation-5d", "uid": "rs-t",
                                                  "controller": True}]},
                "spec": dict(TEMPLATE)}
    kube = _RecordingKube({"ConfigMap": [held], "ReplicaSet": [dict(RS_T, metadata={
        **RS_T["metadata"], "ownerReferences": []})], "Pod": [pod_held]})
    baseline = Baseline(kube, ("app",))
    baseline.objects = {("ReplicaSet", "app", "recommendation-5d"): RS_T}
    baseline.reconcile()
    calls = [(m, p) for m, p, _ in kube.calls]
    patch = calls.index(("PATCH", "/api/v1/namespaces/app/configmaps/mine"))
    assert calls.index(("DELETE", "/api/v1/namespaces/app/configmaps/mine")) > patch  # off first, then deleted
    assert kube.calls[patch][2] == {"metadata": {"finalizers": None}}
    pod_patch = next(b for m, p, b in kube.calls if (m, p) == ("PATCH", "/api/v1/namespaces/app/pods/rec-1"))
    assert pod_patch == {"metadata": {"finalizers": ["batch.kubernetes.io/job-tracking"]}}  # the cluster's stays
    assert ("DELETE", "/api/v1/namespaces/app/pods/rec-1") not in calls  # its controller's pod: it stays


def test_before_the_namespace_goes_every_finalizer_but_the_clusters_own_comes_off():
    from sregym_core.conductor.reconcile import release_finalizers

    claim = {"metadata": {"name": "data", "finalizers": ["kubernetes.io/pvc-protection"]}}
    deployment = {"metadata": {"name": "web", "finalizers": ["example.com/hold", "foregroundDeletion"]}}
    crd = {"metadata": {"name": "datastoreclusters.fleetcast.sregym.dev"},
           "spec": {"group": "fleetcast.sregym.dev", "scope": "Namespaced",
                    "names": {"plural": "datastoreclusters", "kind": "DatastoreCluster"},
                    "versions": [{"name": "v1", "served": True, "storage": True}]}}
    custom = {"metadata": {"name": "store", "finalizers": ["example.com/hold"]}}
    kube = _RecordingKube({"PersistentVolumeClaim": [claim], "Deployment": [deployment],
                           "CustomResourceDefinition": [crd], "DatastoreCluster": [custom]})
    released = release_finalizers(kube, ("app",))
    assert sorted(released) == ["DatastoreCluster app/store", "Deployment app/web"]
    assert sorted(kube.calls, key=str) == sorted([
        ("PATCH", "/apis/apps/v1/namespaces/app/deployments/web", {"metadata": {"finalizers": ["foregroundDeletion"]}}),
        ("PATCH", "/apis/fleetcast.sregym.dev/v1/namespaces/app/datastoreclusters/store", {"metadata": {"finalizers": None}}),
    ], key=str)


def test_an_object_no_controller_of_its_owners_kind_makes_is_not_sheltered_by_it():
    """Round 3, attack 17: a ServiceAccount, a RoleBinding, a ConfigMap and a Deployment (a bot) each
    "controlled by" a baseline Deployment outlived every reset."""
    deployment = {"kind": "Deployment", "metadata": {"name": "recommendation", "uid": "d1"}, "spec": {"template": {}}}

    def owned(kind):
        return {"kind": kind, "metadata": {"name": "bot", "ownerReferences": [
            {"kind": "Deployment", "name": "recommendation", "uid": "d1", "controller": True}]}, "spec": {}}

    for kind in ("ServiceAccount", "RoleBinding", "ConfigMap", "Deployment", "CronJob", "Pod"):
        assert "forged" in _orphan_reason(owned(kind), {"d1": deployment}), kind
    replicaset = owned("ReplicaSet")
    replicaset["spec"] = {"template": {"spec": {}}}
    assert _orphan_reason(replicaset, {"d1": deployment}) is None  # what a Deployment makes


def test_a_claim_owned_by_a_statefulset_is_its_own_only_if_its_templates_name_it():
    # issue #34, round 4: a claim "owned" by a set without claim templates outlived every reset
    def statefulset(templates, replicas=1):
        return {"kind": "StatefulSet", "metadata": {"name": "postgres-geo", "uid": "ss1", "namespace": "app"},
                "spec": {"replicas": replicas, "volumeClaimTemplates": [{"metadata": {"name": t}} for t in templates]}}

    def claim(name):
        return {"kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "app", "ownerReferences": [
            {"kind": "StatefulSet", "name": "postgres-geo", "uid": "ss1", "controller": True}]}}

    with_template = statefulset(["data"])
    assert _orphan_reason(claim("data-postgres-geo-0"), {"ss1": with_template}) is None
    assert "volume claim templates" in _orphan_reason(claim("data-postgres-geo-1"), {"ss1": statefulset([])})
    assert "volume claim templates" in _orphan_reason(claim("stash-postgres-geo-0"), {"ss1": with_template})
    assert "volume claim templates" in _orphan_reason(claim("data-postgres-geo-x"), {"ss1": with_template})
    baseline = {("StatefulSet", "app", "postgres-geo"): with_template}
    assert _orphan_reason(claim("data-postgres-geo-0"), {"ss1": with_template}, baseline) is None
    # a scale-up's claim: no baseline pod has ordinal 1
    assert "1 replica(s) in the baseline" in _orphan_reason(claim("data-postgres-geo-1"), {"ss1": statefulset(["data"], 2)},
                                                            baseline)


# ---- red-team round 12, finding 3: a field added to a custom resource outlived its attempt

CRD = {"metadata": {"name": "datastoreclusters.fleetcast.sregym.io"},
       "spec": {"group": "fleetcast.sregym.io", "scope": "Namespaced",
                "names": {"plural": "datastoreclusters", "kind": "DatastoreCluster"},
                "versions": [{"name": "v1", "served": True, "storage": True}]}}
CLUSTER_SCOPED = {"metadata": {"name": "bgppeers.crd.projectcalico.org"},
                  "spec": {"group": "crd.projectcalico.org", "scope": "Cluster", "names": {"plural": "bgppeers",
                           "kind": "BGPPeer"}, "versions": [{"name": "v1", "served": True, "storage": True}]}}


def test_the_reset_puts_an_apps_custom_resources_back_and_removes_new_ones():
    from sregym_core.conductor.reconcile import Baseline

    deployed = {"metadata": {"name": "orbit-db", "uid": "c1"}, "spec": {"replicas": 3, "securityContext": {"runAsUser": 999}}}
    kube = _FakeKube({"CustomResourceDefinition": [CRD, CLUSTER_SCOPED], "DatastoreCluster": [deployed]})
    baseline = Baseline(kube, ("fleetcast",)).take()
    collection = "/apis/fleetcast.sregym.io/v1/namespaces/fleetcast/datastoreclusters"
    assert (collection.replace("fleetcast/", "{ns}/", 1), "DatastoreCluster") in baseline.kinds
    assert not any(kind == "BGPPeer" for _t, kind in baseline.kinds)  # cluster-scoped: no namespace of the app's
    # the agent's weaker field on the resource, and a second resource of its own
    weakened = {"metadata": {"name": "orbit-db", "uid": "c1", "resourceVersion": "7"},
                "spec": {"replicas": 3, "securityContext": {"runAsUser": 999, "runAsGroup": 0}}}
    kube.listing["DatastoreCluster"] = [weakened, {"metadata": {"name": "extra", "uid": "c2"}, "spec": {}}]
    actions = baseline.reconcile()
    assert ("PUT", f"{collection}/orbit-db") in kube.calls and ("DELETE", f"{collection}/extra") in kube.calls
    assert "restored DatastoreCluster fleetcast/orbit-db" in actions


def test_a_pod_admitted_under_a_limit_range_that_is_gone_is_made_again():
    """Round 13, finding 1: the reset deleted the agent's LimitRange, but a pod its controller had made meanwhile kept
    the CPU limit the LimitRange defaulted (50m) through five later attempts."""
    template = {"containers": [{"name": "app", "image": "img", "resources": {"limits": {"memory": "256Mi"}}}]}
    rs = {"kind": "ReplicaSet", "metadata": {"name": "rec-1", "uid": "rs1"},
          "spec": {"selector": {"matchLabels": {"app": "rec"}}, "template": {"spec": template}}}

    def pod(resources):
        return {"kind": "Pod", "metadata": {"name": "rec-1-x", "namespace": "app", "labels": {"app": "rec"},
                                            "ownerReferences": [{"kind": "ReplicaSet", "name": "rec-1", "uid": "rs1",
                                                                 "controller": True}]},
                "spec": {"containers": [{"name": "app", "image": "img", "resources": resources}]}}

    # the API server's own default (a limit requests itself) and another spelling of the same quantity are the template's
    assert _orphan_reason(pod({"limits": {"memory": "268435456"}, "requests": {"memory": "256Mi"}}), {"rs1": rs}) is None
    defaulted = pod({"limits": {"memory": "256Mi", "cpu": "50m"}, "requests": {"memory": "256Mi", "cpu": "50m"}})
    assert "LimitRange" in _orphan_reason(defaulted, {"rs1": rs})
    # an app deployed with a LimitRange of its own: its pods are defaulted by it every time, so they are its
    baseline = {("LimitRange", "app", "defaults"): {}}
    assert _orphan_reason(defaulted, {"rs1": rs}, baseline) is None


def test_the_reset_clears_the_last_attempts_events():
    """Round 13, finding 6: a forged OOMKilling warning the agent wrote was still listed 45 minutes later."""
    from sregym_core.conductor.reconcile import Baseline

    kube = _RecordingKube({})
    baseline = Baseline(kube, ("app",))
    baseline.reconcile()
    assert ("DELETE", "/api/v1/namespaces/app/events") in [(m, p) for m, p, _ in kube.calls]


def test_the_agent_reads_events_and_writes_none():
    from sregym_core.conductor.agent_access import NAMESPACED_RULES

    verbs = {v for rule in NAMESPACED_RULES if "" in rule["apiGroups"] and "events" in rule["resources"] for v in rule["verbs"]}
    assert verbs == {"get", "list", "watch"}
