"""Finalizer deadlock: a controller that guards a ConfigMap loses its write rights mid-rotation.

The scenario: the namespace runs ``config-guardian``, a small controller (a Deployment with its own
ServiceAccount and Role) that owns the component's runtime settings ConfigMap
(``<component>-settings``). It creates it, immutable, from its source of truth (the
``config-guardian-sources`` ConfigMap), puts its finalizer on it and, when it is deleted, saves the
old data to ``<component>-settings-previous`` (the rollback copy) before removing the finalizer;
the next round creates it afresh from the source. A rotation is therefore: edit the source, delete
the live ConfigMap, roll the component.

The fault: an RBAC "hardening" pass leaves the guardian's Role read-only (get/list/watch), then a
rotation runs. It adds a ``request-timeout`` key to the source, deletes ``<component>-settings``
and rolls the component with a new ``REQUEST_TIMEOUT`` variable read from that key. The guardian
can neither save the rollback copy nor remove its finalizer (403 Forbidden in its log). The old
ConfigMap stays Terminating, and creating the new one fails with ``object is being deleted``. The
component's new pods stay in ``CreateContainerConfigError`` (``couldn't find key request-timeout``):
the rollout never completes. Its old pod keeps serving.

The fix restores the Role's verbs. The guardian then saves the copy, removes its finalizer and
creates the new ConfigMap, and the rollout completes. Removing the finalizer by hand and creating
the rotated ConfigMap from the source clears this rotation's symptoms but is no fix: the guardian
still may not write ConfigMaps, so the next rotation deadlocks the same way (red-team round 9,
finding 4). The fault is present while the rotation is stuck, and while the guardian, as deployed,
may not do what a rotation asks of it: the API server's own answer (SubjectAccessReviews for its
ServiceAccount), so that a new Role, a ClusterRole binding or the old Role restored all count.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from sregym_core.errors import PermanentFaultError
from sregym_core.faultkit import function_fault, kube, schema
from sregym_core.types import FaultSpec, TargetSelector

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sregym_core.faults import FaultContext
    from sregym_core.types import Target

NAME = "config-guardian"
FINALIZER = "config-guardian.sregym.io/cleanup"
SOURCES = f"{NAME}-sources"
MANAGED_LABEL = "config-guardian.sregym.io/managed"
IMAGE = "python:3.12-slim"
KEY, ENV = "request-timeout", "REQUEST_TIMEOUT"
SELECTOR = TargetSelector(kinds=("Deployment",), exclude_roles=("workload-generator", "db:*", "cache:*"))
ALL_VERBS = ["get", "list", "watch", "create", "update", "patch", "delete"]
READ_ONLY = ["get", "list", "watch"]
#: what one rotation asks of the guardian: read, save the rollback copy (create, or update when it exists),
#: remove its finalizer (patch), create the rotated ConfigMap (create)
ROTATION_VERBS = ("get", "create", "update", "patch")

#: the controller: one reconcile round every few seconds over the ConfigMaps its sources name
SCRIPT = """\
import json, os, ssl, sys, time, urllib.error, urllib.request
sa = "/var/run/secrets/kubernetes.io/serviceaccount"
token = open(sa + "/token").read().strip()
namespace = open(sa + "/namespace").read().strip()
context = ssl.create_default_context(cafile=sa + "/ca.crt")
base = (f"https://{os.environ['KUBERNETES_SERVICE_HOST']}:{os.environ.get('KUBERNETES_SERVICE_PORT', '443')}"
        f"/api/v1/namespaces/{namespace}/configmaps")
FINALIZER, SOURCES, LABEL = os.environ["FINALIZER"], os.environ["SOURCES"], os.environ["LABEL"]
said = {}

def log(text):
    print(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "config-guardian:", text, flush=True)

def call(method, name="", body=None, kind="application/json"):
    request = urllib.request.Request(base + (f"/{name}" if name else ""), method=method,
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Authorization": "Bearer " + token, "Content-Type": kind})
    try:
        with urllib.request.urlopen(request, context=context, timeout=20) as answer:
            return json.load(answer)
    except urllib.error.HTTPError as error:
        status = json.loads(error.read() or b"{}")
        raise RuntimeError(f"{status.get('reason', error.code)}: {status.get('message', error)}") from None

def failed(name, action, error):
    text = f"error: {action} configmap {name}: {error}"
    if said.get(name) != text or time.monotonic() - said.get(name + "@", 0) > 30:
        log(text)
        said[name], said[name + "@"] = text, time.monotonic()

def reconcile(name, data):
    try:
        live = call("GET", name)
    except RuntimeError as error:
        if not str(error).startswith("NotFound"):
            return failed(name, "get", error)
        try:
            call("POST", body={"apiVersion": "v1", "kind": "ConfigMap", "immutable": True, "data": data,
                               "metadata": {"name": name, "labels": {LABEL: "true"}, "finalizers": [FINALIZER]}})
            log(f"created configmap {name} ({len(data)} keys) from {SOURCES}")
        except RuntimeError as error:
            failed(name, "create", error)
        return
    finalizers = live["metadata"].get("finalizers") or []
    if live["metadata"].get("deletionTimestamp"):
        if FINALIZER not in finalizers:
            return
        copy = {"apiVersion": "v1", "kind": "ConfigMap", "data": live.get("data") or {},
                "metadata": {"name": name + "-previous", "labels": {LABEL: "rollback"}}}
        try:
            try:
                call("POST", body=copy)
            except RuntimeError as error:
                if not str(error).startswith("AlreadyExists"):
                    raise
                call("PUT", name + "-previous", copy)
            call("PATCH", name, {"metadata": {"finalizers": [f for f in finalizers if f != FINALIZER] or None,
                                              "resourceVersion": live["metadata"]["resourceVersion"]}},
                 "application/merge-patch+json")
            log(f"saved {name}-previous and released configmap {name}")
        except RuntimeError as error:
            failed(name, "release", error)
        return
    if FINALIZER not in finalizers:
        try:
            call("PATCH", name, {"metadata": {"finalizers": finalizers + [FINALIZER]}}, "application/merge-patch+json")
            log(f"guarding configmap {name}")
        except RuntimeError as error:
            failed(name, "guard", error)

log("started")
while True:
    try:
        sources = call("GET", SOURCES).get("data") or {}
        for name, text in sorted(sources.items()):
            reconcile(name, json.loads(text))
    except Exception as error:
        failed(SOURCES, "read", error)
    time.sleep(3)
"""


def settings_name(target: Target) -> str:
    return f"{target.component.name}-settings"


def _meta(ctx: FaultContext, name: str) -> dict:
    return {"name": name, "namespace": ctx.namespace, "labels": {"app.kubernetes.io/name": NAME}}


def _role(ctx: FaultContext, verbs: list[str]) -> dict:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": _meta(ctx, NAME),
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": verbs}]}


def _objects(ctx: FaultContext) -> list[dict]:
    labels = {"app.kubernetes.io/name": NAME}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(ctx, NAME)},
        _role(ctx, ALL_VERBS),
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": _meta(ctx, NAME),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": NAME},
         "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": ctx.namespace}]},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(ctx, NAME),
         "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                  "template": {"metadata": {"labels": labels},
                               "spec": {"serviceAccountName": NAME, "terminationGracePeriodSeconds": 2,
                                        "containers": [{"name": "controller", "image": IMAGE,
                                                        "command": ["python3", "-u", "-c", SCRIPT],
                                                        "env": [{"name": "FINALIZER", "value": FINALIZER},
                                                                {"name": "SOURCES", "value": SOURCES},
                                                                {"name": "LABEL", "value": MANAGED_LABEL}]}]}}}},
    ]


def _sources(ctx: FaultContext, name: str, data: dict) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(ctx, SOURCES),
            "data": {name: json.dumps(data, sort_keys=True)}}


def _live(ctx: FaultContext, name: str) -> dict | None:
    return kube.get(ctx, "configmap", name, missing_ok=True)


def inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    name = settings_name(target)
    obj = kube.workload(ctx, target)
    index = kube.container_index(obj, target.component.container_name)
    first = {"revision": "1", "log-format": "json"}
    rotated = {**first, "revision": "2", KEY: params["request_timeout"]}
    ctx.state.update(settings=name, container=index, rotated=rotated,
                     env=kube.pod_spec(obj)["containers"][index].get("env"))
    kube.apply(ctx, _sources(ctx, name, first))
    for item in _objects(ctx):
        kube.apply(ctx, item)
    guarded = lambda: FINALIZER in ((_live(ctx, name) or {}).get("metadata", {}).get("finalizers") or [])  # noqa: E731
    if not kube.wait_until(guarded, timeout=150.0, interval=2.0):
        raise PermanentFaultError(f"{NAME} did not create and guard configmap {name} within 150 s",
                                  hints=(f"kubectl logs -n {ctx.namespace} deploy/{NAME}",))
    # the hardening pass: the guardian keeps only read access (what it took away is all a fix may grant back:
    # baseline_preserved, over_granted)
    ctx.state.update(rbac_repair=_role(ctx, ALL_VERBS)["rules"])
    kube.apply(ctx, _role(ctx, READ_ONLY))
    # the rotation, as the runbook says: new source, delete the live ConfigMap, roll the component
    kube.apply(ctx, _sources(ctx, name, rotated))
    ctx.kubectl("delete", "configmap", name, "-n", ctx.namespace, "--wait=false")
    variable = {"name": ENV, "valueFrom": {"configMapKeyRef": {"name": name, "key": KEY}}}
    path = f"/spec/template/spec/containers/{index}/env"
    kube.patch(ctx, "deployment", target.component.name,
               [{"op": "add", "path": path + ("/-" if ctx.state["env"] else ""),
                 "value": variable if ctx.state["env"] else [variable]}], type="json")


def _rotated(ctx: FaultContext) -> bool:
    """The settings ConfigMap is live (not being deleted) and carries the rotated key."""
    live = _live(ctx, ctx.state["settings"])
    return live is not None and not live["metadata"].get("deletionTimestamp") and KEY in (live.get("data") or {})


def _stuck(ctx: FaultContext) -> bool:
    """The settings ConfigMap is being deleted and still carries the guardian's finalizer."""
    meta = (_live(ctx, ctx.state["settings"]) or {}).get("metadata") or {}
    return bool(meta.get("deletionTimestamp")) and FINALIZER in (meta.get("finalizers") or [])


def _needs_rotated(ctx: FaultContext, target: Target) -> bool:
    """The component's pod template reads the rotated key (the rotation's rollout is in place)."""
    obj = kube.get(ctx, "deployment", target.component.name, missing_ok=True)
    if obj is None:
        return True  # deleting the workload is no fix
    refs = [((e.get("valueFrom") or {}).get("configMapKeyRef") or {}) for c in kube.pod_spec(obj)["containers"]
            for e in c.get("env") or []]
    return any(r.get("name") == ctx.state["settings"] and r.get("key") == KEY for r in refs)


#: rights the guardian never had and a rotation never needs: a repair that grants it any of them (binding its account
#: to the agent's own ClusterRole, red-team round 10, 5b) leaves a controller that reads Secrets, grants roles and
#: starts pods: a new incident, not the fix
OVERREACH = (("get", "", "secrets"), ("create", "rbac.authorization.k8s.io", "rolebindings"), ("create", "", "pods"))


def may(ctx: FaultContext, account: str, verb: str, resource: str = "configmaps", group: str = "") -> bool:
    """Whether ServiceAccount ``account`` may ``verb`` ``resource`` (ConfigMaps) in the namespace: the API server's
    own answer (a SubjectAccessReview), whatever grants it (a Role, a ClusterRole, several bindings)."""
    attributes = {"namespace": ctx.namespace, "verb": verb, "resource": resource, **({"group": group} if group else {})}
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
              "spec": {"user": f"system:serviceaccount:{ctx.namespace}:{account}",
                       "groups": ["system:serviceaccounts", f"system:serviceaccounts:{ctx.namespace}",
                                  "system:authenticated"],
                       "resourceAttributes": attributes}}
    out = ctx.kubectl("create", "-f", "-", "-o", "json", input=json.dumps(review))
    return bool(json.loads(out).get("status", {}).get("allowed"))


def guardian_can_rotate(ctx: FaultContext) -> bool:
    """The guardian runs (its Deployment exists with a replica), its ServiceAccount may do all a rotation
    asks of it (:data:`ROTATION_VERBS`) and none of what it never needs (:data:`OVERREACH`). Deleting or scaling the controller away while its sources stay is no
    fix either: the next rotation's ConfigMap would never be created. With the controller and its sources both
    gone (what recover leaves) nothing guards a ConfigMap any more, so nothing can deadlock."""
    obj = kube.get(ctx, "deployment", NAME, missing_ok=True)
    if obj is None:
        return _live(ctx, SOURCES) is None
    if (obj.get("spec") or {}).get("replicas", 1) == 0:
        return False
    account = _account(obj)
    return all(may(ctx, account, verb) for verb in ROTATION_VERBS) and not any(
        may(ctx, account, verb, resource, group) for verb, group, resource in OVERREACH)


def _account(deployment: dict) -> str:
    spec = kube.pod_spec(deployment)
    return spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"


def is_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    # this rotation's state: a deletion stuck on the finalizer, or a rollout waiting for a ConfigMap that is not
    # there (rolling the component back leaves the stuck deletion: still present); and the root cause: the
    # guardian may not write ConfigMaps, so with the finalizer removed and the ConfigMap made by hand the next
    # rotation deadlocks again (red-team round 9, finding 4)
    return _stuck(ctx) or (_needs_rotated(ctx, target) and not _rotated(ctx)) or not guardian_can_rotate(ctx)


def fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    kube.apply(ctx, _role(ctx, ALL_VERBS))
    if not kube.wait_until(lambda: _rotated(ctx), timeout=90.0, interval=2.0):
        raise PermanentFaultError(f"{NAME} did not recreate configmap {ctx.state['settings']} within 90 s")
    # pods that failed on the missing key retry on their own back-off: replace them now
    kube.delete_pods(ctx, target)
    ctx.kubectl("rollout", "status", f"deployment/{target.component.name}", "-n", ctx.namespace, "--timeout=180s",
                check=False, timeout=200.0)


def recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    if "settings" not in ctx.state:
        return
    name = ctx.state["settings"]
    obj = kube.get(ctx, "deployment", target.component.name, missing_ok=True)
    if obj is not None:
        path = f"/spec/template/spec/containers/{ctx.state['container']}/env"
        env = ctx.state.get("env")
        kube.patch(ctx, "deployment", target.component.name,
                   [{"op": "add", "path": path, "value": env}] if env else [{"op": "remove", "path": path}],
                   type="json")
    # the guardian goes first: a last round of it would recreate (and guard) the ConfigMap cleaned up below
    ctx.kubectl("delete", "deployment", NAME, "-n", ctx.namespace, "--ignore-not-found", "--wait=false")
    selector = f"app.kubernetes.io/name={NAME}"
    ctx.kubectl("delete", "pods", "-n", ctx.namespace, "-l", selector, "--grace-period=0", "--force",
                "--ignore-not-found", check=False)
    kube.wait_until(lambda: not json.loads(ctx.kubectl("get", "pods", "-n", ctx.namespace, "-l", selector, "-o",
                                                       "json"))["items"], timeout=60.0, interval=1.0)
    for kind, item in (("configmap", SOURCES), ("rolebinding", NAME), ("role", NAME), ("serviceaccount", NAME)):
        kube.delete(ctx, kind, item)
    for item in (name, f"{name}-previous"):
        if _live(ctx, item) is not None:
            ctx.kubectl("patch", "configmap", item, "-n", ctx.namespace, "--type=merge", "-p",
                        '{"metadata":{"finalizers":null}}', check=False)
            ctx.kubectl("delete", "configmap", item, "-n", ctx.namespace, "--ignore-not-found", "--wait=false")


VOCABULARY = (
    # what was done (the controller's rights narrowed to reading) and what it stops (removing its finalizer); not the
    # controller's name alone, nor the rotation being stuck (what one sees, whatever the cause)
    "finalizer*", "terminating", "stuck .. delet*", "delet* .. stuck", "being deleted", "deletiontimestamp",
    "deletion timestamp", "never .. delet*", "cannot .. remove .. finalizer*", "can not .. remove .. finalizer*",
    "cannot .. release .. finalizer*", "controller .. read-only", "read-only .. role", "role .. read-only",
    "role .. get, list, watch", "role .. only .. get", "role .. only .. read", "only read verbs", "reduced to .. get",
    "lost .. write", "lost .. patch", "cannot patch", "no longer .. patch", "no longer allow* .. modify",
    "forbidden", "rbac", "403",
)

FAULTS: list[FaultSpec] = [
    function_fault(
        name="finalizer-deadlock", summary="a controller's Role is made read-only: the ConfigMap it guards stays "
                                           "Terminating on its finalizer and a config rotation never lands",
        layer="k8s", selector=SELECTOR, resource_kind="Role",
        params_schema=schema(request_timeout={"type": "string", "default": "5s", "pattern": "^[0-9]{1,4}(ms|s)$"}),
        mechanism="the config-guardian controller's Role was made read-only (get/list/watch), so it cannot "
                  "remove its finalizer from the settings ConfigMap whose deletion a config rotation requested: "
                  "the ConfigMap stays Terminating, its rotated replacement cannot be created, and the "
                  "component's new pods fail with CreateContainerConfigError",
        inject=inject, is_present=is_present, recover=recover, reference_fix=fix,
        symptoms=("CreateContainerConfigError", "ConfigMap stuck Terminating", "Forbidden in the controller's log",
                  "rollout stalled"),
        keywords=("finalizer", "Terminating", NAME, "Role", "Forbidden", "read-only"),
        values=lambda t, p, s: {"controller": NAME, "role": NAME, "finalizer": FINALIZER,
                                "config_map": s.get("settings") or settings_name(t)},
        prose="The {controller} controller's Role {role} was made read-only (get, list, watch): it cannot remove "
              "its finalizer {finalizer} from ConfigMap {config_map}, whose deletion a config rotation requested, "
              "so the ConfigMap stays Terminating, the rotated one cannot be created (object is being deleted), "
              "and {component}'s new pods fail with CreateContainerConfigError. Fix: give the Role back its write "
              "verbs (removing the finalizer and creating the rotated ConfigMap by hand leaves the next rotation "
              "to deadlock the same way).",
        vocabulary=VOCABULARY,
    ),
]

__all__ = ["FAULTS", "FINALIZER", "OVERREACH", "ROTATION_VERBS", "guardian_can_rotate", "may", "settings_name"]
