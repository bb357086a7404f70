"""LimitRanger, ResourceQuota and service-account admission with the real messages."""

from __future__ import annotations

import copy

import pytest
from sregym_cluster_embedded.apiserver.admission import (
    AdmissionError,
    apply_default_storage_class,
    apply_limit_ranges,
    apply_priority,
    check_quota,
    compute_quota_status,
    missing_service_account,
    mount_service_account_token,
    object_usage,
)


def pod(name: str = "web-1", *containers: dict, phase: str | None = None) -> dict:
    obj = {"kind": "Pod", "metadata": {"name": name, "namespace": "shop"},
           "spec": {"containers": list(containers) or [{"name": "app", "image": "nginx"}]}}
    if phase:
        obj["status"] = {"phase": phase}
    return obj


def ctr(name: str = "app", requests: dict | None = None, limits: dict | None = None) -> dict:
    resources = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": name, "image": "nginx", "resources": resources}


def limit_range(*items: dict, name: str = "limits") -> dict:
    return {"kind": "LimitRange", "metadata": {"name": name}, "spec": {"limits": list(items)}}


def quota(name: str = "q", scopes: list[str] | None = None, **hard: str) -> dict:
    spec: dict = {"hard": {k.replace("_", "."): v for k, v in hard.items()}}
    if scopes:
        spec["scopes"] = scopes
    return {"kind": "ResourceQuota", "metadata": {"name": name, "namespace": "shop"}, "spec": spec}


def forbidden(call) -> str:
    with pytest.raises(AdmissionError) as info:
        call()
    assert info.value.code == 403 and info.value.reason == "Forbidden"
    return info.value.message


# ---------------------------------------------------------------------------- LimitRanger


def test_limit_range_defaults_and_annotation() -> None:
    obj = pod("web-1", ctr(), ctr("side", requests={"cpu": "50m"}))
    lr = limit_range({"type": "Container", "default": {"cpu": "500m", "memory": "256Mi"},
                      "defaultRequest": {"cpu": "100m", "memory": "128Mi"}})
    apply_limit_ranges(obj, [lr])
    app, side = obj["spec"]["containers"]
    assert app["resources"] == {"limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}}
    assert side["resources"]["requests"] == {"cpu": "50m", "memory": "128Mi"}
    assert obj["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app; "
        "memory request for container side; cpu, memory limit for container side"
    )


def test_limit_range_defaults_update_qos_class() -> None:
    obj = pod("web-1", ctr())
    obj["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
    lr = limit_range({"type": "Container", "default": {"cpu": "500m", "memory": "256Mi"}})
    apply_limit_ranges(obj, [lr])
    assert obj["status"]["qosClass"] == "Guaranteed"


def test_limit_range_max_violation_message() -> None:
    obj = pod("web-1", ctr(requests={"cpu": "1"}, limits={"cpu": "2"}))
    lr = limit_range({"type": "Container", "max": {"cpu": "500m"}})
    message = forbidden(lambda: apply_limit_ranges(obj, [lr]))
    assert message == 'pods "web-1" is forbidden: maximum cpu usage per Container is 500m, but limit is 2'


def test_limit_range_min_and_multiple_errors_are_bracketed() -> None:
    obj = pod("web-1", ctr(requests={"cpu": "10m", "memory": "32Mi"}, limits={"cpu": "10m", "memory": "32Mi"}))
    lr = limit_range({"type": "Container", "min": {"cpu": "50m", "memory": "64Mi"}})
    message = forbidden(lambda: apply_limit_ranges(obj, [lr]))
    assert message == (
        'pods "web-1" is forbidden: [minimum cpu usage per Container is 50m, but request is 10m, '
        "minimum memory usage per Container is 64Mi, but request is 32Mi]"
    )


def test_limit_range_missing_limit_or_request() -> None:
    # For Container limits the LimitRange's own defaults (max -> default, min -> defaultRequest)
    # fill the gap, as on a real cluster; Pod-type limits have no defaults, so they reject.
    obj = pod("p", ctr(requests={"memory": "1Gi"}))
    apply_limit_ranges(obj, [limit_range({"type": "Container", "max": {"memory": "2Gi"}})])
    assert obj["spec"]["containers"][0]["resources"]["limits"] == {"memory": "2Gi"}
    lr = limit_range({"type": "Pod", "max": {"memory": "2Gi"}})
    assert forbidden(lambda: apply_limit_ranges(pod("p", ctr(requests={"memory": "1Gi"})), [lr])).endswith(
        "maximum memory usage per Pod is 2Gi.  No limit is specified"
    )
    lr = limit_range({"type": "Pod", "min": {"cpu": "100m"}})
    assert forbidden(lambda: apply_limit_ranges(pod("p", ctr()), [lr])).endswith(
        "minimum cpu usage per Pod is 100m.  No request is specified"
    )


def test_limit_request_ratio() -> None:
    obj = pod("p", ctr(requests={"cpu": "100m"}, limits={"cpu": "400m"}))
    lr = limit_range({"type": "Container", "maxLimitRequestRatio": {"cpu": "2"}})
    assert forbidden(lambda: apply_limit_ranges(obj, [lr])).endswith(
        "cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000"
    )
    ok = pod("p", ctr(requests={"cpu": "100m"}, limits={"cpu": "200m"}))
    apply_limit_ranges(ok, [lr])


def test_limit_range_pod_type_sums_containers() -> None:
    obj = pod("p", ctr("a", limits={"memory": "600Mi"}, requests={"memory": "600Mi"}),
              ctr("b", limits={"memory": "600Mi"}, requests={"memory": "600Mi"}))
    lr = limit_range({"type": "Pod", "max": {"memory": "1Gi"}})
    assert forbidden(lambda: apply_limit_ranges(obj, [lr])).endswith(
        "maximum memory usage per Pod is 1Gi, but limit is 1200Mi"
    )


def test_limit_range_within_bounds_passes_and_pvc_storage() -> None:
    obj = pod("p", ctr(requests={"cpu": "200m"}, limits={"cpu": "200m"}))
    apply_limit_ranges(obj, [limit_range({"type": "Container", "min": {"cpu": "100m"}, "max": {"cpu": "1"}})])
    claim = {"kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
             "spec": {"resources": {"requests": {"storage": "500Mi"}}}}
    lr = limit_range({"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}})
    assert forbidden(lambda: apply_limit_ranges(claim, [lr])) == (
        'persistentvolumeclaims "data" is forbidden: minimum storage usage per PersistentVolumeClaim is 1Gi, '
        "but request is 500Mi"
    )
    big = {"kind": "PersistentVolumeClaim", "metadata": {"name": "big"},
           "spec": {"resources": {"requests": {"storage": "5Gi"}, "limits": {"storage": "1Gi"}}}}
    lr = limit_range({"type": "PersistentVolumeClaim", "max": {"storage": "2Gi"}})
    assert forbidden(lambda: apply_limit_ranges(big, [lr])).endswith(
        "maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 5Gi"
    )


# ---------------------------------------------------------------------------- ResourceQuota


def test_quota_pod_count_exceeded_message() -> None:
    existing = {"pods": [pod("a"), pod("b"), pod("done", phase="Succeeded")]}
    message = forbidden(lambda: check_quota("pods", pod("c"), [quota(pods="2")], existing))
    assert message == 'pods "c" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2'


def test_quota_updates_used_and_formats_quantities() -> None:
    existing = {"pods": [pod("a", ctr(requests={"cpu": "250m", "memory": "256Mi"}, limits={"cpu": "500m", "memory": "512Mi"}))]}
    new = pod("b", ctr(requests={"cpu": "250m", "memory": "768Mi"}, limits={"cpu": "500m", "memory": "512Mi"}))
    q = quota(pods="10", requests_cpu="2", requests_memory="2Gi", limits_cpu="4", limits_memory="4Gi")
    (updated,) = check_quota("pods", new, [q], existing)
    assert updated["status"]["used"] == {
        "pods": "2", "requests.cpu": "500m", "requests.memory": "1Gi", "limits.cpu": "1", "limits.memory": "1Gi",
    }
    assert updated["status"]["hard"]["requests.memory"] == "2Gi"
    assert "status" not in q, "input quotas must not be mutated"


def test_quota_requires_limits_for_listed_containers() -> None:
    new = pod("x", ctr("app", requests={"cpu": "100m"}), ctr("side", requests={"cpu": "100m"}, limits={"cpu": "1"}))
    message = forbidden(lambda: check_quota("pods", new, [quota(limits_cpu="2")], {}))
    assert message == 'pods "x" is forbidden: failed quota: q: must specify limits.cpu for: app'
    both = pod("x", ctr("c"), ctr("b"))
    message = forbidden(lambda: check_quota("pods", both, [quota(requests_memory="1Gi", limits_cpu="2")], {}))
    assert message == (
        'pods "x" is forbidden: failed quota: q: must specify limits.cpu for: b,c; requests.memory for: b,c'
    )


def test_quota_cpu_exceeded_with_requested_used_limited() -> None:
    existing = {"pods": [pod("a", ctr(requests={"cpu": "1500m"}))]}
    new = pod("b", ctr(requests={"cpu": "1"}))
    message = forbidden(lambda: check_quota("pods", new, [quota(requests_cpu="2")], existing))
    assert message.endswith("exceeded quota: q, requested: requests.cpu=1, used: requests.cpu=1500m, limited: requests.cpu=2")


def test_quota_object_counts_and_storage() -> None:
    cms = {"configmaps": [{"metadata": {"name": "a"}}]}
    message = forbidden(lambda: check_quota("configmaps", {"metadata": {"name": "b"}}, [quota(configmaps="1")], cms))
    assert message == 'configmaps "b" is forbidden: exceeded quota: q, requested: configmaps=1, used: configmaps=1, limited: configmaps=1'
    deployments = {"deployments.apps": [{"metadata": {"name": "a"}}]}
    q = quota(**{"count/deployments_apps": "1"})
    q["spec"]["hard"] = {"count/deployments.apps": "1"}
    assert forbidden(lambda: check_quota("deployments.apps", {"metadata": {"name": "b"}}, [q], deployments)).startswith(
        'deployments.apps "b" is forbidden: exceeded quota: q, requested: count/deployments.apps=1'
    )
    claim = {"metadata": {"name": "d"}, "spec": {"storageClassName": "fast", "resources": {"requests": {"storage": "5Gi"}}}}
    sq = quota(requests_storage="4Gi")
    assert "requested: requests.storage=5Gi, used: requests.storage=0, limited: requests.storage=4Gi" in forbidden(
        lambda: check_quota("persistentvolumeclaims", claim, [sq], {})
    )
    assert object_usage("persistentvolumeclaims", claim)["fast.storageclass.storage.k8s.io/persistentvolumeclaims"] == 1


def test_services_quota_counts_load_balancers() -> None:
    svc = {"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}}
    message = forbidden(lambda: check_quota("services", svc, [quota(services_loadbalancers="0")], {}))
    assert "requested: services.loadbalancers=1, used: services.loadbalancers=0, limited: services.loadbalancers=0" in message
    (updated,) = check_quota("services", svc, [quota(services="5")], {})
    assert updated["status"]["used"] == {"services": "1"}


def test_scoped_quota_only_tracks_matching_pods() -> None:
    best_effort = quota("be", scopes=["BestEffort"], pods="1")
    existing = {"pods": [pod("a")]}
    guaranteed = pod("g", ctr(requests={"cpu": "1", "memory": "1Gi"}, limits={"cpu": "1", "memory": "1Gi"}))
    (updated,) = check_quota("pods", guaranteed, [best_effort], existing)
    assert updated["status"]["used"] == {"pods": "1"}
    assert "exceeded quota: be" in forbidden(lambda: check_quota("pods", pod("b"), [best_effort], existing))
    # scoped quotas never track other resources
    (cm_quota,) = check_quota("configmaps", {"metadata": {"name": "c"}}, [quota("s", scopes=["BestEffort"], configmaps="0")], {})
    assert cm_quota["status"]["used"] == {"configmaps": "0"}


def test_update_of_existing_object_is_not_double_counted() -> None:
    existing = {"pods": [pod("a"), pod("b")]}
    (updated,) = check_quota("pods", pod("b"), [quota(pods="2")], existing)
    assert updated["status"]["used"] == {"pods": "2"}


def test_compute_quota_status_for_controller() -> None:
    existing = {"pods": [pod("a", ctr(requests={"memory": "100Mi"}))], "secrets": [{}, {"metadata": {"name": "s"}}]}
    status = compute_quota_status(quota(pods="5", requests_memory="1Gi", secrets="10", configmaps="3"), existing)
    assert status == {
        "hard": {"pods": "5", "requests.memory": "1Gi", "secrets": "10", "configmaps": "3"},
        "used": {"pods": "1", "requests.memory": "100Mi", "secrets": "2", "configmaps": "0"},
    }


def test_status_object_shape() -> None:
    with pytest.raises(AdmissionError) as info:
        check_quota("pods", pod("c"), [quota(pods="0")], {})
    status = info.value.status()
    assert status["kind"] == "Status" and status["code"] == 403 and status["reason"] == "Forbidden"
    assert status["details"] == {"name": "c", "kind": "pods"}


def test_garbage_inputs_do_not_crash() -> None:
    apply_limit_ranges(None, [])  # type: ignore[arg-type]
    apply_limit_ranges(pod(), [None, {"spec": "x"}, limit_range({"type": "Container", "max": {"cpu": "bogus"}})])  # type: ignore[list-item]
    assert check_quota("pods", pod(), [{"spec": {"hard": {"pods": "lots"}}}], {"pods": [None]}) == [
        {"spec": {"hard": {"pods": "lots"}}, "status": {"hard": {}, "used": {}}}
    ]


# ---------------------------------------------------------------------------- service account token


def test_mount_service_account_token() -> None:
    obj = pod("p", ctr("a"), ctr("b"))
    mount_service_account_token(obj, suffix="x7k2q")
    volume = obj["spec"]["volumes"][0]
    assert volume["name"] == "kube-api-access-x7k2q"
    assert volume["projected"]["sources"][0] == {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}
    for container in obj["spec"]["containers"]:
        assert container["volumeMounts"] == [
            {"name": "kube-api-access-x7k2q", "readOnly": True, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}
        ]
    before = copy.deepcopy(obj)
    mount_service_account_token(obj)
    assert obj == before
    opted_out = pod()
    mount_service_account_token(opted_out, service_account={"automountServiceAccountToken": False})
    assert "volumes" not in opted_out["spec"]


def test_message_uses_generate_name_before_a_name_exists() -> None:
    unnamed = {"metadata": {"generateName": "web-5d9c8-"}, "spec": {"containers": [{"name": "app"}]}}
    message = forbidden(lambda: check_quota("pods", unnamed, [quota(pods="0")], {}))
    assert message.startswith('pods "web-5d9c8-" is forbidden: exceeded quota: q')


def test_priority_admission() -> None:
    classes = [
        {"metadata": {"name": "high"}, "value": 1000, "preemptionPolicy": "Never"},
        {"metadata": {"name": "normal"}, "value": 10, "globalDefault": True},
    ]
    named = pod("a")
    named["spec"]["priorityClassName"] = "high"
    apply_priority(named, classes)
    assert (named["spec"]["priority"], named["spec"]["preemptionPolicy"]) == (1000, "Never")
    unnamed = pod("b")
    apply_priority(unnamed, classes)
    assert (unnamed["spec"]["priorityClassName"], unnamed["spec"]["priority"]) == ("normal", 10)
    plain = pod("c")
    apply_priority(plain, classes[:1])
    assert plain["spec"]["priority"] == 0 and "priorityClassName" not in plain["spec"]
    system = pod("s")
    system["spec"]["priorityClassName"] = "system-cluster-critical"
    apply_priority(system, [])
    assert system["spec"]["priority"] == 2000000000
    missing = pod("d")
    missing["spec"]["priorityClassName"] = "urgent"
    assert forbidden(lambda: apply_priority(missing, classes)) == (
        'pods "d" is forbidden: no PriorityClass with name urgent was found'
    )


def test_default_storage_class_admission() -> None:
    classes = [
        {"metadata": {"name": "slow", "creationTimestamp": "2026-01-01T00:00:00Z",
                      "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}},
        {"metadata": {"name": "fast", "creationTimestamp": "2026-02-01T00:00:00Z",
                      "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}},
        {"metadata": {"name": "other"}},
    ]
    claim = {"metadata": {"name": "data"}, "spec": {"resources": {"requests": {"storage": "1Gi"}}}}
    apply_default_storage_class(claim, classes)
    assert claim["spec"]["storageClassName"] == "fast"
    explicit_none = {"metadata": {"name": "d"}, "spec": {"storageClassName": ""}}
    apply_default_storage_class(explicit_none, classes)
    assert explicit_none["spec"]["storageClassName"] == ""
    no_default = {"metadata": {"name": "e"}, "spec": {}}
    apply_default_storage_class(no_default, classes[2:])
    assert "storageClassName" not in no_default["spec"]


def test_missing_service_account_is_refused_like_the_real_plugin() -> None:
    error = missing_service_account({"metadata": {"generateName": "web-5d9f-"}}, "shop", "app-runner")
    status = error.status()
    assert status["code"] == 403 and status["reason"] == "Forbidden"
    assert status["message"] == ('pods "web-5d9f-" is forbidden: error looking up service account shop/app-runner: '
                                 'serviceaccount "app-runner" not found')
