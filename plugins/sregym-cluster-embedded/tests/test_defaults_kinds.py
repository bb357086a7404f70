"""API-server defaulting: the fields a real cluster adds, and idempotence."""

from __future__ import annotations

import copy

import pytest
from sregym_cluster_embedded.apiserver.defaults import apply_defaults, image_pull_policy, pod_qos_class


def defaulted(group: str, version: str, kind: str, obj: dict) -> dict:
    apply_defaults(group, version, kind, obj)
    again = copy.deepcopy(obj)
    apply_defaults(group, version, kind, again)
    assert again == obj, "defaulting must be idempotent"
    return obj


def container(**extra) -> dict:
    return {"name": "app", "image": "nginx:1.25", **extra}


def pod(**spec) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [container()], **spec}}


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("nginx:1.25", "IfNotPresent"),
        ("registry.local:5000/team/app", "Always"),
        ("registry.local:5000/team/app:v2", "IfNotPresent"),
        ("nginx@sha256:abcd", "IfNotPresent"),
        ("nginx:latest@sha256:abcd", "Always"),
    ],
)
def test_image_pull_policy(image: str, policy: str) -> None:
    assert image_pull_policy(image) == policy


def test_pod_spec_and_container_defaults() -> None:
    obj = pod()
    obj["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
    obj["spec"]["containers"][0]["readinessProbe"] = {"httpGet": {"port": 80}}
    obj["spec"]["containers"][0]["env"] = [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]
    spec = defaulted("", "v1", "Pod", obj)["spec"]
    assert spec["restartPolicy"] == "Always"
    assert spec["dnsPolicy"] == "ClusterFirst"
    assert spec["schedulerName"] == "default-scheduler"
    assert spec["terminationGracePeriodSeconds"] == 30
    assert spec["securityContext"] == {}
    assert spec["enableServiceLinks"] is True
    assert spec["serviceAccountName"] == spec["serviceAccount"] == "default"
    assert spec["priority"] == 0 and spec["preemptionPolicy"] == "PreemptLowerPriority"
    assert {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
            "tolerationSeconds": 300} in spec["tolerations"]
    assert len(spec["tolerations"]) == 2
    c = spec["containers"][0]
    assert c["imagePullPolicy"] == "IfNotPresent"
    assert c["terminationMessagePath"] == "/dev/termination-log"
    assert c["terminationMessagePolicy"] == "File"
    assert c["resources"] == {}
    assert c["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert c["readinessProbe"] == {
        "httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
        "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3,
    }
    assert c["env"][0]["valueFrom"]["fieldRef"]["apiVersion"] == "v1"
    assert obj["status"] == {"phase": "Pending", "qosClass": "BestEffort"}


def test_pod_requests_default_from_limits_and_qos() -> None:
    obj = pod()
    obj["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "500m", "memory": "128Mi"}}
    defaulted("", "v1", "Pod", obj)
    assert obj["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "500m", "memory": "128Mi"}
    assert obj["status"]["qosClass"] == "Guaranteed"
    burstable = pod()
    burstable["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m"}}
    assert pod_qos_class(burstable["spec"]) == "Burstable"


def test_existing_tolerations_and_explicit_values_are_kept() -> None:
    obj = pod(restartPolicy="Never", tolerations=[{"operator": "Exists"}], serviceAccountName="builder",
              priorityClassName="system-node-critical")
    spec = defaulted("", "v1", "Pod", obj)["spec"]
    assert spec["restartPolicy"] == "Never"
    assert spec["tolerations"] == [{"operator": "Exists"}]
    assert spec["serviceAccount"] == "builder"
    assert spec["priority"] == 2000001000


def test_volume_defaults() -> None:
    obj = pod(volumes=[
        {"name": "scratch"},
        {"name": "cfg", "configMap": {"name": "c"}},
        {"name": "sec", "secret": {"secretName": "s"}},
        {"name": "host", "hostPath": {"path": "/tmp"}},
    ])
    volumes = defaulted("", "v1", "Pod", obj)["spec"]["volumes"]
    assert volumes[0] == {"name": "scratch", "emptyDir": {}}
    assert volumes[1]["configMap"]["defaultMode"] == 420
    assert volumes[2]["secret"]["defaultMode"] == 420
    assert volumes[3]["hostPath"]["type"] == ""


def test_host_network_copies_container_ports_to_host_ports() -> None:
    obj = pod(hostNetwork=True)
    obj["spec"]["containers"][0]["ports"] = [{"containerPort": 9100}]
    assert defaulted("", "v1", "Pod", obj)["spec"]["containers"][0]["ports"][0]["hostPort"] == 9100


def template() -> dict:
    return {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [container(image="web")]}}


def test_deployment_defaults_and_template_gets_pod_spec_defaults_only() -> None:
    obj = {"spec": {"selector": {"matchLabels": {"app": "web"}}, "template": template()}}
    spec = defaulted("apps", "v1", "Deployment", obj)["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    assert spec["revisionHistoryLimit"] == 10 and spec["progressDeadlineSeconds"] == 600
    pod_spec = spec["template"]["spec"]
    assert pod_spec["dnsPolicy"] == "ClusterFirst"
    assert pod_spec["containers"][0]["imagePullPolicy"] == "Always"
    # Pod-only defaults and admission effects never appear in templates.
    for key in ("enableServiceLinks", "tolerations", "serviceAccountName", "priority"):
        assert key not in pod_spec
    assert "status" not in obj


def test_recreate_strategy_gets_no_rolling_update() -> None:
    obj = {"spec": {"strategy": {"type": "Recreate"}, "template": template()}}
    assert defaulted("apps", "v1", "Deployment", obj)["spec"]["strategy"] == {"type": "Recreate"}


def test_statefulset_daemonset_replicaset_defaults() -> None:
    sts = {"spec": {"serviceName": "db", "template": template(), "volumeClaimTemplates": [
        {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}
    ]}}
    spec = defaulted("apps", "v1", "StatefulSet", sts)["spec"]
    assert spec["podManagementPolicy"] == "OrderedReady"
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    claim = spec["volumeClaimTemplates"][0]
    assert claim["spec"]["volumeMode"] == "Filesystem" and claim["status"] == {"phase": "Pending"}
    assert claim["kind"] == "PersistentVolumeClaim"
    ds = defaulted("apps", "v1", "DaemonSet", {"spec": {"template": template()}})["spec"]
    assert ds["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
    assert ds["revisionHistoryLimit"] == 10
    rs = defaulted("apps", "v1", "ReplicaSet", {"spec": {"template": template()}})["spec"]
    assert rs["replicas"] == 1 and rs["template"]["spec"]["restartPolicy"] == "Always"


def test_job_defaults_and_generated_selector() -> None:
    job = {"metadata": {"name": "migrate", "uid": "1234"},
           "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [container()]}}}}
    spec = defaulted("batch", "v1", "Job", job)["spec"]
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, 6)
    assert spec["completionMode"] == "NonIndexed" and spec["suspend"] is False
    assert spec["podReplacementPolicy"] == "TerminatingOrFailed"
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": "1234"}}
    assert spec["manualSelector"] is False
    labels = spec["template"]["metadata"]["labels"]
    assert labels["job-name"] == "migrate" and labels["batch.kubernetes.io/job-name"] == "migrate"
    assert job["metadata"]["labels"]["controller-uid"] == "1234"
    parallel = defaulted("batch", "v1", "Job", {"spec": {"parallelism": 3, "template": template()}})["spec"]
    assert parallel["parallelism"] == 3 and "completions" not in parallel and "selector" not in parallel
    assert parallel["manualSelector"] is False


def test_cronjob_defaults() -> None:
    cron = {"spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": template()}}}}
    spec = defaulted("batch", "v1", "CronJob", cron)["spec"]
    assert spec["concurrencyPolicy"] == "Allow" and spec["suspend"] is False
    assert (spec["successfulJobsHistoryLimit"], spec["failedJobsHistoryLimit"]) == (3, 1)
    assert spec["jobTemplate"]["spec"]["template"]["spec"]["schedulerName"] == "default-scheduler"
    assert "backoffLimit" not in spec["jobTemplate"]["spec"]


def test_service_defaults() -> None:
    svc = {"spec": {"selector": {"app": "web"}, "ports": [{"port": 80}, {"port": 443, "targetPort": "https"}]}}
    spec = defaulted("", "v1", "Service", svc)["spec"]
    assert spec["type"] == "ClusterIP" and spec["sessionAffinity"] == "None"
    assert spec["ports"][0] == {"port": 80, "protocol": "TCP", "targetPort": 80}
    assert spec["ports"][1]["targetPort"] == "https"
    assert spec["ipFamilies"] == ["IPv4"] and spec["ipFamilyPolicy"] == "SingleStack"
    assert spec["internalTrafficPolicy"] == "Cluster"
    assert "externalTrafficPolicy" not in spec
    lb = defaulted("", "v1", "Service", {"spec": {"type": "LoadBalancer", "sessionAffinity": "ClientIP", "ports": [{"port": 80}]}})
    assert lb["spec"]["externalTrafficPolicy"] == "Cluster" and lb["spec"]["allocateLoadBalancerNodePorts"] is True
    assert lb["spec"]["sessionAffinityConfig"] == {"clientIP": {"timeoutSeconds": 10800}}
    ext = defaulted("", "v1", "Service", {"spec": {"type": "ExternalName", "externalName": "db.example"}})
    assert "ipFamilies" not in ext["spec"] and "internalTrafficPolicy" not in ext["spec"]


def test_namespace_pvc_pv_secret_storageclass() -> None:
    ns = defaulted("", "v1", "Namespace", {"metadata": {"name": "shop", "labels": {"team": "a"}}})
    assert ns["metadata"]["labels"] == {"team": "a", "kubernetes.io/metadata.name": "shop"}
    assert ns["spec"] == {"finalizers": ["kubernetes"]} and ns["status"] == {"phase": "Active"}
    pvc = defaulted("", "v1", "PersistentVolumeClaim", {"spec": {"resources": {"requests": {"storage": "1Gi"}}}})
    assert pvc["spec"]["volumeMode"] == "Filesystem" and pvc["status"]["phase"] == "Pending"
    pv = defaulted("", "v1", "PersistentVolume", {"spec": {"capacity": {"storage": "1Gi"}}})
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert defaulted("", "v1", "Secret", {"data": {}})["type"] == "Opaque"
    sc = defaulted("storage.k8s.io", "v1", "StorageClass", {"provisioner": "x"})
    assert (sc["reclaimPolicy"], sc["volumeBindingMode"]) == ("Delete", "Immediate")


def test_hpa_defaults() -> None:
    hpa = defaulted("autoscaling", "v2", "HorizontalPodAutoscaler", {"spec": {"maxReplicas": 5}})
    assert hpa["spec"]["minReplicas"] == 1
    assert hpa["spec"]["metrics"][0]["resource"] == {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}
    assert "behavior" not in hpa["spec"]
    with_behavior = defaulted("autoscaling", "v2", "HorizontalPodAutoscaler",
                              {"spec": {"maxReplicas": 5, "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}})
    behavior = with_behavior["spec"]["behavior"]
    assert behavior["scaleDown"]["stabilizationWindowSeconds"] == 60
    assert behavior["scaleDown"]["policies"] == [{"type": "Percent", "value": 100, "periodSeconds": 15}]
    assert behavior["scaleUp"]["policies"][0] == {"type": "Pods", "value": 4, "periodSeconds": 15}
    v1 = defaulted("autoscaling", "v1", "HorizontalPodAutoscaler", {"spec": {"maxReplicas": 5}})
    assert v1["spec"] == {"maxReplicas": 5, "minReplicas": 1}


def test_limit_range_item_defaults() -> None:
    lr = {"spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}, "min": {"memory": "64Mi"}}]}}
    item = defaulted("", "v1", "LimitRange", lr)["spec"]["limits"][0]
    assert item["default"] == {"cpu": "1"}
    assert item["defaultRequest"] == {"cpu": "1", "memory": "64Mi"}


def test_misc_kinds() -> None:
    np = defaulted("networking.k8s.io", "v1", "NetworkPolicy", {"spec": {"egress": [{"ports": [{"port": 53}]}]}})
    assert np["spec"]["policyTypes"] == ["Ingress", "Egress"] and np["spec"]["podSelector"] == {}
    assert np["spec"]["egress"][0]["ports"][0]["protocol"] == "TCP"
    pc = defaulted("scheduling.k8s.io", "v1", "PriorityClass", {"value": 10})
    assert pc["preemptionPolicy"] == "PreemptLowerPriority"
    rb = defaulted("rbac.authorization.k8s.io", "v1", "RoleBinding", {
        "roleRef": {"kind": "Role", "name": "r"},
        "subjects": [{"kind": "User", "name": "u"}, {"kind": "ServiceAccount", "name": "s", "namespace": "d"}]})
    assert [s["apiGroup"] for s in rb["subjects"]] == ["rbac.authorization.k8s.io", ""]
    es = defaulted("discovery.k8s.io", "v1", "EndpointSlice", {"ports": [{"port": 80}]})
    assert es["ports"] == [{"port": 80, "name": "", "protocol": "TCP"}]
    hook = defaulted("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration",
                     {"webhooks": [{"name": "w", "clientConfig": {"service": {"name": "s", "namespace": "n"}}}]})
    w = hook["webhooks"][0]
    assert (w["failurePolicy"], w["timeoutSeconds"], w["reinvocationPolicy"]) == ("Fail", 10, "Never")
    assert w["clientConfig"]["service"]["port"] == 443


def test_bad_input_is_left_alone() -> None:
    apply_defaults("", "v1", "Pod", None)  # type: ignore[arg-type]
    weird = {"spec": {"containers": "nope", "volumes": [1, None]}}
    apply_defaults("", "v1", "Pod", weird)
    assert weird["spec"]["containers"] == "nope"
    broken = {"spec": "x"}
    apply_defaults("apps", "v1", "Deployment", broken)
    assert broken == {"spec": "x"}
    unknown = {"spec": {}}
    apply_defaults("example.com", "v1", "Widget", unknown)
    assert unknown == {"spec": {}}


def test_metadata_bookkeeping_untouched() -> None:
    obj = pod()
    obj["metadata"].update({"uid": "u", "resourceVersion": "7", "generation": 2})
    before = copy.deepcopy(obj["metadata"])
    defaulted("", "v1", "Pod", obj)
    assert obj["metadata"] == before


def test_quantities_are_stored_canonically() -> None:
    obj = pod()
    obj["spec"]["containers"][0]["resources"] = {
        "limits": {"cpu": 1, "memory": "1024Mi"},
        "requests": {"cpu": "0.5", "memory": "0.5Gi", "ephemeral-storage": "0.0001"},
    }
    resources = defaulted("", "v1", "Pod", obj)["spec"]["containers"][0]["resources"]
    assert resources["limits"] == {"cpu": "1", "memory": "1Gi"}
    assert resources["requests"] == {"cpu": "500m", "memory": "512Mi", "ephemeral-storage": "1m"}
    quota = defaulted("", "v1", "ResourceQuota", {"spec": {"hard": {"requests.cpu": "2000m", "pods": 10, "bad": "x"}}})
    assert quota["spec"]["hard"] == {"requests.cpu": "2", "pods": "10", "bad": "x"}


def test_resize_policy_for_containers_with_requests() -> None:
    obj = pod()
    obj["spec"]["containers"][0]["resources"] = {"requests": {"memory": "64Mi"}}
    obj["spec"]["containers"].append(container(name="plain"))
    containers = defaulted("", "v1", "Pod", obj)["spec"]["containers"]
    assert containers[0]["resizePolicy"] == [{"resourceName": "memory", "restartPolicy": "NotRequired"}]
    assert "resizePolicy" not in containers[1]


def test_host_ports_only_defaulted_on_pods() -> None:
    tpl = template()
    tpl["spec"]["hostNetwork"] = True
    tpl["spec"]["containers"][0]["ports"] = [{"containerPort": 9100}]
    deploy = defaulted("apps", "v1", "Deployment", {"spec": {"template": tpl}})
    assert "hostPort" not in deploy["spec"]["template"]["spec"]["containers"][0]["ports"][0]


def test_statefulset_explicit_rolling_update_without_block() -> None:
    sts = {"spec": {"updateStrategy": {"type": "RollingUpdate"}, "template": template()}}
    assert defaulted("apps", "v1", "StatefulSet", sts)["spec"]["updateStrategy"] == {"type": "RollingUpdate"}
    sts = {"spec": {"updateStrategy": {"type": "OnDelete"}, "template": template()}}
    assert defaulted("apps", "v1", "StatefulSet", sts)["spec"]["updateStrategy"] == {"type": "OnDelete"}


def test_service_affinity_config_and_external_ips() -> None:
    svc = {"spec": {"sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 5}}, "externalIPs": ["127.0.0.8"],
                    "ports": [{"port": 80}]}}
    spec = defaulted("", "v1", "Service", svc)["spec"]
    assert "sessionAffinityConfig" not in spec
    assert spec["externalTrafficPolicy"] == "Cluster"


def test_node_allocatable_defaults_to_capacity() -> None:
    node = defaulted("", "v1", "Node", {"status": {"capacity": {"cpu": "4", "memory": "8192Mi", "pods": "110"}}})
    assert node["status"]["allocatable"] == {"cpu": "4", "memory": "8Gi", "pods": "110"}
