"""End to end: the real kubectl prints our Tables, defaults and admission errors as on a real cluster."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

pytestmark = pytest.mark.slow

POD = """
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: app
    image: nginx:1.25
    ports:
    - containerPort: 80
    resources:
      limits: {cpu: 200m, memory: 64Mi}
  - name: sidecar
    image: busybox
"""


def columns(output: str) -> list[list[str]]:
    """Split kubectl's table output on runs of 2+ spaces."""
    import re

    return [re.split(r"\s{2,}", line.strip()) for line in output.strip().splitlines()]


def test_pod_table_defaults_and_status(kubectl, namespace: str) -> None:
    kubectl("apply", "-n", namespace, "-f", "-", input=POD)
    pod = json.loads(kubectl("get", "pod", "web", "-n", namespace, "-o", "json").stdout)
    spec = pod["spec"]
    assert spec["dnsPolicy"] == "ClusterFirst" and spec["terminationGracePeriodSeconds"] == 30
    assert spec["containers"][0]["ports"][0]["protocol"] == "TCP"
    assert spec["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert spec["containers"][1]["imagePullPolicy"] == "Always"
    assert spec["containers"][0]["resources"]["requests"] == {"cpu": "200m", "memory": "64Mi"}

    finished = (datetime.now(UTC) - timedelta(seconds=20)).strftime("%Y-%m-%dT%H:%M:%SZ")
    status = {"status": {"phase": "Running", "podIP": "127.42.0.7", "podIPs": [{"ip": "127.42.0.7"}],
                         "conditions": [{"type": "Ready", "status": "False"}],
                         "containerStatuses": [
                             {"name": "app", "ready": True, "restartCount": 0, "image": "nginx:1.25", "imageID": "",
                              "state": {"running": {"startedAt": finished}}},
                             {"name": "sidecar", "ready": False, "restartCount": 4, "image": "busybox", "imageID": "",
                              "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                              "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": finished}}}]}}
    kubectl("patch", "pod", "web", "-n", namespace, "--subresource=status", "--type=merge", "-p", json.dumps(status))

    rows = columns(kubectl("get", "pods", "-n", namespace).stdout)
    assert rows[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    name, ready, state, restarts, _age = rows[1]
    assert (name, ready, state) == ("web", "1/2", "CrashLoopBackOff")
    assert restarts.startswith("4 (") and restarts.endswith("s ago)")

    wide = columns(kubectl("get", "pods", "-n", namespace, "-o", "wide").stdout)
    assert wide[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED NODE", "READINESS GATES"]
    assert wide[1][5:] == ["127.42.0.7", "<none>", "<none>", "<none>"]


def test_deployment_and_service_tables(kubectl, namespace: str) -> None:
    kubectl("create", "deployment", "shop", "--image=nginx:1.25", "--replicas=2", "-n", namespace)
    kubectl("create", "service", "clusterip", "shop", "--tcp=80:8080", "-n", namespace)
    deploy = json.loads(kubectl("get", "deployment", "shop", "-n", namespace, "-o", "json").stdout)
    assert deploy["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": "25%", "maxUnavailable": "25%"}
    assert deploy["spec"]["revisionHistoryLimit"] == 10
    rows = columns(kubectl("get", "deployment", "shop", "-n", namespace, "-o", "wide").stdout)
    assert rows[0] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    assert rows[1][0] == "shop" and rows[1][1].endswith("/2") and rows[1][5:] == ["nginx", "nginx:1.25", "app=shop"]
    svc = columns(kubectl("get", "service", "shop", "-n", namespace).stdout)
    assert svc[0] == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    assert svc[1][1] == "ClusterIP" and svc[1][3:5] == ["<none>", "80/TCP"]


def test_quota_and_limit_range_admission(kubectl, namespace: str) -> None:
    kubectl("create", "quota", "q", "--hard=pods=1", "-n", namespace)
    kubectl("run", "one", "--image=nginx:1.25", "-n", namespace)
    refused = kubectl("run", "two", "--image=nginx:1.25", "-n", namespace, check=False)
    assert refused.returncode != 0
    assert 'pods "two" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1' in refused.stderr
    quota_rows = columns(kubectl("get", "quota", "-n", namespace).stdout)
    assert quota_rows[0] == ["NAME", "REQUEST", "LIMIT", "AGE"]
    assert quota_rows[1][1] == "pods: 1/1"


def test_events_and_limit_range(kubectl, namespace: str) -> None:
    seen = (datetime.now(UTC) - timedelta(seconds=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    event = {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "web.17a1b2c3d4e5f6a7", "namespace": namespace},
        "involvedObject": {"kind": "Pod", "name": "web", "namespace": namespace, "fieldPath": "spec.containers{app}"},
        "reason": "BackOff", "message": "Back-off restarting failed container app in pod web", "type": "Warning",
        "source": {"component": "kubelet", "host": "node-1"}, "count": 7,
        "firstTimestamp": seen, "lastTimestamp": seen,
    }
    kubectl("create", "-n", namespace, "-f", "-", input=json.dumps(event))
    rows = columns(kubectl("get", "events", "-n", namespace).stdout)
    assert rows[0] == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert rows[1][1:] == ["Warning", "BackOff", "pod/web", "Back-off restarting failed container app in pod web"]
    wide = columns(kubectl("get", "events", "-n", namespace, "-o", "wide").stdout)
    assert wide[0][4:6] == ["SUBOBJECT", "SOURCE"] and wide[1][-2:] == ["7", "web.17a1b2c3d4e5f6a7"]

    limits = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "defaults"},
              "spec": {"limits": [{"type": "Container", "default": {"cpu": "500m", "memory": "256Mi"},
                                   "defaultRequest": {"cpu": "100m"}}]}}
    kubectl("create", "-n", namespace, "-f", "-", input=json.dumps(limits))
    assert columns(kubectl("get", "limitrange", "-n", namespace).stdout)[0] == ["NAME", "CREATED AT"]
    kubectl("run", "lr", "--image=nginx:1.25", "-n", namespace)
    pod = json.loads(kubectl("get", "pod", "lr", "-n", namespace, "-o", "json").stdout)
    assert pod["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "100m", "memory": "256Mi"}}
    assert pod["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu, memory request for container lr; cpu, memory limit for container lr")


def test_hpa_cronjob_and_priority_class_tables(kubectl, namespace: str) -> None:
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 5}}
    kubectl("create", "-n", namespace, "-f", "-", input=json.dumps(hpa))
    rows = columns(kubectl("get", "hpa", "-n", namespace).stdout)
    assert rows[0] == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]
    assert rows[1][1:6] == ["Deployment/web", "cpu: <unknown>/80%", "1", "5", "0"]
    kubectl("create", "cronjob", "backup", "--image=busybox:1.36", "--schedule=*/5 * * * *", "-n", namespace)
    cron = columns(kubectl("get", "cronjob", "backup", "-n", namespace).stdout)
    assert cron[0] == ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE"]
    assert cron[1][1:6] == ["*/5 * * * *", "<none>", "False", "0", "<none>"]
    name = f"pc-{namespace}"[:60]
    kubectl("create", "priorityclass", name, "--value=1000", "--description=test")
    try:
        pc = columns(kubectl("get", "priorityclass", name).stdout)
        assert pc[0] == ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]
        assert pc[1][1:3] == ["1000", "false"] and pc[1][4] == "PreemptLowerPriority"
    finally:
        kubectl("delete", "priorityclass", name, check=False)
