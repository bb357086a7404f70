"""What a pod took in as it started stays with it (red-team round 14, issue #34): the reset makes again a controller's
pod that started during the attempt while a Secret, ConfigMap or ServiceAccount it reads had been written, and puts
ServiceAccount ``default`` back. The live test is tests/adversarial/test_attempt_surface.py."""

from __future__ import annotations

import copy

from sregym_core.conductor.reconcile import Baseline, _reads

NS = "hotel"
PODS = f"/api/v1/namespaces/{NS}/pods"
RS = {"metadata": {"name": "user-5d", "uid": "rs-user"},
      "spec": {"selector": {"matchLabels": {"app": "user"}}, "template": {"spec": {"containers": [
          {"name": "user", "image": "hotel:1", "env": [
              {"name": "DB_USER", "valueFrom": {"secretKeyRef": {"name": "user-db", "key": "username"}}}]}]}}}}
GEO_RS = {"metadata": {"name": "geo-7c", "uid": "rs-geo"},
          "spec": {"selector": {"matchLabels": {"app": "geo"}}, "template": {"spec": {"containers": [
              {"name": "geo", "image": "hotel:1", "envFrom": [{"configMapRef": {"name": "geo-config"}}]}],
              "volumes": [{"name": "tls", "projected": {"sources": [{"secret": {"name": "geo-tls"}}]}}]}}}}


def pod(name, uid, rs, restarts=0):
    labels = rs["spec"]["selector"]["matchLabels"]
    return {"metadata": {"name": name, "uid": uid, "labels": dict(labels), "ownerReferences": [
        {"kind": "ReplicaSet", "name": rs["metadata"]["name"], "uid": rs["metadata"]["uid"], "controller": True}]},
            "spec": copy.deepcopy(rs["spec"]["template"]["spec"]),
            "status": {"phase": "Running", "containerStatuses": [
                {"name": c["name"], "restartCount": restarts} for c in rs["spec"]["template"]["spec"]["containers"]]}}


def secret(name, rv, uid=None, **data):
    return {"metadata": {"name": name, "uid": uid or f"uid-{name}", "resourceVersion": rv}, "data": data}


class Kube:
    """The API as the reset sees it: lists per kind, and the writes it is asked to make."""

    def __init__(self, listing):
        self.listing, self.calls = listing, []

    def list_items(self, path, kind):
        return [dict(copy.deepcopy(item), kind=kind) for item in self.listing.get(kind, [])]

    def request(self, method, path, body=None, **_):
        self.calls.append((method, path, body))

    def workloads(self, namespaces):
        return []

    def deleted(self):
        return {path for method, path, _ in self.calls if method == "DELETE" and not path.endswith("/events")}


def deployed():
    return {"ReplicaSet": [RS, GEO_RS], "Secret": [secret("user-db", "10", username="aG90ZWxfdXNlcg=="),
                                                   secret("geo-tls", "11")],
            "ConfigMap": [secret("geo-config", "12")],
            "ServiceAccount": [{"metadata": {"name": "default", "uid": "sa-1", "resourceVersion": "3"}}],
            "Pod": [pod("user-5d-a", "p-user-a", RS), pod("geo-7c-a", "p-geo-a", GEO_RS)]}


def test_a_pod_made_while_its_secret_was_swapped_is_made_again_though_the_secret_is_back():
    """Finding 1: user-db set to the owner's credentials, user's pod deleted (its ReplicaSet made a new one that read
    them), user-db put back: nothing differs from the snapshot but user-db's resourceVersion and the pod."""
    kube = Kube(deployed())
    baseline = Baseline(kube, (NS,)).take()
    # the attempt: the Secret written twice (content back as deployed), user's pod made again; geo's made again too
    kube.listing["Secret"][0]["metadata"]["resourceVersion"] = "40"
    kube.listing["Pod"] = [pod("user-5d-b", "p-user-b", RS), pod("geo-7c-b", "p-geo-b", GEO_RS)]
    actions = baseline.reconcile()
    assert f"{PODS}/user-5d-b" in kube.deleted()
    assert any("user-5d-b" in a and "Secret user-db" in a for a in actions), actions
    # geo's new pod reads nothing that was written: it stays (the reset does not restart the whole app)
    assert f"{PODS}/geo-7c-b" not in kube.deleted()
    # and the Secret's content is as deployed, so it is not written again
    assert not any(method == "PUT" for method, _p, _b in kube.calls)


def test_a_pod_whose_container_started_again_while_a_configmap_it_reads_was_written_is_made_again():
    kube = Kube(deployed())
    baseline = Baseline(kube, (NS,)).take()
    kube.listing["ConfigMap"][0]["metadata"]["resourceVersion"] = "41"  # envFrom geo-config
    kube.listing["Pod"] = [pod("user-5d-a", "p-user-a", RS, restarts=2), pod("geo-7c-a", "p-geo-a", GEO_RS, restarts=1)]
    baseline.reconcile()
    assert kube.deleted() == {f"{PODS}/geo-7c-a"}  # user's restarts read user-db, which nobody wrote


def test_a_secret_deleted_and_made_again_or_read_through_a_projected_volume_counts():
    kube = Kube(deployed())
    baseline = Baseline(kube, (NS,)).take()
    kube.listing["Secret"][1] = secret("geo-tls", "50", uid="uid-geo-tls-2")  # deleted and made again
    kube.listing["Pod"] = [pod("user-5d-a", "p-user-a", RS), pod("geo-7c-b", "p-geo-b", GEO_RS)]
    baseline.reconcile()
    assert kube.deleted() == {f"{PODS}/geo-7c-b"}


def test_pods_that_ran_through_the_attempt_stay_whatever_was_written():
    """Cost: a pod that started before the attempt and was not restarted read the snapshot's values."""
    kube = Kube(deployed())
    baseline = Baseline(kube, (NS,)).take()
    for item in kube.listing["Secret"] + kube.listing["ConfigMap"]:
        item["metadata"]["resourceVersion"] = "99"
    baseline.reconcile()
    assert not any(path.startswith(PODS) for path in kube.deleted())


def test_without_a_snapshot_no_pod_is_taken_for_an_attempts():
    kube = Kube(deployed())
    baseline = Baseline(kube, (NS,))
    baseline.objects = {("ReplicaSet", NS, "user-5d"): dict(RS, kind="ReplicaSet")}
    baseline.reconcile()
    assert not any(path.startswith(PODS) for path in kube.deleted())


def test_what_a_pod_reads_env_envfrom_volumes_projected_and_its_account():
    spec = {"serviceAccountName": "profile", "initContainers": [{"name": "i", "envFrom": [{"secretRef": {"name": "s1"}}]}],
            "containers": [{"name": "c", "env": [{"name": "A", "value": "1"},
                                                  {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "c1", "key": "k"}}},
                                                  {"name": "C", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}],
            "volumes": [{"name": "v1", "secret": {"secretName": "s2"}}, {"name": "v2", "configMap": {"name": "c2"}},
                        {"name": "v3", "emptyDir": {}},
                        {"name": "v4", "projected": {"sources": [{"configMap": {"name": "kube-root-ca.crt"}},
                                                                 {"serviceAccountToken": {"path": "token"}}]}}]}
    assert _reads(spec) == {("Secret", "s1"), ("ConfigMap", "c1"), ("Secret", "s2"), ("ConfigMap", "c2"),
                            ("ConfigMap", "kube-root-ca.crt"), ("ServiceAccount", "profile")}
    assert ("ServiceAccount", "profile") not in _reads(spec, admission=False)
    assert ("ServiceAccount", "default") in _reads({"containers": []})


# ---- finding 8: ServiceAccount default


def test_the_default_serviceaccount_is_put_back_as_deployed_and_never_deleted():
    kube = Kube(deployed())
    baseline = Baseline(kube, (NS,)).take()
    kube.listing["ServiceAccount"] = [{"metadata": {"name": "default", "uid": "sa-1", "resourceVersion": "30"},
                                       "imagePullSecrets": [{"name": "atk14-pull"}],
                                       "automountServiceAccountToken": False}]
    actions = baseline.reconcile()
    assert f"restored ServiceAccount {NS}/default" in actions
    put = next(body for method, path, body in kube.calls
               if method == "PUT" and path == f"/api/v1/namespaces/{NS}/serviceaccounts/default")
    assert "imagePullSecrets" not in put and "automountServiceAccountToken" not in put
    assert put["metadata"]["resourceVersion"] == "30"
    # the pods that ran through it were admitted before the change: they stay
    assert not any(path.startswith(PODS) for path in kube.deleted())


def test_a_pod_made_while_its_serviceaccount_was_changed_is_made_again():
    """automountServiceAccountToken: false on default while a pod was made: the pod has no token, and keeps none."""
    kube = Kube(deployed())
    baseline = Baseline(kube, (NS,)).take()
    kube.listing["ServiceAccount"][0]["metadata"]["resourceVersion"] = "31"
    kube.listing["Pod"] = [pod("user-5d-b", "p-user-b", RS), pod("geo-7c-a", "p-geo-a", GEO_RS, restarts=1)]
    baseline.reconcile()
    # a container started again is not admitted again: geo's pod stays
    assert kube.deleted() == {f"{PODS}/user-5d-b"}


def test_a_default_serviceaccount_missing_from_the_snapshot_is_not_deleted():
    listing = deployed()
    listing["ServiceAccount"] = []
    kube = Kube(listing)
    baseline = Baseline(kube, (NS,)).take()
    kube.listing["ServiceAccount"] = [{"metadata": {"name": "default", "uid": "sa-2", "resourceVersion": "5"}}]
    baseline.reconcile()
    assert f"/api/v1/namespaces/{NS}/serviceaccounts/default" not in kube.deleted()


def test_a_default_serviceaccount_the_agent_deleted_and_the_cluster_made_again_gets_the_deployed_fields():
    listing = deployed()
    listing["ServiceAccount"] = [{"metadata": {"name": "default", "uid": "sa-1", "resourceVersion": "3"},
                                  "imagePullSecrets": [{"name": "registry"}]}]
    kube = Kube(listing)
    baseline = Baseline(kube, (NS,)).take()
    kube.listing["ServiceAccount"] = [{"metadata": {"name": "default", "uid": "sa-2", "resourceVersion": "8"}}]
    baseline.reconcile()
    put = next(body for method, path, body in kube.calls
               if method == "PUT" and path == f"/api/v1/namespaces/{NS}/serviceaccounts/default")
    assert put["imagePullSecrets"] == [{"name": "registry"}]
