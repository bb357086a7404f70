"""Columns and cells of the non-Pod printers, durations and the generic/CRD fallbacks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sregym_cluster_embedded.apiserver.printers import PRINTERS, build_table
from sregym_cluster_embedded.apiserver.printing.timefmt import human_duration

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def ts(seconds_ago: float) -> str:
    return (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def meta(name: str = "x", age: float = 600, **extra) -> dict:
    return {"name": name, "namespace": "default", "creationTimestamp": ts(age), **extra}


def table(resource: str, group: str, *objects: dict, **kwargs) -> dict:
    return build_table(resource, group, list(objects), now=NOW, **kwargs)


def header(resource: str, group: str = "") -> list[str]:
    return [c["name"] for c in table(resource, group)["columnDefinitions"]]


def wide_header(resource: str, group: str = "") -> list[str]:
    return [c["name"] for c in table(resource, group)["columnDefinitions"] if c["priority"] == 0]


def cells(resource: str, group: str, obj: dict) -> list:
    return table(resource, group, obj)["rows"][0]["cells"]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"), (-1.5, "0s"), (-3, "<invalid>"), (45, "45s"), (119, "119s"), (120, "2m"), (192, "3m12s"),
        (600, "10m"), (179 * 60, "179m"), (3 * 3600, "3h"), (5 * 3600 + 1800, "5h30m"), (8 * 3600, "8h"),
        (47 * 3600, "47h"), (2 * 86400 + 3 * 3600, "2d3h"), (7 * 86400, "7d"), (30 * 86400, "30d"),
        (365 * 2 * 86400 + 3 * 86400, "2y3d"), (365 * 9 * 86400, "9y"),
    ],
)
def test_human_duration_matches_kubernetes(seconds: float, text: str) -> None:
    assert human_duration(seconds) == text


def test_every_printer_has_name_like_first_column_and_consistent_cells() -> None:
    for (group, resource), printer in PRINTERS.items():
        names = [c.name for c in printer.columns]
        assert "Name" in names, resource
        row = printer.cells({"metadata": {"name": "n", "creationTimestamp": ts(5)}}, NOW)
        assert len(row) == len(printer.columns), (group, resource)
        assert all(c.type in ("string", "integer", "number", "boolean", "date") for c in printer.columns)


@pytest.mark.parametrize(
    ("resource", "group", "columns"),
    [
        ("nodes", "", ["Name", "Status", "Roles", "Age", "Version"]),
        ("namespaces", "", ["Name", "Status", "Age"]),
        ("services", "", ["Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age"]),
        ("endpoints", "", ["Name", "Endpoints", "Age"]),
        ("endpointslices", "discovery.k8s.io", ["Name", "AddressType", "Ports", "Endpoints", "Age"]),
        ("configmaps", "", ["Name", "Data", "Age"]),
        ("secrets", "", ["Name", "Type", "Data", "Age"]),
        ("serviceaccounts", "", ["Name", "Secrets", "Age"]),
        ("events", "", ["Last Seen", "Type", "Reason", "Object", "Message"]),
        ("persistentvolumes", "", ["Name", "Capacity", "Access Modes", "Reclaim Policy", "Status", "Claim",
                                   "StorageClass", "VolumeAttributesClass", "Reason", "Age"]),
        ("persistentvolumeclaims", "", ["Name", "Status", "Volume", "Capacity", "Access Modes", "StorageClass",
                                        "VolumeAttributesClass", "Age"]),
        ("storageclasses", "storage.k8s.io", ["Name", "Provisioner", "ReclaimPolicy", "VolumeBindingMode",
                                              "AllowVolumeExpansion", "Age"]),
        ("resourcequotas", "", ["Name", "Request", "Limit", "Age"]),
        ("limitranges", "", ["Name", "Created At"]),
        ("deployments", "apps", ["Name", "Ready", "Up-to-date", "Available", "Age"]),
        ("replicasets", "apps", ["Name", "Desired", "Current", "Ready", "Age"]),
        ("statefulsets", "apps", ["Name", "Ready", "Age"]),
        ("daemonsets", "apps", ["Name", "Desired", "Current", "Ready", "Up-to-date", "Available", "Node Selector", "Age"]),
        ("jobs", "batch", ["Name", "Status", "Completions", "Duration", "Age"]),
        ("cronjobs", "batch", ["Name", "Schedule", "Timezone", "Suspend", "Active", "Last Schedule", "Age"]),
        ("horizontalpodautoscalers", "autoscaling", ["Name", "Reference", "Targets", "MinPods", "MaxPods", "Replicas", "Age"]),
        ("networkpolicies", "networking.k8s.io", ["Name", "Pod-Selector", "Age"]),
        ("poddisruptionbudgets", "policy", ["Name", "Min Available", "Max Unavailable", "Allowed Disruptions", "Age"]),
        ("priorityclasses", "scheduling.k8s.io", ["Name", "Value", "Global-Default", "Age", "PreemptionPolicy"]),
        ("ingresses", "networking.k8s.io", ["Name", "Class", "Hosts", "Address", "Ports", "Age"]),
        ("leases", "coordination.k8s.io", ["Name", "Holder", "Age"]),
        ("roles", "rbac.authorization.k8s.io", ["Name", "Created At"]),
        ("rolebindings", "rbac.authorization.k8s.io", ["Name", "Role", "Age"]),
        ("clusterroles", "rbac.authorization.k8s.io", ["Name", "Created At"]),
        ("clusterrolebindings", "rbac.authorization.k8s.io", ["Name", "Role", "Age"]),
        ("customresourcedefinitions", "apiextensions.k8s.io", ["Name", "Created At"]),
        ("validatingwebhookconfigurations", "admissionregistration.k8s.io", ["Name", "Webhooks", "Age"]),
        ("mutatingwebhookconfigurations", "admissionregistration.k8s.io", ["Name", "Webhooks", "Age"]),
        ("replicationcontrollers", "", ["Name", "Desired", "Current", "Ready", "Age"]),
        ("widgets", "example.com", ["Name", "Age"]),
    ],
)
def test_default_columns(resource: str, group: str, columns: list[str]) -> None:
    assert wide_header(resource, group) == columns


def test_wide_columns() -> None:
    assert header("deployments", "apps")[5:] == ["Containers", "Images", "Selector"]
    assert header("nodes")[5:] == ["Internal-IP", "External-IP", "OS-Image", "Kernel-Version", "Container-Runtime"]
    assert header("events") == ["Last Seen", "Type", "Reason", "Object", "Subobject", "Source", "Message",
                                "First Seen", "Count", "Name"]
    assert header("services")[-1] == "Selector"
    assert header("rolebindings", "rbac.authorization.k8s.io")[3:] == ["Users", "Groups", "ServiceAccounts"]


def test_node_cells() -> None:
    node = {
        "metadata": meta("node-1", 3 * 86400, labels={"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "worker"}),
        "spec": {"unschedulable": True},
        "status": {
            "conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "False"}],
            "addresses": [{"type": "InternalIP", "address": "127.42.0.1"}, {"type": "Hostname", "address": "node-1"}],
            "nodeInfo": {"kubeletVersion": "v1.32.0", "osImage": "Debian GNU/Linux 12", "kernelVersion": "6.1",
                         "containerRuntimeVersion": "sregym://0.1"},
        },
    }
    assert cells("nodes", "", node) == [
        "node-1", "NotReady,SchedulingDisabled", "control-plane,worker", "3d", "v1.32.0",
        "127.42.0.1", "<none>", "Debian GNU/Linux 12", "6.1", "sregym://0.1",
    ]
    assert cells("nodes", "", {"metadata": meta("n")})[1:3] == ["Unknown", "<none>"]


def test_service_cells() -> None:
    svc = {"metadata": meta("web"), "spec": {"type": "NodePort", "clusterIP": "127.43.0.10", "clusterIPs": ["127.43.0.10"],
                                             "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"},
                                                       {"port": 53, "protocol": "UDP"}],
                                             "selector": {"tier": "fe", "app": "web"}}}
    assert cells("services", "", svc) == ["web", "NodePort", "127.43.0.10", "<none>", "80:30080/TCP,53/UDP", "10m",
                                          "app=web,tier=fe"]
    lb = {"metadata": meta("lb"), "spec": {"type": "LoadBalancer", "clusterIPs": ["127.43.0.11"], "ports": []}}
    assert cells("services", "", lb)[3:5] == ["<pending>", "<none>"]
    lb["status"] = {"loadBalancer": {"ingress": [{"ip": "127.0.0.5"}]}}
    assert cells("services", "", lb)[3] == "127.0.0.5"
    ext = {"metadata": meta("db"), "spec": {"type": "ExternalName", "externalName": "db.example.com"}}
    assert cells("services", "", ext)[2:4] == ["<none>", "db.example.com"]
    headless = {"metadata": meta("h"), "spec": {"type": "ClusterIP", "clusterIPs": ["None"], "ports": [{"port": 5432, "protocol": "TCP"}]}}
    assert cells("services", "", headless)[2] == "None"


def test_endpoints_and_slices() -> None:
    ep = {"metadata": meta("web"), "subsets": [{"addresses": [{"ip": f"127.42.0.{i}"} for i in range(1, 6)],
                                                "ports": [{"port": 8080}]}]}
    assert cells("endpoints", "", ep)[1] == "127.42.0.1:8080,127.42.0.2:8080,127.42.0.3:8080 + 2 more..."
    assert cells("endpoints", "", {"metadata": meta("none")})[1] == "<none>"
    es = {"metadata": meta("web-abc"), "addressType": "IPv4", "ports": [{"port": 8080, "name": "http"}],
          "endpoints": [{"addresses": ["127.42.0.1"]}, {"addresses": ["127.42.0.2"]}]}
    assert cells("endpointslices", "discovery.k8s.io", es)[1:4] == ["IPv4", "8080", "127.42.0.1,127.42.0.2"]
    empty = {"metadata": meta("e"), "addressType": "IPv4"}
    assert cells("endpointslices", "discovery.k8s.io", empty)[2:4] == ["<unset>", "<unset>"]


def test_config_objects() -> None:
    assert cells("configmaps", "", {"metadata": meta("c"), "data": {"a": "1", "b": "2"}, "binaryData": {"c": ""}})[1] == 3
    assert cells("secrets", "", {"metadata": meta("s"), "type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}})[1:3] == [
        "kubernetes.io/tls", 2]
    assert cells("serviceaccounts", "", {"metadata": meta("default")})[1] == 0


def test_event_cells() -> None:
    event = {
        "metadata": meta("web-1.17f", 3600),
        "type": "Warning", "reason": "BackOff", "message": "Back-off restarting failed container app in pod web-1_default(u)\n",
        "involvedObject": {"kind": "Pod", "name": "web-1", "fieldPath": "spec.containers{app}"},
        "source": {"component": "kubelet", "host": "node-1"},
        "firstTimestamp": ts(3600), "lastTimestamp": ts(42), "count": 17,
    }
    assert cells("events", "", event) == [
        "42s", "Warning", "BackOff", "pod/web-1", "spec.containers{app}", "kubelet, node-1",
        "Back-off restarting failed container app in pod web-1_default(u)", "60m", 17, "web-1.17f",
    ]
    new_style = {"metadata": meta("e2"), "type": "Normal", "reason": "Scheduled", "note": "Successfully assigned",
                 "regarding": {"kind": "Pod", "name": "p"}, "eventTime": ts(5), "reportingController": "default-scheduler"}
    row = cells("events", "events.k8s.io", new_style)
    assert row[:4] == ["5s", "Normal", "Scheduled", "pod/p"] and row[5] == "default-scheduler" and row[8] == 1


def test_pv_pvc_storageclass() -> None:
    pv = {"metadata": meta("pv-1"), "spec": {"capacity": {"storage": "1024Mi"}, "accessModes": ["ReadWriteMany", "ReadWriteOnce"],
                                             "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "standard",
                                             "claimRef": {"namespace": "shop", "name": "data"}, "volumeMode": "Filesystem"},
          "status": {"phase": "Bound"}}
    assert cells("persistentvolumes", "", pv) == ["pv-1", "1Gi", "RWO,RWX", "Delete", "Bound", "shop/data", "standard",
                                                  "<unset>", "", "10m", "Filesystem"]
    pvc = {"metadata": meta("data"), "spec": {"volumeName": "pv-1", "storageClassName": "standard"},
           "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]}}
    assert cells("persistentvolumeclaims", "", pvc) == ["data", "Bound", "pv-1", "1Gi", "RWO", "standard", "<unset>", "10m",
                                                        "<unset>"]
    pending = {"metadata": meta("p"), "spec": {}, "status": {"phase": "Pending"}}
    assert cells("persistentvolumeclaims", "", pending)[1:5] == ["Pending", "", "", ""]
    sc = {"metadata": meta("standard", annotations={"storageclass.kubernetes.io/is-default-class": "true"}),
          "provisioner": "sregym.io/local"}
    assert cells("storageclasses", "storage.k8s.io", sc) == ["standard (default)", "sregym.io/local", "Delete", "Immediate", False, "10m"]


def test_quota_and_limitrange() -> None:
    q = {"metadata": meta("q"), "status": {"hard": {"limits.cpu": "4", "pods": "10", "requests.memory": "2Gi"},
                                           "used": {"limits.cpu": "1500m", "pods": "3", "requests.memory": "512Mi"}}}
    assert cells("resourcequotas", "", q) == ["q", "pods: 3/10, requests.memory: 512Mi/2Gi", "limits.cpu: 1500m/4", "10m"]
    assert cells("limitranges", "", {"metadata": meta("lr")}) == ["lr", ts(600)]


def test_workload_cells() -> None:
    template = {"spec": {"containers": [{"name": "app", "image": "web:1"}, {"name": "log", "image": "fluent:2"}]}}
    deploy = {"metadata": meta("web"), "spec": {"replicas": 3, "template": template,
                                                "selector": {"matchLabels": {"app": "web"},
                                                             "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}]}},
              "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}}
    assert cells("deployments", "apps", deploy) == ["web", "2/3", 3, 2, "10m", "app,log", "web:1,fluent:2", "app=web,tier in (a,b)"]
    rs = {"metadata": meta("web-5d9"), "spec": {"replicas": 2, "template": template}, "status": {"replicas": 2, "readyReplicas": 1}}
    assert cells("replicasets", "apps", rs)[:4] == ["web-5d9", 2, 2, 1]
    sts = {"metadata": meta("db"), "spec": {"replicas": 3, "template": template}, "status": {"readyReplicas": 3}}
    assert cells("statefulsets", "apps", sts)[:3] == ["db", "3/3", "10m"]
    ds = {"metadata": meta("agent"), "spec": {"template": {"spec": {"nodeSelector": {"kubernetes.io/os": "linux"}, "containers": []}}},
          "status": {"desiredNumberScheduled": 2, "currentNumberScheduled": 2, "numberReady": 1, "updatedNumberScheduled": 2,
                     "numberAvailable": 1}}
    assert cells("daemonsets", "apps", ds)[:8] == ["agent", 2, 2, 1, 2, 1, "kubernetes.io/os=linux", "10m"]


def test_job_cells() -> None:
    job = {"metadata": meta("migrate"), "spec": {"completions": 1},
           "status": {"startTime": ts(300), "completionTime": ts(100), "succeeded": 1,
                      "conditions": [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]}}
    assert cells("jobs", "batch", job)[:5] == ["migrate", "Complete", "1/1", "3m20s", "10m"]
    running = {"metadata": meta("r"), "spec": {"parallelism": 3}, "status": {"startTime": ts(30)}}
    assert cells("jobs", "batch", running)[1:4] == ["Running", "0/1 of 3", "30s"]
    failed = {"metadata": meta("f"), "spec": {"completions": 2}, "status": {"conditions": [{"type": "Failed", "status": "True"}]}}
    assert cells("jobs", "batch", failed)[1:4] == ["Failed", "0/2", ""]
    suspended = {"metadata": meta("s"), "spec": {}, "status": {"conditions": [{"type": "Suspended", "status": "True"}]}}
    assert cells("jobs", "batch", suspended)[1] == "Suspended"


def test_cronjob_cells() -> None:
    cron = {"metadata": meta("backup"), "spec": {"schedule": "0 * * * *", "suspend": False,
                                                 "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "b", "image": "bk"}]}}}}},
            "status": {"active": [{"name": "backup-1"}], "lastScheduleTime": ts(125)}}
    assert cells("cronjobs", "batch", cron) == ["backup", "0 * * * *", "<none>", "False", 1, "2m5s", "10m", "b", "bk", "<none>"]
    assert cells("cronjobs", "batch", {"metadata": meta("n"), "spec": {}})[3:6] == ["<unset>", 0, "<none>"]


def test_hpa_targets() -> None:
    hpa = {"metadata": meta("web"), "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 1, "maxReplicas": 10,
                                             "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]},
           "status": {"currentReplicas": 2, "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 45, "averageValue": "90m"}}}]}}
    assert cells("horizontalpodautoscalers", "autoscaling", hpa) == ["web", "Deployment/web", "cpu: 45%/80%", "1", 10, 2, "10m"]
    del hpa["status"]["currentMetrics"]
    assert cells("horizontalpodautoscalers", "autoscaling", hpa)[2] == "cpu: <unknown>/80%"
    hpa["spec"]["metrics"] += [
        {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "512Mi"}}},
        {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "100"}}},
    ]
    assert cells("horizontalpodautoscalers", "autoscaling", hpa)[2] == "cpu: <unknown>/80%, memory: <unknown>/512Mi + 1 more..."
    v1 = {"metadata": meta("old"), "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 4,
                                            "targetCPUUtilizationPercentage": 50}, "status": {"currentCPUUtilizationPercentage": 20}}
    assert cells("horizontalpodautoscalers", "autoscaling", v1)[2:4] == ["cpu: 20%/50%", "<unset>"]
    none = {"metadata": meta("none"), "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "metrics": []}}
    assert cells("horizontalpodautoscalers", "autoscaling", none)[2] == "<none>"


def test_policy_network_rbac_cells() -> None:
    assert cells("networkpolicies", "networking.k8s.io", {"metadata": meta("deny"), "spec": {"podSelector": {}}})[1] == "<none>"
    np = {"metadata": meta("np"), "spec": {"podSelector": {"matchLabels": {"app": "db"}}}}
    assert cells("networkpolicies", "networking.k8s.io", np)[1] == "app=db"
    pdb = {"metadata": meta("pdb"), "spec": {"minAvailable": "50%"}, "status": {"disruptionsAllowed": 1}}
    assert cells("poddisruptionbudgets", "policy", pdb)[1:4] == ["50%", "N/A", 1]
    pc = {"metadata": meta("high"), "value": 1000, "globalDefault": True, "preemptionPolicy": "Never"}
    assert cells("priorityclasses", "scheduling.k8s.io", pc) == ["high", 1000, True, "10m", "Never"]
    ing = {"metadata": meta("ing"), "spec": {"ingressClassName": "nginx", "rules": [{"host": "a.example"}, {"host": "b.example"}],
                                             "tls": [{"hosts": ["a.example"]}]},
           "status": {"loadBalancer": {"ingress": [{"ip": "127.0.0.9"}]}}}
    assert cells("ingresses", "networking.k8s.io", ing) == ["ing", "nginx", "a.example,b.example", "127.0.0.9", "80, 443", "10m"]
    assert cells("ingresses", "networking.k8s.io", {"metadata": meta("i"), "spec": {}})[1:5] == ["<none>", "*", "", "80"]
    rb = {"metadata": meta("rb"), "roleRef": {"kind": "ClusterRole", "name": "view"},
          "subjects": [{"kind": "User", "name": "alice"}, {"kind": "ServiceAccount", "name": "ci", "namespace": "build"},
                       {"kind": "Group", "name": "devs"}]}
    assert cells("rolebindings", "rbac.authorization.k8s.io", rb) == ["rb", "ClusterRole/view", "10m", "alice", "devs", "build:ci"]
    assert cells("roles", "rbac.authorization.k8s.io", {"metadata": meta("r")}) == ["r", ts(600)]
    lease = {"metadata": meta("node-1"), "spec": {"holderIdentity": "node-1"}}
    assert cells("leases", "coordination.k8s.io", lease)[1] == "node-1"
    hook = {"metadata": meta("h"), "webhooks": [{"name": "a"}, {"name": "b"}]}
    assert cells("validatingwebhookconfigurations", "admissionregistration.k8s.io", hook)[1] == 2


def test_custom_resource_columns() -> None:
    crd = {"spec": {"versions": [{"name": "v1", "storage": True, "additionalPrinterColumns": [
        {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
        {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas", "priority": 1},
        {"name": "Tags", "type": "string", "jsonPath": ".spec.tags"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]}]}}
    obj = {"metadata": meta("w"), "spec": {"replicas": 3, "tags": ["a", "b"]},
           "status": {"phase": "Active", "conditions": [{"type": "Synced", "status": "False"}, {"type": "Ready", "status": "True"}]}}
    result = table("widgets", "example.com", obj, crd=crd)
    assert [(c["name"], c["type"], c["priority"]) for c in result["columnDefinitions"]] == [
        ("Name", "string", 0), ("Phase", "string", 0), ("Ready", "string", 0), ("Replicas", "integer", 1),
        ("Tags", "string", 0), ("Age", "date", 0),
    ]
    assert result["rows"][0]["cells"] == ["w", "Active", "True", 3, "[a b]", "10m"]
    missing = table("widgets", "example.com", {"metadata": meta("m")}, crd=crd)["rows"][0]["cells"]
    assert missing == ["m", None, None, None, None, "10m"]
    default = table("widgets", "example.com", obj, crd={"spec": {"versions": [{"name": "v1"}]}})
    assert [c["name"] for c in default["columnDefinitions"]] == ["Name", "Age"]
    assert default["rows"][0]["cells"] == ["w", "10m"]


def test_generic_fallback_and_descriptions() -> None:
    result = table("widgets", "example.com", {"metadata": meta("w", 90)})
    assert result["rows"][0]["cells"] == ["w", "90s"]
    definitions = table("pods", "")["columnDefinitions"]
    assert definitions[0]["description"].startswith("Name must be unique within a namespace")
    assert "podIP" in definitions[5]["description"] or definitions[5]["description"].startswith("podIP")


def test_set_semantics_and_overflow_rules() -> None:
    lb = {"metadata": meta("lb"), "spec": {"type": "LoadBalancer", "clusterIPs": ["127.43.0.2"], "ports": []},
          "status": {"loadBalancer": {"ingress": [{"ip": "127.0.0.9"}, {"hostname": "a.example"}, {"ip": "127.0.0.9"}]}}}
    assert cells("services", "", lb)[3] == "127.0.0.9,a.example"
    no_addresses = {"metadata": meta("ep"), "subsets": [{"ports": [{"port": 80}]}]}
    assert cells("endpoints", "", no_addresses)[1] == ""
    rules = [{"host": f"h{i}.example"} for i in range(3)] + [{}, {"host": "h9.example"}]
    ing = {"metadata": meta("ing"), "spec": {"rules": rules}}
    assert cells("ingresses", "networking.k8s.io", ing)[2] == "h0.example,h1.example,h2.example + 2 more..."
    rs = {"metadata": meta("rs"), "spec": {"replicas": 1, "template": {"spec": {"containers": []}}}}
    assert cells("replicasets", "apps", rs)[-1] == "<none>"
    assert cells("priorityclasses", "scheduling.k8s.io", {"metadata": meta("pc"), "value": 1})[-1] == ""
    crb = table("clusterrolebindings", "rbac.authorization.k8s.io")["columnDefinitions"]
    assert crb[3]["description"] == "Users in the clusterRoleBinding"
    assert [c["type"] for c in table("roles", "rbac.authorization.k8s.io")["columnDefinitions"]] == ["string", "date"]


def test_custom_resource_cell_types() -> None:
    crd = {"spec": {"versions": [{"name": "v1", "served": True, "storage": True, "additionalPrinterColumns": [
        {"name": "Ratio", "type": "number", "jsonPath": ".spec.ratio"},
        {"name": "Count", "type": "integer", "jsonPath": ".spec.count"},
        {"name": "On", "type": "boolean", "jsonPath": ".spec.on"},
        {"name": "Since", "type": "date", "jsonPath": ".status.since"},
    ]}]}}
    obj = {"metadata": meta("w"), "spec": {"ratio": 2, "count": 2.9, "on": "yes"}, "status": {"since": "not a date"}}
    assert table("widgets", "example.com", obj, crd=crd)["rows"][0]["cells"] == ["w", 2.0, 2, None, "<invalid>"]
