"""Storage wiring faults: a workload's volumes and its placement no longer agree.

* ``pv-node-affinity-conflict``: a datastore's data lives on a local PersistentVolume, which only
  its node can reach (the PV's ``nodeAffinity``); its pods are pinned to another node by a
  ``nodeSelector``, so kube-scheduler finds no node: ``N node(s) had volume node affinity conflict``.
* ``pvc-rwo-shared``: a stateless service is scaled out to several replicas spread over nodes,
  all mounting one ReadWriteOnce network disk: the disk is attached to one node at a time, so the
  replicas elsewhere stay ContainerCreating (``FailedAttachVolume ... Multi-Attach error``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from sregym_core.errors import PermanentFaultError
from sregym_core.faultkit import function_fault, kube, schema
from sregym_core.types import FaultSpec, TargetSelector

from . import ingress_users as users
from .nodes import matching_nodes, schedulable_nodes, template_nodes

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sregym_core.faults import FaultContext
    from sregym_core.types import Target

HOSTNAME = "kubernetes.io/hostname"
WITH_VOLUMES = TargetSelector(kinds=("StatefulSet", "Deployment"), requires=("pvcs",), exclude_roles=("workload-generator",))
STATELESS = TargetSelector(kinds=("Deployment",), requires=("service",),
                           exclude_roles=("workload-generator", "db:*", "cache:*", "stateful", "queue:*"))
#: provisioners of disks attached to one node at a time (the embedded network disk, the clouds' block disks)
ATTACHABLE = ("sregym.io/network-disk", "ebs.csi.aws.com", "pd.csi.storage.gke.io", "disk.csi.azure.com",
              "cinder.csi.openstack.org", "rbd.csi.ceph.com", "kubernetes.io/aws-ebs", "kubernetes.io/gce-pd")
SHARED_VOLUME = "shared-cache"


# ------------------------------------------------------------------ PV node affinity vs nodeSelector


def _claims(obj: dict) -> list[str]:
    return [v["persistentVolumeClaim"]["claimName"] for v in kube.pod_spec(obj).get("volumes") or []
            if (v.get("persistentVolumeClaim") or {}).get("claimName")]


def _volumes(ctx: FaultContext, obj: dict) -> list[dict]:
    """The bound PersistentVolumes of the workload's claims."""
    out = []
    for claim in _claims(obj):
        pvc = kube.get(ctx, "pvc", claim, missing_ok=True) or {}
        name = pvc.get("spec", {}).get("volumeName")
        if name:
            pv = json.loads(ctx.kubectl("get", "pv", name, "-o", "json", "--ignore-not-found") or "null")
            if pv:
                out.append(pv)
    return out


def _volume_nodes(ctx: FaultContext, obj: dict, nodes: list[dict]) -> tuple[set[str] | None, list[str]]:
    """The nodes every bound volume of the workload can be used on (None: no volume has node
    affinity), and the names of the volumes that have one."""
    allowed: set[str] | None = None
    pinned = []
    for pv in _volumes(ctx, obj):
        required = ((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required")
        if not required:
            continue
        pinned.append(pv["metadata"]["name"])
        here = matching_nodes(required.get("nodeSelectorTerms") or [], nodes)
        allowed = here if allowed is None else allowed & here
    return allowed, pinned


def _nodes(ctx: FaultContext) -> list[dict]:
    return json.loads(ctx.kubectl("get", "nodes", "-o", "json"))["items"]


def affinity_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    obj = kube.workload(ctx, target)
    nodes = _nodes(ctx)
    allowed, pinned = _volume_nodes(ctx, obj, nodes)
    if allowed is None:
        raise PermanentFaultError(f"{target.component.name}'s volumes have no node affinity (not local volumes): "
                                  "no node selector conflicts with them")
    others = sorted(n for n in schedulable_nodes(nodes) if n not in allowed)
    if not others:
        raise PermanentFaultError(f"every schedulable node can use {target.component.name}'s volumes: the fault "
                                  "needs a second node", hints=("run it on a cluster with two nodes or more "
                                                                "(the embedded cluster starts three)",))
    original = kube.pod_spec(obj).get("nodeSelector")
    selector = {**(original or {}), HOSTNAME: others[0]}
    ops = [{"op": "add", "path": "/spec/template/spec/nodeSelector", "value": selector}]
    ctx.state.update(node=others[0], volume_nodes=sorted(allowed), volumes=pinned, node_selector=original, ops=ops)
    kube.patch(ctx, target.component.kind, target.component.name, ops, type="json")
    _replace_pods(ctx, target)


def _replace_pods(ctx: FaultContext, target: Target) -> None:
    """A StatefulSet waits on a pod that never becomes Ready before it rolls it again (the known
    'forced rollback' case): delete the pods so the current template takes effect."""
    if target.component.kind == "StatefulSet" and kube.exists(ctx, "statefulset", target.component.name):
        kube.delete_pods(ctx, target)


def affinity_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    obj = kube.get(ctx, target.component.kind, target.component.name, missing_ok=True)
    if obj is None:
        return True  # deleting the workload is no fix
    nodes = _nodes(ctx)
    allowed, _ = _volume_nodes(ctx, obj, nodes)
    if allowed is None:
        return False
    return not (allowed & template_nodes(kube.pod_spec(obj), nodes))


def _restore_selector(ctx: FaultContext, target: Target) -> None:
    obj = kube.get(ctx, target.component.kind, target.component.name, missing_ok=True)
    if obj is None:
        return
    selector = dict(kube.pod_spec(obj).get("nodeSelector") or {})
    original = ctx.state.get("node_selector") or {}
    if HOSTNAME in selector and HOSTNAME not in original:
        del selector[HOSTNAME]
    selector.update(original)
    if selector:
        kube.patch(ctx, target.component.kind, target.component.name,
                   [{"op": "add", "path": "/spec/template/spec/nodeSelector", "value": selector}], type="json")
    else:
        kube.remove_pod_spec_field(ctx, target, "nodeSelector")


def affinity_fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    # as an SRE would: take the pin off the pod template, replace the pod stuck Pending, and watch the
    # datastore come back and its callers reconnect
    _restore_selector(ctx, target)
    _replace_pods(ctx, target)
    ctx.kubectl("rollout", "status", f"{target.component.kind.lower()}/{target.component.name}", "-n", ctx.namespace,
                "--timeout=180s", check=False, timeout=200.0)
    users.wait_users_served(ctx, timeout_s=90.0)


def affinity_recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    if "ops" not in ctx.state:
        return
    _restore_selector(ctx, target)
    _replace_pods(ctx, target)


# ------------------------------------------------------------------ one ReadWriteOnce disk, many replicas


def _attachable_class(ctx: FaultContext) -> str:
    classes = json.loads(ctx.kubectl("get", "storageclasses", "-o", "json"))["items"]
    for cls in sorted(classes, key=lambda c: c["metadata"]["name"]):
        if cls.get("provisioner") in ATTACHABLE:
            return cls["metadata"]["name"]
    raise PermanentFaultError("this cluster has no StorageClass of attachable disks (network block storage)",
                              hints=(f"provisioners known to attach: {', '.join(ATTACHABLE)}",))


def _claim_name(target: Target) -> str:
    return f"{target.component.name}-{SHARED_VOLUME}"


def shared_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    obj = kube.workload(ctx, target)
    nodes = schedulable_nodes(_nodes(ctx))
    replicas = max(int(obj["spec"].get("replicas", 1)), int(params["replicas"]))
    if len(nodes) < 2:
        raise PermanentFaultError("the fault spreads replicas over nodes: it needs two schedulable nodes or more",
                                  hints=("the embedded cluster starts three",))
    storage_class = _attachable_class(ctx)
    claim = _claim_name(target)
    kube.apply(ctx, {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                     "metadata": {"name": claim, "namespace": ctx.namespace,
                                  "labels": dict(obj["spec"]["selector"].get("matchLabels") or {})},
                     "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": storage_class,
                              "resources": {"requests": {"storage": "1Gi"}}}})
    spec = kube.pod_spec(obj)
    path = kube.container_path(obj, target)
    labels = dict(obj["spec"]["selector"].get("matchLabels") or {})
    ops = [{"op": "replace", "path": "/spec/replicas", "value": replicas},
           {"op": "add", "path": "/spec/template/spec/volumes" + ("/-" if spec.get("volumes") else ""),
            "value": ({"name": SHARED_VOLUME, "persistentVolumeClaim": {"claimName": claim}}
                      if spec.get("volumes") else [{"name": SHARED_VOLUME, "persistentVolumeClaim": {"claimName": claim}}])},
           {"op": "add", "path": f"/spec/template/spec/{path}/volumeMounts"
                                 + ("/-" if kube.container(obj, target.component.container_name).get("volumeMounts") else ""),
            "value": ({"name": SHARED_VOLUME, "mountPath": f"/var/cache/{target.component.name}"}
                      if kube.container(obj, target.component.container_name).get("volumeMounts")
                      else [{"name": SHARED_VOLUME, "mountPath": f"/var/cache/{target.component.name}"}])}]
    if not (spec.get("affinity") or {}).get("podAntiAffinity"):
        # one replica per node, for availability
        ops.append({"op": "add", "path": "/spec/template/spec/affinity", "value": {**(spec.get("affinity") or {}),
                    "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": labels}, "topologyKey": HOSTNAME}]}}})
    ctx.state.update(claim=claim, storage_class=storage_class, replicas=replicas,
                     original_replicas=int(obj["spec"].get("replicas", 1)), had_affinity=bool(spec.get("affinity")),
                     affinity=spec.get("affinity"), ops=ops)
    kube.patch(ctx, "deployment", target.component.name, ops, type="json")


def _rwo_claims(ctx: FaultContext, obj: dict) -> list[str]:
    out = []
    for claim in _claims(obj):
        pvc = kube.get(ctx, "pvc", claim, missing_ok=True) or {}
        modes = set((pvc.get("spec") or {}).get("accessModes") or [])
        if modes and not modes & {"ReadWriteMany", "ReadOnlyMany"}:
            out.append(claim)
    return out


def shared_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    obj = kube.get(ctx, "deployment", target.component.name, missing_ok=True)
    if obj is None:
        return True  # deleting the workload is no fix
    # the replicas share a ReadWriteOnce claim while the template mounts one; scaling back in to one
    # replica with the claim still mounted gives up the capacity the scale-out was for, and fixes nothing
    return bool(set(_rwo_claims(ctx, obj)) - set(target.component.pvcs))


def shared_fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    # the cache is per replica: each gets its own emptyDir in place of the one shared disk
    obj = kube.workload(ctx, target)
    for index, volume in enumerate(kube.pod_spec(obj).get("volumes") or []):
        if volume.get("name") == SHARED_VOLUME:
            kube.patch(ctx, "deployment", target.component.name, [
                {"op": "replace", "path": f"/spec/template/spec/volumes/{index}",
                 "value": {"name": SHARED_VOLUME, "emptyDir": {}}}], type="json")
    ctx.kubectl("rollout", "status", f"deployment/{target.component.name}", "-n", ctx.namespace, "--timeout=180s",
                check=False, timeout=200.0)
    users.wait_users_served(ctx, timeout_s=90.0)  # callers' connections to the replaced pods settle


def shared_recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    if "claim" not in ctx.state:
        return
    obj = kube.get(ctx, "deployment", target.component.name, missing_ok=True)
    if obj is not None:
        spec = kube.pod_spec(obj)
        ops = [{"op": "replace", "path": "/spec/replicas", "value": ctx.state["original_replicas"]}]
        index = kube.container_index(obj, target.component.container_name)
        mounts = spec["containers"][index].get("volumeMounts") or []
        for i in reversed([i for i, m in enumerate(mounts) if m.get("name") == SHARED_VOLUME]):
            ops.append({"op": "remove", "path": f"/spec/template/spec/containers/{index}/volumeMounts/{i}"})
        for i in reversed([i for i, v in enumerate(spec.get("volumes") or []) if v.get("name") == SHARED_VOLUME]):
            ops.append({"op": "remove", "path": f"/spec/template/spec/volumes/{i}"})
        if ctx.state.get("had_affinity"):
            ops.append({"op": "add", "path": "/spec/template/spec/affinity", "value": ctx.state["affinity"]})
        elif "affinity" in spec:
            ops.append({"op": "remove", "path": "/spec/template/spec/affinity"})
        kube.patch(ctx, "deployment", target.component.name, ops, type="json")
    kube.delete(ctx, "pvc", ctx.state["claim"])


AFFINITY_VOCABULARY = (
    # a node selector alone is another mechanism (a label no node has): the volume's side must be named
    "volume node affinity", "node affinity conflict", "volume .. node affinity", "node affinity .. volume",
    "pv .. node", "pv .. bound to",
    "persistentvolume .. node", "persistent volume .. node", "volume .. lives on", "volume .. only on",
    "volume .. local to", "local volume", "data .. on .. other node", "data .. on .. another node",
    "volume .. another node", "volume .. other node", "volume .. different node", "node .. cannot reach .. volume",
)
SHARED_VOLUME_VOCABULARY = (
    "multi attach", "multi-attach", "readwriteonce", "read write once", "rwo", "already attached",
    "attached to .. other node", "attached to .. another node", "attached to one node", "shared .. pvc",
    "pvc .. shared", "shared .. volume", "volume .. shared", "same pvc", "same volume", "one pvc .. replicas",
    "one volume .. replicas", "single pvc", "single volume", "one disk", "same disk", "shared disk",
    "disk .. one node", "volume .. already used", "already used by",
)

FAULTS: list[FaultSpec] = [
    function_fault(
        name="pv-node-affinity-conflict", summary="pods pinned to a node their local PersistentVolume cannot reach",
        layer="k8s", selector=WITH_VOLUMES, resource_kind="PersistentVolume", capabilities={"multi-node"},
        mechanism="the pod template's nodeSelector pins the pods to a node outside their PersistentVolume's "
                  "nodeAffinity: the scheduler finds no node (volume node affinity conflict)",
        inject=affinity_inject, is_present=affinity_present, recover=affinity_recover, reference_fix=affinity_fix,
        symptoms=("Pending", "FailedScheduling", "volume node affinity conflict"),
        keywords=("nodeSelector", "PersistentVolume", "nodeAffinity", "volume node affinity conflict", "Pending"),
        values=lambda t, p, s: {"node": s.get("node", ""), "volume_nodes": ", ".join(s.get("volume_nodes", [])),
                                "volumes": ", ".join(s.get("volumes", []))},
        prose="{component}'s pod template has a nodeSelector pinning it to {node}, but its data volume ({volumes}) "
              "is a local PersistentVolume whose nodeAffinity allows only {volume_nodes}: the pod stays Pending "
              "with 'volume node affinity conflict'.",
        vocabulary=AFFINITY_VOCABULARY,
    ),
    function_fault(
        name="pvc-rwo-shared", summary="replicas on several nodes share one ReadWriteOnce disk (Multi-Attach)",
        layer="k8s", selector=STATELESS, resource_kind="PersistentVolumeClaim", capabilities={"multi-node"},
        params_schema=schema(replicas={"type": "integer", "minimum": 2, "maximum": 5, "default": 2}),
        mechanism="the Deployment was scaled out with one replica per node, every replica mounting the same "
                  "ReadWriteOnce PersistentVolumeClaim: the disk attaches to one node, the replicas elsewhere stay "
                  "ContainerCreating with Multi-Attach errors",
        inject=shared_inject, is_present=shared_present, recover=shared_recover, reference_fix=shared_fix,
        symptoms=("ContainerCreating", "FailedAttachVolume", "Multi-Attach error"),
        keywords=("ReadWriteOnce", "PersistentVolumeClaim", "Multi-Attach", "FailedAttachVolume", "replicas"),
        values=lambda t, p, s: {"claim": s.get("claim", ""), "replicas": s.get("replicas", p.get("replicas", 2)),
                                "access_mode": "ReadWriteOnce"},
        prose="{component} runs {replicas} replicas, one per node, all mounting the {access_mode} claim {claim}: "
              "the disk is attached to one node only, so the other replicas stay ContainerCreating with "
              "'Multi-Attach error ... Volume is already used by pod(s)'.",
        vocabulary=SHARED_VOLUME_VOCABULARY,
    ),
]

__all__ = ["FAULTS"]
