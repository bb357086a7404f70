"""What node-level faults share: the cluster's fault hooks, the target's pods, nodes and volumes.

Node faults cannot be done through the Kubernetes API; they call the cluster handle (``ctx.cluster``),
which on the embedded cluster reaches its admin endpoints (``/sregym/nodes``, ``/sregym/faults``).
Everything an agent's fix touches is still done through kubectl.
"""

from __future__ import annotations

import json
import time
import urllib.error
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from sregym_core.clusters import SupportsNodeFaults, capability
from sregym_core.errors import PermanentFaultError, TemporaryFaultError
from sregym_core.faultkit import kube

if TYPE_CHECKING:
    from sregym_core.faults import FaultContext
    from sregym_core.types import Capability, Target

#: capabilities of faults acting through an LD_PRELOAD shim on the node's pods
LD_PRELOAD: frozenset[Capability] = frozenset({"embedded", "ld-preload"})
#: capabilities of faults that stop node agents or impair the service proxy
NODE_AGENT: frozenset[Capability] = frozenset({"embedded", "node-agent"})


def cluster(ctx: FaultContext, method: str) -> SupportsNodeFaults:
    """The cluster handle, when it has the node fault hooks; a clear error otherwise."""
    handle = capability(getattr(ctx, "cluster", None), SupportsNodeFaults)
    if handle is None:
        raise PermanentFaultError(
            f"this cluster has no node fault hook {method!r}",
            hints=("node-level faults run on the embedded cluster (capabilities embedded, node-agent, ld-preload)",))
    return handle


def call(ctx: FaultContext, method: str, *args: Any, **kwargs: Any) -> Any:
    """Call a hook; an API error becomes a fault error carrying the Status message."""
    try:
        return getattr(cluster(ctx, method), method)(*args, **kwargs)
    except urllib.error.HTTPError as exc:
        try:
            message = json.loads(exc.read() or b"{}").get("message") or str(exc)
        except ValueError:
            message = str(exc)
        if exc.code >= 500:
            raise TemporaryFaultError(f"node fault hook {method}: {message}", delay=2.0) from None
        raise PermanentFaultError(f"node fault hook {method}: {message}") from None


def hook_id(ctx: FaultContext, kind: str) -> str:
    """One id per fault instance, kept in its state (so recover finds what inject made)."""
    if "hook_id" not in ctx.state:
        ctx.state["hook_id"] = f"{kind}-{uuid.uuid4().hex[:10]}"
    return ctx.state["hook_id"]


def status(ctx: FaultContext, kind: str) -> dict | None:
    if "hook_id" not in ctx.state:
        return None
    return call(ctx, "fault_status", kind, ctx.state["hook_id"])


def clear(ctx: FaultContext, kind: str) -> None:
    if "hook_id" in ctx.state:
        call(ctx, "clear_fault", kind, ctx.state["hook_id"])


def selector_labels(ctx: FaultContext, target: Target) -> dict[str, str]:
    obj = kube.workload(ctx, target)
    labels = (obj["spec"].get("selector") or {}).get("matchLabels") or {}
    if not labels:
        raise PermanentFaultError(f"{target.component.kind} {target.component.name} has no matchLabels selector")
    return dict(labels)


def pods(ctx: FaultContext, target: Target, *, include_terminating: bool = False) -> list[dict]:
    selector = ",".join(f"{k}={v}" for k, v in selector_labels(ctx, target).items())
    items = json.loads(ctx.kubectl("get", "pods", "-n", ctx.namespace, "-l", selector, "-o", "json"))["items"]
    return [p for p in items if include_terminating or not p["metadata"].get("deletionTimestamp")]


def is_ready(pod: dict) -> bool:
    conditions = {c.get("type"): c.get("status") for c in (pod.get("status") or {}).get("conditions") or []}
    return conditions.get("Ready") == "True" and not pod["metadata"].get("deletionTimestamp")


def node_ready(ctx: FaultContext, node: str) -> bool:
    obj = kube.get(ctx, "node", node, missing_ok=True)
    if obj is None:
        return False
    conditions = {c.get("type"): c.get("status") for c in (obj.get("status") or {}).get("conditions") or []}
    return conditions.get("Ready") == "True"


def target_node(ctx: FaultContext, target: Target) -> str:
    """The node hosting the target's first running pod."""
    for pod in pods(ctx, target):
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            return node
    raise TemporaryFaultError(f"no scheduled pod of {target.component.name} yet", delay=2.0)


def claims(ctx: FaultContext, target: Target) -> list[str]:
    """The PersistentVolumeClaims the target's pods mount."""
    names: list[str] = []
    for pod in pods(ctx, target):
        for volume in (pod.get("spec") or {}).get("volumes") or []:
            claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            if claim and claim not in names:
                names.append(claim)
    if not names:
        raise PermanentFaultError(f"{target.component.name} mounts no PersistentVolumeClaim")
    return names


def bound_volume(ctx: FaultContext, claim: str) -> str | None:
    pvc = kube.get(ctx, "persistentvolumeclaim", claim, missing_ok=True)
    return ((pvc or {}).get("spec") or {}).get("volumeName")


def wait_for(check: Callable[[], bool], timeout: float, what: str, interval: float = 0.5) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(interval)
    raise TemporaryFaultError(f"timed out after {timeout:.0f}s waiting for {what}", delay=2.0)


def wait_ready(ctx: FaultContext, target: Target, timeout: float = 120.0) -> None:
    wait_for(lambda: any(is_ready(p) for p in pods(ctx, target)), timeout, f"a ready pod of {target.component.name}")


def restart_pods(ctx: FaultContext, target: Target) -> None:
    """Delete the target's pods (their controller makes new ones) and wait for a ready one."""
    old = {p["metadata"]["uid"] for p in pods(ctx, target)}
    selector = ",".join(f"{k}={v}" for k, v in selector_labels(ctx, target).items())
    ctx.kubectl("delete", "pods", "-n", ctx.namespace, "-l", selector, "--wait=false")
    wait_for(lambda: any(is_ready(p) and p["metadata"]["uid"] not in old for p in pods(ctx, target)), 180.0,
             f"a new ready pod of {target.component.name}")


# ------------------------------------------------------------------ replacing a failing volume

_PROVISIONING_ANNOTATIONS = ("pv.kubernetes.io/", "volume.kubernetes.io/", "volume.beta.kubernetes.io/")


def _fresh_claim(pvc: dict) -> dict:
    meta = pvc["metadata"]
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items()
                   if not k.startswith(_PROVISIONING_ANNOTATIONS)}
    spec = {k: v for k, v in (pvc.get("spec") or {}).items()
            if k in ("accessModes", "resources", "storageClassName", "volumeMode", "selector")}
    fresh_meta = {"name": meta["name"], "namespace": meta.get("namespace")}
    if meta.get("labels"):
        fresh_meta["labels"] = meta["labels"]
    if annotations:
        fresh_meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": fresh_meta, "spec": spec}


def replace_volumes(ctx: FaultContext, target: Target) -> None:
    """Move the target onto new, empty volumes (what you do when a disk is failing and the data can
    be rebuilt): a new claim per mounted claim, the pod template switched to it (a rolling
    restart), then a restart of the workloads that seed it (their init steps run again). The old
    claims stay, unmounted, for forensics; nothing is deleted."""
    obj = kube.workload(ctx, target)
    names = claims(ctx, target)
    suffix = uuid.uuid4().hex[:5]
    ops = []
    for index, volume in enumerate(obj["spec"]["template"]["spec"].get("volumes") or []):
        claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
        if claim not in names:
            continue
        fresh = _fresh_claim(kube.get(ctx, "persistentvolumeclaim", claim))
        fresh["metadata"]["name"] = f"{claim[:50]}-r{suffix}"
        fresh["metadata"].pop("annotations", None)
        ctx.kubectl("create", "-f", "-", input=json.dumps(fresh))
        ops.append({"op": "replace", "path": f"/spec/template/spec/volumes/{index}/persistentVolumeClaim/claimName",
                    "value": fresh["metadata"]["name"]})
    if not ops:
        raise PermanentFaultError(f"{target.component.name}'s claims come from volumeClaimTemplates; "
                                  "replace them by hand")
    old = {p["metadata"]["uid"] for p in pods(ctx, target)}
    kube.patch(ctx, target.component.kind, target.component.name, ops, type="json")
    wait_for(lambda: any(is_ready(p) and p["metadata"]["uid"] not in old for p in pods(ctx, target)), 240.0,
             f"{target.component.name} ready on its new volume")
    kube.restart_dependents(ctx, target)




# ------------------------------------------------------------------ a disk fault's neighbours

def datastores(ctx: FaultContext, target: Target) -> list[Any]:
    """The target and every other datastore of its app with volumes (a ``db:*`` role and claims),
    as targets: a disk fault that must change something on its pods (a layer over the volume, a
    restart) does the same to all of them, so nothing there singles the broken one out."""
    import attrs

    out = [target]
    for component in getattr(target.app, "components", ()) or ():
        if component.name != target.component.name and component.has_role("db:*") and component.pvcs:
            out.append(attrs.evolve(target, component=component))
    return out


class Listing(dict):
    """What :func:`group_pods` returns: component name -> its live pods, plus what the same kubectl
    call listed of the namespace: each member's selector (``selectors``), each claim's bound volume
    (``bound``) and each PersistentVolume's host path (``host_paths``)."""

    def __init__(self, pods: dict[str, list[dict]], selectors: dict[str, dict[str, str]] | None = None,
                 bound: dict[str, str] | None = None, host_paths: dict[str, str] | None = None) -> None:
        super().__init__(pods)
        self.selectors = selectors or {}
        self.bound = bound or {}
        self.host_paths = host_paths or {}


def group_pods(ctx: FaultContext, group: list[Any]) -> Listing:
    """component name -> its live pods, for every target of ``group`` at once: one kubectl call for
    the namespace's workloads, pods, claims and volumes (per-target calls cost a datastore-rich app
    seconds; the claims and volumes spare a disk fault's inject two more)."""
    kinds = {"Deployment", "StatefulSet", "DaemonSet"}
    if any(t.component.kind not in kinds for t in group):
        return Listing({t.component.name: pods(ctx, t) for t in group})
    items = json.loads(ctx.kubectl("get", "deployments,statefulsets,daemonsets,pods,persistentvolumeclaims,"
                                   "persistentvolumes", "-n", ctx.namespace, "-o", "json"))["items"]
    selectors = {(o["kind"], o["metadata"]["name"]): (o["spec"].get("selector") or {}).get("matchLabels") or {}
                 for o in items if o.get("kind") in kinds}
    live = [o for o in items if o.get("kind") == "Pod" and not o["metadata"].get("deletionTimestamp")]
    out: dict[str, list[dict]] = {}
    chosen: dict[str, dict[str, str]] = {}
    for member in group:
        key = (member.component.kind, member.component.name)
        if key not in selectors:
            raise PermanentFaultError(f"{key[0]} {ctx.namespace}/{key[1]} does not exist")
        wanted = selectors[key]
        if not wanted:
            raise PermanentFaultError(f"{key[0]} {key[1]} has no matchLabels selector")
        chosen[member.component.name] = dict(wanted)
        out[member.component.name] = [p for p in live if all(
            (p["metadata"].get("labels") or {}).get(k) == v for k, v in wanted.items())]
    bound = {o["metadata"]["name"]: (o.get("spec") or {}).get("volumeName") or ""
             for o in items if o.get("kind") == "PersistentVolumeClaim"}
    host_paths = {o["metadata"]["name"]: ((o.get("spec") or {}).get("hostPath") or {}).get("path") or ""
                  for o in items if o.get("kind") == "PersistentVolume"}
    return Listing(out, chosen, bound, host_paths)


def labels_of(ctx: FaultContext, target: Target, listed: dict[str, list[dict]]) -> dict[str, str]:
    """The target's selector labels, from ``listed`` when :func:`group_pods` gave them."""
    found = getattr(listed, "selectors", {}).get(target.component.name)
    return dict(found) if found else selector_labels(ctx, target)


def claims_of(items: list[dict]) -> list[str]:
    """The PersistentVolumeClaims ``items`` (pods) mount, in order."""
    names: list[str] = []
    for pod in items:
        for volume in (pod.get("spec") or {}).get("volumes") or []:
            claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            if claim and claim not in names:
                names.append(claim)
    return names


def restart_datastores(ctx: FaultContext, target: Target, current: Mapping[str, list[dict]] | None = None, *,
                       wait: bool = True) -> None:
    """Delete the pods of the target and of every other datastore of its app at once (their
    controllers make new ones), then, with ``wait``, wait for a new ready pod of each (``current``:
    their pods as :func:`group_pods` listed them a moment ago). A disk fault passes ``wait=False``:
    its record is on the node before the delete, so every new pod starts with the layer and the
    fault is armed without the caller waiting for PostgreSQL's start."""
    import random

    group = datastores(ctx, target)
    if current is None:
        current = group_pods(ctx, group)
    old = {name: {p["metadata"]["uid"] for p in items} for name, items in current.items()}
    names = [p["metadata"]["name"] for items in current.values() for p in items]
    random.shuffle(names)  # one call, in no telling order: the pods' ages do not single the target out
    if names:
        ctx.kubectl("delete", "pods", "-n", ctx.namespace, *names, "--wait=false", "--ignore-not-found")
    if not wait:
        return

    def all_back() -> bool:
        now = group_pods(ctx, group)
        return all(any(is_ready(p) and p["metadata"]["uid"] not in old[name] for p in now[name]) for name in old)
    wait_for(all_back, 180.0, "a new ready pod of " + ", ".join(t.component.name for t in group), interval=0.2)
