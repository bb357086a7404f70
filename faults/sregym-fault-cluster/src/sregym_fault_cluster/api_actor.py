"""An in-cluster actor: a CronJob whose pod talks to the API server with its own ServiceAccount.

Several cluster faults plant one (the memory "rebalance" job, the certificate sync job): a
ServiceAccount, a Role with exactly the rules the job needs, the RoleBinding between them, and a
CronJob that runs every minute and never overlaps itself (``concurrencyPolicy: Forbid``). They
differ only in the rules, the containers and how often a failed run is retried; the bundle and its
removal live here once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sregym_core.faults import FaultContext

IMAGE = "python:3.12-slim"

#: the start of every actor script: the pod's token, namespace and CA, and the API server's URL
API_PRELUDE = """\
import json, os, ssl, urllib.request
sa = "/var/run/secrets/kubernetes.io/serviceaccount"
token = open(sa + "/token").read().strip()
namespace = open(sa + "/namespace").read().strip()
context = ssl.create_default_context(cafile=sa + "/ca.crt")
base = f"https://{os.environ['KUBERNETES_SERVICE_HOST']}:{os.environ.get('KUBERNETES_SERVICE_PORT', '443')}"
"""

BUNDLE_KINDS = ("rolebinding", "role", "serviceaccount")


def label_selector(name: str) -> str:
    return f"app.kubernetes.io/name={name}"


def container(name: str, script: str, env: dict[str, str] | None = None) -> dict:
    """A container running ``script`` (after :data:`API_PRELUDE` when it calls the API) with ``env``."""
    out: dict[str, Any] = {"name": name, "image": IMAGE, "command": ["python3", "-c", script]}
    if env:
        out["env"] = [{"name": key, "value": value} for key, value in env.items()]
    return out


def actor_objects(namespace: str, name: str, *, rules: list[dict], containers: list[dict],
                  backoff_limit: int = 0) -> list[dict]:
    """ServiceAccount, Role (``rules``), RoleBinding and the every-minute Forbid CronJob, all named ``name``."""
    meta = {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/name": name}}
    pod_spec = {"serviceAccountName": name, "restartPolicy": "Never", "containers": containers}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta, "rules": rules},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta,
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
         "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]},
        {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta,
         "spec": {"schedule": "* * * * *", "concurrencyPolicy": "Forbid", "successfulJobsHistoryLimit": 1,
                  "failedJobsHistoryLimit": 1,
                  "jobTemplate": {"spec": {"backoffLimit": backoff_limit, "template": {
                      "metadata": {"labels": {"app.kubernetes.io/name": name}}, "spec": pod_spec}}}}},
    ]


def delete_jobs(ctx: FaultContext, name: str) -> None:
    """Every Job the actor's CronJob made (or was made from it by hand), without waiting."""
    ctx.kubectl("delete", "jobs", "-n", ctx.namespace, "-l", label_selector(name), "--ignore-not-found",
                "--wait=false")


def remove_actor(ctx: FaultContext, name: str) -> None:
    """The CronJob, its Jobs, and the ServiceAccount, Role and RoleBinding, as they were before the fault."""
    ctx.kubectl("delete", "cronjob", name, "-n", ctx.namespace, "--ignore-not-found", "--wait=false")
    delete_jobs(ctx, name)
    for kind in BUNDLE_KINDS:
        ctx.kubectl("delete", kind, name, "-n", ctx.namespace, "--ignore-not-found", "--wait=false")
