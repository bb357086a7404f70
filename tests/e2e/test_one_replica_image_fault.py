"""Why a one-replica Deployment needs ``maxSurge: 0`` for an image fault to show (the note in
docs/plugin-hooks.md, "The fault contract kit"): with Kubernetes' default rolling update (25 % surge,
25 % unavailable: one extra pod, none down) the pod with the broken image is started *beside* the
old one, which keeps serving, so users see nothing; with ``maxSurge: 0, maxUnavailable: 1`` the old
pod goes first and the broken one is all there is. Real kubectl against the embedded cluster."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

KUBECTL = str(Path(sys.executable).parent / "kubectl")  # the pinned kubectl of sregym-core[run]
NAMESPACE = "surge-check"
IN_PLACE = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}


def kubectl(cluster, *args: str, input: str | None = None) -> str:
    proc = subprocess.run([KUBECTL, "--kubeconfig", str(cluster.kubeconfig), *args], input=input,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def deployment(name: str, strategy: dict | None) -> dict:
    spec = {"replicas": 1, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {
                "terminationGracePeriodSeconds": 1,
                "containers": [{"name": "main", "image": "busybox:1.36", "command": ["sh", "-c", "sleep 3600"]}]}}}
    if strategy:
        spec["strategy"] = strategy
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": spec}


def pods(cluster, name: str) -> list[dict]:
    items = json.loads(kubectl(cluster, "get", "pods", "-n", NAMESPACE, "-l", f"app={name}", "-o", "json"))["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def waiting_reason(pod: dict) -> str:
    for status in pod.get("status", {}).get("containerStatuses") or []:
        return ((status.get("state") or {}).get("waiting") or {}).get("reason", "")
    return ""


def ready(pod: dict) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod.get("status", {}).get("conditions") or [])


def wait_for(check, what: str, timeout: float = 120.0):
    deadline = time.monotonic() + timeout  # a hang guard only: the test waits for the event
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.5)
    pytest.fail(f"timed out waiting for {what}")


def break_image(cluster, name: str, strategy: dict | None) -> list[dict]:
    """Deploy one replica, wait until it serves, set an image that does not exist; the pods once the
    broken pod shows its pull error."""
    kubectl(cluster, "apply", "-f", "-", input=json.dumps(deployment(name, strategy)))
    wait_for(lambda: any(ready(p) for p in pods(cluster, name)), f"{name} to be ready")
    kubectl(cluster, "set", "image", f"deployment/{name}", "main=nosuch/busybox:404", "-n", NAMESPACE)

    def pull_failed() -> list[dict] | None:
        now = pods(cluster, name)
        return now if any(waiting_reason(p) in ("ErrImagePull", "ImagePullBackOff") for p in now) else None

    return wait_for(pull_failed, f"{name}'s new pod to fail pulling its image")


@pytest.fixture
def cluster(embedded_cluster):
    kubectl(embedded_cluster, "create", "namespace", NAMESPACE)
    yield embedded_cluster
    kubectl(embedded_cluster, "delete", "namespace", NAMESPACE, "--wait=false")


def test_default_surge_keeps_the_old_pod_serving_and_in_place_does_not(cluster):
    surge = break_image(cluster, "surge", None)
    assert [p for p in surge if ready(p) and p["spec"]["containers"][0]["image"] == "busybox:1.36"], (
        "with the default surge the old pod should still serve beside the broken one", surge)

    in_place = break_image(cluster, "in-place", IN_PLACE)
    assert not [p for p in in_place if p["spec"]["containers"][0]["image"] == "busybox:1.36"], in_place
    assert not [p for p in in_place if ready(p)], "the broken pod is all there is: nothing serves"
