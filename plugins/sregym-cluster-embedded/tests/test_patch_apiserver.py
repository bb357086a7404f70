"""Patch, protobuf and OpenAPI code wired into the real embedded API server, driven by kubectl."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow


def _get(kubectl: Any, namespace: str, what: str) -> dict[str, Any]:
    return json.loads(kubectl("get", what, "-n", namespace, "-o", "json").stdout)


def test_protobuf_creates_round_trip(kubectl: Any, namespace: str) -> None:
    ns = ["-n", namespace]
    kubectl("create", "configmap", "cm1", "--from-literal=a=b", *ns)
    kubectl("create", "secret", "generic", "s1", "--from-literal=pw=p@ss", *ns)
    kubectl("create", "deployment", "idle", "--image=nginx:1.25", "--replicas=0", "--port=80", *ns)
    kubectl("create", "cronjob", "cj", "--image=busybox", "--schedule=*/5 * * * *", *ns, "--", "date")
    kubectl("create", "role", "reader", "--verb=get,list", "--resource=pods", *ns)
    kubectl("create", "quota", "q", "--hard=pods=10", *ns)
    kubectl("create", "pdb", "pdb", "--selector=app=idle", "--max-unavailable=50%", *ns)
    assert _get(kubectl, namespace, "configmap/cm1")["data"] == {"a": "b"}
    assert _get(kubectl, namespace, "secret/s1")["data"] == {"pw": "cEBzcw=="}
    deployment = _get(kubectl, namespace, "deployment/idle")
    assert deployment["spec"]["replicas"] == 0
    assert deployment["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] == 80
    cronjob = _get(kubectl, namespace, "cronjob/cj")
    assert cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["command"] == ["date"]
    assert _get(kubectl, namespace, "role/reader")["rules"][0]["verbs"] == ["get", "list"]
    assert _get(kubectl, namespace, "pdb/pdb")["spec"]["maxUnavailable"] == "50%"
    assert kubectl("auth", "can-i", "create", "pods", *ns).stdout.strip() == "yes"


def test_strategic_patches_from_kubectl(kubectl: Any, namespace: str, tmp_path: Path) -> None:
    ns = ["-n", namespace]
    manifest = tmp_path / "web.yaml"
    manifest.write_text(
        f"""apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: {namespace}}}
spec:
  replicas: 0
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers:
      - {{name: web, image: "nginx:1.25", env: [{{name: A, value: "1"}}, {{name: B, value: "2"}}]}}
      - {{name: side, image: busybox}}
"""
    )
    kubectl("apply", "-f", str(manifest))
    kubectl("set", "image", "deployment/web", "web=nginx:1.26", *ns)
    kubectl("set", "env", "deployment/web", "-c", "web", "C=3", *ns)
    containers = _get(kubectl, namespace, "deployment/web")["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["web", "side"]
    assert containers[0]["image"] == "nginx:1.26"
    assert [(e["name"], e["value"]) for e in containers[0]["env"]] == [("A", "1"), ("B", "2"), ("C", "3")]

    manifest.write_text(manifest.read_text().replace(', {name: B, value: "2"}', ""))
    kubectl("apply", "-f", str(manifest))
    env = _get(kubectl, namespace, "deployment/web")["spec"]["template"]["spec"]["containers"][0]["env"]
    assert [e["name"] for e in env] == ["A", "C"]  # B removed by the 3-way diff; C (set by `set env`) kept

    proc = kubectl("patch", "deployment", "web", *ns, "-p", '{"spec":{"template":{"spec":{"containers":[{"image":"x"}]}}}}', check=False)
    assert proc.returncode != 0
    assert "does not contain declared merge key: name" in proc.stderr


def test_explain_uses_real_schemas(kubectl: Any) -> None:
    out = kubectl("explain", "deployment.spec.strategy").stdout
    assert "FIELD: strategy <DeploymentStrategy>" in out
    assert "rollingUpdate\t<RollingUpdateDeployment>" in out
