"""RBAC wiring: a workload's ServiceAccount lacks one permission it needs.

The scenario: a release moves the component's configuration loading into a ``config-sync`` init
container that reads the component's ConfigMap through the Kubernetes API with the pod's own
identity (the mounted ServiceAccount token, ``KUBERNETES_SERVICE_HOST``), as config syncers and
``k8s-wait-for``-style init containers do. The release ships a ServiceAccount and a Role for it,
but the Role grants what peer discovery needs (pods, endpoints) and not ``get`` on ConfigMaps: the
API server answers 403 Forbidden, the init container exits 1, and the new pods stay in
``Init:CrashLoopBackOff`` with the Forbidden message in the init container's log.

The fix is namespaced (Roles in the app's namespace are within the agent's rights): grant the
missing permission, or roll the release back.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from sregym_core.faultkit import function_fault, kube
from sregym_core.types import FaultSpec, TargetSelector

from . import ingress_users as users

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sregym_core.faults import FaultContext
    from sregym_core.types import Target

INIT = "config-sync"
VOLUME = "synced-config"
IMAGE = "python:3.12-slim"
WITH_CONFIG = TargetSelector(kinds=("Deployment",), requires=("config_map",),
                             exclude_roles=("workload-generator", "db:*", "cache:*"))

#: the init container: fetch the ConfigMap through the API as the pod's ServiceAccount, write its keys
SCRIPT = """\
import json, os, ssl, sys, urllib.error, urllib.request
sa = "/var/run/secrets/kubernetes.io/serviceaccount"
token = open(sa + "/token").read().strip()
namespace = open(sa + "/namespace").read().strip()
context = ssl.create_default_context(cafile=sa + "/ca.crt")
host, port = os.environ["KUBERNETES_SERVICE_HOST"], os.environ.get("KUBERNETES_SERVICE_PORT", "443")
name, target = os.environ["CONFIG_MAP"], os.environ["SYNC_DIR"]
request = urllib.request.Request(f"https://{host}:{port}/api/v1/namespaces/{namespace}/configmaps/{name}",
                                 headers={"Authorization": "Bearer " + token, "Accept": "application/json"})
try:
    with urllib.request.urlopen(request, context=context, timeout=20) as answer:
        data = json.load(answer).get("data") or {}
except urllib.error.HTTPError as error:
    status = json.loads(error.read() or b"{}")
    print(f"config-sync: Error from server ({status.get('reason', error.code)}): {status.get('message', error)}",
          file=sys.stderr, flush=True)
    sys.exit(1)
for key, value in data.items():
    with open(os.path.join(target, key), "w") as out:
        out.write(value)
print(f"config-sync: wrote {len(data)} key(s) of configmap {name} to {target}", flush=True)
"""


def _account(target: Target) -> str:
    return f"{target.component.name}-config-sync"


def _role(target: Target) -> str:
    return f"{target.component.name}-config-reader"


def _rbac_objects(ctx: FaultContext, target: Target) -> list[dict]:
    meta = {"namespace": ctx.namespace, "labels": {"app.kubernetes.io/part-of": target.app.name,
                                                   "app.kubernetes.io/component": target.component.name}}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": _account(target), **meta}},
        # what the release's author granted: peer discovery, not the ConfigMap read
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": _role(target), **meta},
         "rules": [{"apiGroups": [""], "resources": ["pods", "endpoints"], "verbs": ["get", "list", "watch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": _role(target), **meta},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": _role(target)},
         "subjects": [{"kind": "ServiceAccount", "name": _account(target), "namespace": ctx.namespace}]},
    ]


def inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    obj = kube.workload(ctx, target)
    spec = kube.pod_spec(obj)
    for item in _rbac_objects(ctx, target):
        kube.apply(ctx, item)
    path = "/etc/config-sync"  # beside the component's own config, never over a file the image has
    init = {"name": INIT, "image": IMAGE, "command": ["python3", "-c", SCRIPT],
            "env": [{"name": "CONFIG_MAP", "value": target.component.config_map}, {"name": "SYNC_DIR", "value": path}],
            "volumeMounts": [{"name": VOLUME, "mountPath": path}]}
    ops = [{"op": "add", "path": "/spec/template/spec/serviceAccountName", "value": _account(target)},
           {"op": "add", "path": "/spec/template/spec/initContainers" + ("/0" if spec.get("initContainers") else ""),
            "value": init if spec.get("initContainers") else [init]},
           {"op": "add", "path": "/spec/template/spec/volumes" + ("/-" if spec.get("volumes") else ""),
            "value": {"name": VOLUME, "emptyDir": {}} if spec.get("volumes") else [{"name": VOLUME, "emptyDir": {}}]}]
    # what a fix may grant beyond the release (baseline_preserved, over_granted): reading ConfigMaps, nothing more
    ctx.state.update(rbac_repair=[{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}])
    ctx.state.update(account=_account(target), role=_role(target), config_map=target.component.config_map, ops=ops,
                     original={k: spec.get(k) for k in ("serviceAccountName", "serviceAccount", "initContainers",
                                                        "volumes")})
    kube.patch(ctx, "deployment", target.component.name, ops, type="json")


def can_read(ctx: FaultContext, account: str, config_map: str) -> bool:
    """Whether ``account`` may get the ConfigMap: the API server's own answer (a SubjectAccessReview)."""
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
              "spec": {"user": f"system:serviceaccount:{ctx.namespace}:{account}",
                       "groups": ["system:serviceaccounts", f"system:serviceaccounts:{ctx.namespace}",
                                  "system:authenticated"],
                       "resourceAttributes": {"namespace": ctx.namespace, "verb": "get", "resource": "configmaps",
                                              "name": config_map}}}
    out = ctx.kubectl("create", "-f", "-", "-o", "json", input=json.dumps(review))
    return bool(json.loads(out).get("status", {}).get("allowed"))


def is_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    obj = kube.get(ctx, "deployment", target.component.name, missing_ok=True)
    if obj is None:
        return True  # deleting the workload is no fix
    spec = kube.pod_spec(obj)
    if not any(c.get("name") == INIT for c in spec.get("initContainers") or []):
        return False  # the release that needs the read was rolled back
    account = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
    config_map = ctx.state.get("config_map") or target.component.config_map
    assert config_map, f"{target.component.name} has no ConfigMap"  # WITH_CONFIG, the fault's selector, requires one
    return not can_read(ctx, account, config_map)


def fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    # grant the one permission the Role lacks, then let the stuck pods retry now rather than after their back-off
    kube.patch(ctx, "role", _role(target), [{"op": "add", "path": "/rules/-", "value": {
        "apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}}], type="json")
    kube.delete_pods(ctx, target)
    ctx.kubectl("rollout", "status", f"deployment/{target.component.name}", "-n", ctx.namespace, "--timeout=180s",
                check=False, timeout=200.0)
    users.wait_users_served(ctx, timeout_s=90.0)


def recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    if "ops" not in ctx.state:
        return
    obj = kube.get(ctx, "deployment", target.component.name, missing_ok=True)
    if obj is not None:
        spec = kube.pod_spec(obj)
        ops = []
        for key, value in ctx.state["original"].items():
            path = f"/spec/template/spec/{key}"
            if value is not None:
                ops.append({"op": "add", "path": path, "value": value})
            elif key in spec:
                ops.append({"op": "remove", "path": path})
        if ops:
            kube.patch(ctx, "deployment", target.component.name, ops, type="json")
    for kind, name in (("rolebinding", _role(target)), ("role", _role(target)), ("serviceaccount", _account(target))):
        kube.delete(ctx, kind, name)


VOCABULARY = (
    # the words of neighbouring mechanisms (a missing ServiceAccount, a hanging init container, revoked
    # database grants) are this one's when said of a Role, a ServiceAccount's rights or a 403
    "serviceaccount .. forbidden", "service account .. forbidden", "serviceaccount .. may not",
    "service account .. may not", "serviceaccount .. not allowed", "service account .. not allowed",
    "init container .. forbidden", "init container .. 403", "init container .. rbac", "init container .. reads",
    "init container .. configmap*", "init container .. through the kubernetes api", "as serviceaccount",
    "as service account", "serviceaccount .. configmap*", "service account .. configmap*", "role .. grant*",
    "grant* .. configmap*", "grants no", "role .. no .. rule",
    # a word of denial alone ("forbidden", "RBAC", "lacks a permission", "403") says neither which right nor on
    # what: it passes a sibling fault's text too (red-team round 11). Said with the ConfigMap or what reads it, it is
    # this mechanism
    "role .. configmap*", "configmap* .. role", "permission* .. configmap*", "configmap* .. permission*",
    "permission* .. config map*", "config map* .. permission*", "rbac .. configmap*", "rbac .. config map*",
    "forbidden .. configmap*", "configmap* .. forbidden", "forbidden .. config map*", "config map* .. forbidden",
    "403 .. configmap*", "configmap* .. 403", "403 .. config map*", "cannot get .. configmap*",
    "cannot get .. config map*", "cannot read .. configmap*", "cannot read .. config map*",
    "not allowed .. configmap*", "not allowed .. config map*", "not authorized .. configmap*",
    "unauthori* .. configmap*", "no .. rule .. configmap*", "denied .. configmap*", "denied .. config map*",
    "serviceaccount .. cannot", "service account .. cannot",
)

FAULTS: list[FaultSpec] = [
    function_fault(
        name="sa-missing-permission", summary="the workload's ServiceAccount lacks get on the ConfigMap it reads",
        layer="k8s", selector=WITH_CONFIG, resource_kind="Role",
        mechanism="the pod's ServiceAccount may not get ConfigMaps (its Role has no configmaps rule), so the "
                  "init container that reads the ConfigMap through the Kubernetes API gets 403 Forbidden and new "
                  "pods stay in Init:CrashLoopBackOff",
        inject=inject, is_present=is_present, recover=recover, reference_fix=fix,
        symptoms=("Init:CrashLoopBackOff", "Forbidden", "pods not ready"),
        keywords=("ServiceAccount", "Role", "RBAC", "Forbidden", "configmaps", INIT),
        values=lambda t, p, s: {"account": _account(t), "role": _role(t), "config_map": t.component.config_map},
        prose="{component}'s new config-sync init container reads ConfigMap {config_map} through the API as "
              "ServiceAccount {account}, but Role {role} grants no get on configmaps: the API server answers "
              "403 Forbidden and the new pods stay in Init:CrashLoopBackOff.",
        vocabulary=VOCABULARY,
    ),
]

__all__ = ["FAULTS", "can_read"]
