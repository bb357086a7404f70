"""Printers for cluster-plumbing kinds (API services, component statuses, CSI, flow control...)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sregym_cluster_embedded.apiserver.printers import build_table

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
CREATED = (NOW - timedelta(days=5)).strftime("%Y-%m-%dT%H:%M:%SZ")


def row(resource: str, group: str, obj: dict) -> list:
    obj.setdefault("metadata", {"name": "x", "creationTimestamp": CREATED})
    table = build_table(resource, group, [obj], now=NOW)
    assert len(table["rows"][0]["cells"]) == len(table["columnDefinitions"])
    return table["rows"][0]["cells"]


def header(resource: str, group: str) -> list[str]:
    return [c["name"] for c in build_table(resource, group, [], now=NOW)["columnDefinitions"]]


def test_api_service_availability() -> None:
    assert header("apiservices", "apiregistration.k8s.io") == ["Name", "Service", "Available", "Age"]
    metrics = {"metadata": {"name": "v1beta1.metrics.k8s.io", "creationTimestamp": CREATED},
               "spec": {"service": {"namespace": "kube-system", "name": "metrics-server"}},
               "status": {"conditions": [{"type": "Available", "status": "False", "reason": "MissingEndpoints"}]}}
    assert row("apiservices", "apiregistration.k8s.io", metrics) == [
        "v1beta1.metrics.k8s.io", "kube-system/metrics-server", "False (MissingEndpoints)", "5d"]
    local = {"spec": {}, "status": {"conditions": [{"type": "Available", "status": "True", "reason": "Local"}]}}
    assert row("apiservices", "apiregistration.k8s.io", local)[1:3] == ["Local", "True"]


def test_component_status() -> None:
    cs = {"conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]}
    assert row("componentstatuses", "", cs) == ["x", "Healthy", "ok", ""]
    assert row("componentstatuses", "", {})[1] == "Unknown"


def test_storage_and_node_plumbing() -> None:
    assert row("csidrivers", "storage.k8s.io", {"spec": {}}) == ["x", True, False, False, "<unset>", False, "<none>", "5d"]
    assert row("csinodes", "storage.k8s.io", {"spec": {"drivers": [{}, {}]}})[1] == 2
    va = {"spec": {"attacher": "csi.example", "nodeName": "node-1", "source": {"persistentVolumeName": "pv-1"}},
          "status": {"attached": True}}
    assert row("volumeattachments", "storage.k8s.io", va) == ["x", "csi.example", "pv-1", "node-1", True, "5d"]
    assert row("runtimeclasses", "node.k8s.io", {"handler": "runc"}) == ["x", "runc", "5d"]


def test_csr_and_flow_control() -> None:
    csr = {"spec": {"signerName": "kubernetes.io/kubelet-serving", "username": "system:node:n1", "expirationSeconds": 3600},
           "status": {"conditions": [{"type": "Approved"}], "certificate": "Zm9v"}}
    assert row("certificatesigningrequests", "certificates.k8s.io", csr) == [
        "x", "5d", "kubernetes.io/kubelet-serving", "system:node:n1", "60m", "Approved,Issued"]
    fs = {"spec": {"priorityLevelConfiguration": {"name": "workload-low"}, "matchingPrecedence": 9000,
                   "distinguisherMethod": {"type": "ByUser"}},
          "status": {"conditions": [{"type": "Dangling", "status": "False"}]}}
    assert row("flowschemas", "flowcontrol.apiserver.k8s.io", fs) == ["x", "workload-low", 9000, "ByUser", "5d", "False"]
    pl = {"spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 30,
                                                  "limitResponse": {"queuing": {"queues": 64, "handSize": 6, "queueLengthLimit": 50}}}}}
    assert row("prioritylevelconfigurations", "flowcontrol.apiserver.k8s.io", pl) == ["x", "Limited", 30, 64, 6, 50, "5d"]
    exempt = {"spec": {"type": "Exempt"}}
    assert row("prioritylevelconfigurations", "flowcontrol.apiserver.k8s.io", exempt)[2:6] == ["<none>"] * 4


def test_networking_and_policies() -> None:
    assert row("servicecidrs", "networking.k8s.io", {"spec": {"cidrs": ["127.43.0.0/16"]}}) == ["x", "127.43.0.0/16", "5d"]
    ip = {"spec": {"parentRef": {"group": "", "resource": "services", "namespace": "default", "name": "web"}}}
    assert row("ipaddresses", "networking.k8s.io", ip) == ["x", "services/default/web"]
    policy = {"spec": {"validations": [{}, {}], "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}}}
    assert row("validatingadmissionpolicies", "admissionregistration.k8s.io", policy)[1:3] == [2, "v1/ConfigMap"]
    binding = {"spec": {"policyName": "p", "paramRef": {"name": "cfg"}}}
    assert row("validatingadmissionpolicybindings", "admissionregistration.k8s.io", binding)[1:3] == ["p", "*/cfg"]
