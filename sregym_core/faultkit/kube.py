"""Read and change cluster objects through the real kubectl, as the admin (``ctx.kubectl``).

Every helper takes the :class:`~sregym_core.faults.FaultContext` first, so a recording context (the
test harness's) sees every call. Objects are plain JSON dicts, as ``kubectl get -o json`` prints them.
"""

from __future__ import annotations

import copy
import json
import re
import time
from typing import TYPE_CHECKING, Any, Literal, overload

from ..errors import PermanentFaultError

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..faults import FaultContext
    from ..types import Target


__all__ = [
    "apply", "container", "container_index", "container_path", "delete", "delete_pods", "dependents", "exists", "get",
    "patch", "pod_selector", "pod_spec", "remove_pod_spec_field", "restart", "restart_dependents", "rollout_state", "save", "service",
    "set_pod_spec_field", "strip_last_applied", "wait_until", "workload",
]


@overload
def get(ctx: FaultContext, kind: str, name: str, *, namespace: str | None = None,
        missing_ok: Literal[False] = False) -> dict: ...
@overload
def get(ctx: FaultContext, kind: str, name: str, *, namespace: str | None = None, missing_ok: bool) -> dict | None: ...
def get(ctx: FaultContext, kind: str, name: str, *, namespace: str | None = None, missing_ok: bool = False) -> dict | None:
    """The object as JSON; None when it does not exist and ``missing_ok``, else a PermanentFaultError."""
    out = ctx.kubectl("get", kind, name, "-n", namespace or ctx.namespace, "-o", "json", "--ignore-not-found")
    if not out.strip():
        if missing_ok:
            return None
        raise PermanentFaultError(f"{kind} {namespace or ctx.namespace}/{name} does not exist")
    return json.loads(out)


def exists(ctx: FaultContext, kind: str, name: str, *, namespace: str | None = None) -> bool:
    """Whether the object exists."""
    return get(ctx, kind, name, namespace=namespace, missing_ok=True) is not None


def patch(ctx: FaultContext, kind: str, name: str, body: Any, *, type: str = "merge", namespace: str | None = None) -> None:
    """``kubectl patch`` with a merge patch (default), ``type="json"`` (a list of operations) or ``strategic``."""
    ctx.kubectl("patch", kind, name, "-n", namespace or ctx.namespace, "--type", type, "-p", json.dumps(body))


#: the annotation a client-side ``kubectl apply`` writes: the applied state, which names what changed since
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def apply(ctx: FaultContext, obj: dict) -> None:
    """``kubectl apply`` one object, leaving no last-applied annotation on it: an object the fault made
    or changed must not be the one that carries a record of its applied state (issue #34)."""
    text = json.dumps(obj)
    ctx.kubectl("apply", "-f", "-", input=text)
    strip_last_applied(ctx, text)


def strip_last_applied(ctx: FaultContext, manifests: str) -> None:
    """Remove the last-applied annotation from the objects ``manifests`` (JSON or YAML) names."""
    ctx.kubectl("annotate", "-f", "-", f"{LAST_APPLIED}-", input=manifests)


def delete(ctx: FaultContext, kind: str, name: str, *, namespace: str | None = None) -> None:
    """Delete an object without waiting (absent is fine)."""
    ctx.kubectl("delete", kind, name, "-n", namespace or ctx.namespace, "--ignore-not-found", "--wait=false")


def workload(ctx: FaultContext, target: Target) -> dict:
    """The target component's workload object (Deployment, StatefulSet...)."""
    return get(ctx, target.component.kind, target.component.name)


def pod_spec(obj: dict) -> dict:
    """The pod template's spec of a workload object."""
    return obj["spec"]["template"]["spec"]


def container_index(obj: dict, name: str | None) -> int:
    """The index of container ``name`` in the pod template (the only container if there is one)."""
    for index, container in enumerate(pod_spec(obj)["containers"]):
        if container["name"] == name:
            return index
    if len(pod_spec(obj)["containers"]) == 1:
        return 0
    raise PermanentFaultError(f"workload {obj['metadata']['name']} has no container {name!r}")


def container(obj: dict, name: str | None) -> dict:
    """Container ``name`` of the pod template."""
    return pod_spec(obj)["containers"][container_index(obj, name)]


def set_pod_spec_field(ctx: FaultContext, target: Target, path: str, value: Any) -> None:
    """JSON-patch ``/spec/template/spec/<path>`` (add = create or replace)."""
    patch(ctx, target.component.kind, target.component.name,
          [{"op": "add", "path": f"/spec/template/spec/{path}", "value": value}], type="json")


def remove_pod_spec_field(ctx: FaultContext, target: Target, path: str) -> None:
    """JSON-patch remove ``/spec/template/spec/<path>`` when it is there."""
    obj = workload(ctx, target)
    node: Any = pod_spec(obj)
    parts = path.split("/")
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node.get(part)
        if node is None:
            return
    last = parts[-1]
    present = (isinstance(node, list) and int(last) < len(node)) or (isinstance(node, dict) and last in node)
    if present:
        patch(ctx, target.component.kind, target.component.name,
              [{"op": "remove", "path": f"/spec/template/spec/{path}"}], type="json")


def container_path(obj: dict, target: Target, field: str = "") -> str:
    """``containers/<index>[/field]`` of the target's main container, relative to the pod spec."""
    index = container_index(obj, target.component.container_name)
    return f"containers/{index}" + (f"/{field}" if field else "")


def save(ctx: FaultContext, key: str, value: Any) -> Any:
    """Keep a deep copy of ``value`` in ``ctx.state[key]`` (for recover) and return ``value``."""
    ctx.state[key] = copy.deepcopy(value)
    return value


def restart(ctx: FaultContext, target: Target) -> None:
    """A rollout restart, so pods pick up a changed ConfigMap/Secret/Service."""
    ctx.rollout_restart(target.component.kind, target.component.name)


def pod_selector(obj: dict) -> str:
    """The workload's pod selector as kubectl's ``-l`` takes it (``""`` without matchLabels)."""
    labels = obj["spec"]["selector"].get("matchLabels") or {}
    return ",".join(f"{k}={v}" for k, v in labels.items())


def delete_pods(ctx: FaultContext, target: Target) -> None:
    """Delete the target workload's pods (its controller recreates them)."""
    selector = pod_selector(workload(ctx, target))
    if selector:
        ctx.kubectl("delete", "pods", "-n", ctx.namespace, "-l", selector, "--wait=false")


def service(ctx: FaultContext, target: Target) -> dict:
    """The Service fronting the target component."""
    name = target.component.service_name
    if not name:
        raise PermanentFaultError(f"component {target.component.name} has no Service")
    return get(ctx, "service", name)


def wait_until(check: Callable[[], object], timeout: float = 30.0, interval: float = 0.5) -> bool:
    """Poll ``check()`` until it is true (True) or ``timeout`` seconds passed (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(interval)
    return False


def dependents(ctx: FaultContext, target: Target) -> list[str]:
    """Deployments that name the target's Service in their pod template or in a ConfigMap they use."""
    service = target.component.service_name
    if not service:
        return []
    word = re.compile(rf"(?<![-\w]){re.escape(service)}(?![-\w])")
    config_maps = json.loads(ctx.kubectl("get", "configmaps", "-n", ctx.namespace, "-o", "json"))["items"]
    mentioning = {c["metadata"]["name"] for c in config_maps if word.search(json.dumps(c.get("data") or {}))}
    out = []
    for deployment in json.loads(ctx.kubectl("get", "deployments", "-n", ctx.namespace, "-o", "json"))["items"]:
        template = json.dumps(deployment["spec"]["template"])
        if deployment["metadata"]["name"] == target.component.name:
            continue
        if word.search(template) or any(f'"{c}"' in template for c in mentioning):
            out.append(deployment["metadata"]["name"])
    return out


RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
#: how long a restarted caller's new pods may run without getting ready before the wait for them ends
STUCK_GRACE_S = 15.0


def rollout_state(ctx: FaultContext, name: str) -> str:
    """Where the Deployment's latest restart is: ``complete`` (the rollout finished; also when the
    Deployment is gone or no controller reports on it, as for a recorded object), ``started`` (every
    pod of the restarted template has run a process, an init container's included, but not every
    one is ready), ``blocked`` (its pods cannot be created: the Deployment reports ``ReplicaFailure``,
    e.g. an admission webhook or a quota refuses them) or ``pending``."""
    deployment = get(ctx, "deployment", name, missing_ok=True)
    if deployment is None or "status" not in deployment:
        return "complete"
    status, want = deployment["status"], deployment["spec"].get("replicas", 1)
    if status.get("observedGeneration", 0) < deployment["metadata"].get("generation", 0):
        return "pending"
    updated = status.get("updatedReplicas", 0)
    if updated >= want and status.get("replicas", 0) == updated and status.get("availableReplicas", 0) >= updated:
        return "complete"
    if any(c.get("type") == "ReplicaFailure" and c.get("status") == "True" for c in status.get("conditions") or ()):
        return "blocked"
    template = deployment["spec"]["template"]
    stamp = (template["metadata"].get("annotations") or {}).get(RESTARTED_AT)
    selector = pod_selector(deployment)
    if not stamp or not selector:
        return "pending"
    pods = json.loads(ctx.kubectl("get", "pods", "-n", ctx.namespace, "-o", "json", "-l", selector))["items"]
    fresh = [p for p in pods if (p["metadata"].get("annotations") or {}).get(RESTARTED_AT) == stamp
             and not p["metadata"].get("deletionTimestamp")]
    return "started" if len(fresh) >= want and all(_ran(p) for p in fresh) else "pending"


def _ran(pod: dict) -> bool:
    """Whether the kubelet has started a process of the pod (an init container counts)."""
    status = pod.get("status") or {}
    for c in (*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())):
        state, last = c.get("state") or {}, c.get("lastState") or {}
        if "running" in state or "terminated" in state or "terminated" in last:
            return True
    return False


def restart_dependents(ctx: FaultContext, target: Target, timeout: float = 180.0) -> None:
    """Roll the target's callers and wait for them, so they open fresh connections to it (pooled
    connections outlive a deleted Service or a new NetworkPolicy, as conntrack lets them on a real
    cluster). The wait for a caller ends when its rollout completes, or when its new pods have run
    for ``STUCK_GRACE_S`` without all getting ready (or its pods have been refused for that long): a
    caller whose start or readiness needs the target the fault just cut off never gets ready, one
    whose pods another fault refuses never starts, and waiting would only wait out ``timeout``."""
    names = dependents(ctx, target)
    for name in names:
        ctx.rollout_restart("deployment", name)
    pending, started_at = list(names), dict[str, float]()

    def all_restarted() -> bool:
        now = time.monotonic()
        for name in list(pending):
            state = rollout_state(ctx, name)
            if state in ("started", "blocked"):
                started_at.setdefault(name, now)
            if state == "complete" or (state in ("started", "blocked") and now - started_at[name] >= STUCK_GRACE_S):
                pending.remove(name)
        return not pending

    wait_until(all_restarted, timeout=timeout, interval=1.0)
