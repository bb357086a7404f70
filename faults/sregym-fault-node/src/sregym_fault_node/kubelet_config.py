"""kubelet-eviction-threshold: a kubelet drop-in raises the node's hard eviction threshold for disk.

On a kubeadm cluster the kubelet reads ``/var/lib/kubelet/config.yaml`` (shipped from
``kube-system/kubelet-config``) plus drop-ins in ``/etc/kubernetes/kubelet.conf.d/``. The embedded
node agent reads the same ``KubeletConfiguration`` from ``kube-system/kubelet-config`` and the node's
drop-in ``kube-system/kubelet-config-<node>``. The fault writes ``evictionHard.nodefs.available:
90%`` into the drop-in of the node hosting the target (someone wrote the disk *use* ceiling where the
*available* floor belongs): the node reports DiskPressure, gets the ``node.kubernetes.io/disk-pressure``
taint and evicts its pods one by one (``The node was low on resource: ephemeral-storage...``). A
datastore whose volume is bound to that node cannot move: its replacement pod stays Pending.

The fix is on the node: the drop-in's threshold back to a sane value (the agent's grant: get/patch on
the drop-ins, may change their ``kubelet`` key only).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import yaml

from sregym_core.errors import PermanentFaultError
from sregym_core.faultkit import WORKLOADS, function_fault, kube, schema
from sregym_core.types import FaultSpec, TargetSelector

from . import hooks

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sregym_core.faults import FaultContext
    from sregym_core.types import Target

NAMESPACE, BASE, KEY = "kube-system", "kubelet-config", "kubelet"
DISK_SIGNALS = ("nodefs.available", "imagefs.available", "nodefs.inodesFree")
#: a datastore on a node-local volume: its evicted pod cannot be rescheduled elsewhere
PINNED = TargetSelector(kinds=WORKLOADS, requires=("pvcs",))
SANE = "10%"


def drop_in_name(node: str) -> str:
    return f"{BASE}-{node}"


def read_config(ctx: FaultContext, name: str) -> tuple[dict | None, dict]:
    """The ConfigMap ``kube-system/<name>`` (None when missing) and its ``kubelet`` key as a mapping."""
    obj = kube.get(ctx, "configmap", name, namespace=NAMESPACE, missing_ok=True)
    text = ((obj or {}).get("data") or {}).get(KEY) or ""
    doc = yaml.safe_load(text) if text.strip() else {}
    return obj, doc if isinstance(doc, dict) else {}


def _document(ctx: FaultContext, node: str) -> tuple[dict | None, dict]:
    return read_config(ctx, drop_in_name(node))


def _write(ctx: FaultContext, node: str, doc: dict) -> None:
    text = yaml.safe_dump(doc, sort_keys=False)
    if kube.exists(ctx, "configmap", drop_in_name(node), namespace=NAMESPACE):
        kube.patch(ctx, "configmap", drop_in_name(node), {"data": {KEY: text}}, namespace=NAMESPACE)
    else:
        kube.apply(ctx, {"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": drop_in_name(node), "namespace": NAMESPACE},
                         "data": {KEY: text}})


def _eviction(ctx: FaultContext, node: str) -> dict:
    return (hooks.call(ctx, "node_agents").get(node) or {}).get("eviction") or {}


def _disk_met(ctx: FaultContext, node: str) -> list[str]:
    return [row["signal"] for row in _eviction(ctx, node).get("met") or [] if row["signal"] in DISK_SIGNALS]


def inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    node = hooks.target_node(ctx, target)
    if "eviction" not in (hooks.call(ctx, "node_agents").get(node) or {}):
        raise PermanentFaultError(f"the node agent of {node} has no eviction manager")
    obj, doc = _document(ctx, node)
    ctx.state.update(node=node, drop_in=drop_in_name(node), saved=None if obj is None else obj["data"].get(KEY, ""))
    doc = {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration", **doc}
    doc["evictionHard"] = {**(doc.get("evictionHard") or {}), "nodefs.available": params["nodefs_available"]}
    _write(ctx, node, doc)
    try:
        hooks.wait_for(lambda: bool(_disk_met(ctx, node)), 30.0, f"node {node}'s kubelet to apply its drop-in")
    except Exception:
        recover(ctx, target, params)
        raise PermanentFaultError(f"node {node} has more than {params['nodefs_available']} of its disk free: "
                                  "the threshold puts it under no pressure",
                                  hints=("pass a higher nodefs_available",)) from None
    # the datastore's pod is evicted within a few housekeeping rounds (one pod per round)
    hooks.wait_for(lambda: not any(hooks.is_ready(p) for p in hooks.pods(ctx, target)), 240.0,
                   f"{target.component.name}'s pod to be evicted from {node}")


def is_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    """The node's kubelet meets a disk eviction threshold now (with the configuration it runs)."""
    return bool(_disk_met(ctx, ctx.state["node"]))


def cluster_threshold(ctx: FaultContext) -> str:
    """The cluster-wide configuration's nodefs threshold (the kubelet default when it sets none)."""
    hard = read_config(ctx, BASE)[1].get("evictionHard")
    return str((hard if isinstance(hard, dict) else {}).get("nodefs.available") or SANE)


def reference_fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    """Put the drop-in's nodefs threshold back to the cluster-wide one, then wait for the datastore."""
    node = ctx.state["node"]
    _, doc = _document(ctx, node)
    doc.setdefault("evictionHard", {})["nodefs.available"] = cluster_threshold(ctx)
    _write(ctx, node, doc)
    hooks.wait_for(lambda: not is_present(ctx, target, params), 30.0, f"node {node} out of disk pressure")
    hooks.wait_ready(ctx, target, timeout=180.0)
    delete_evicted(ctx)


def delete_evicted(ctx: FaultContext) -> None:
    """Remove the app's Evicted pods (kept as Failed by the kubelet; their controllers replaced them)."""
    items = json.loads(ctx.kubectl("get", "pods", "-n", ctx.namespace, "-o", "json"))["items"]
    names = [p["metadata"]["name"] for p in items
             if (p.get("status") or {}).get("phase") == "Failed" and (p.get("status") or {}).get("reason") == "Evicted"]
    if names:
        ctx.kubectl("delete", "pods", *names, "-n", ctx.namespace, "--ignore-not-found", "--wait=false")


def recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    node = ctx.state.get("node")
    if not node:
        return
    saved = ctx.state.get("saved")
    if saved is None:
        ctx.kubectl("delete", "configmap", drop_in_name(node), "-n", NAMESPACE, "--ignore-not-found")
    else:
        kube.patch(ctx, "configmap", drop_in_name(node), {"data": {KEY: saved}}, namespace=NAMESPACE)
    # the kubelet re-reads its configuration within seconds; then the evicted pods are cleaned up
    hooks.wait_for(lambda: not _disk_met(ctx, node), 40.0, f"node {node}'s kubelet to drop the threshold")
    delete_evicted(ctx)


VOCABULARY = (
    # the kubelet's configuration or its drop-in named alone is where, not what was changed: the crash fault's
    # text names it too (red-team round 9, 3c)
    "eviction threshold*", "evictionhard", "eviction-hard", "eviction hard", "nodefs.available", "nodefs",
    "kubelet .. threshold*", "diskpressure", "disk pressure", "disk-pressure",
    "drop-in .. free disk", "drop-in .. disk pressure", "drop-in .. evict*",
    "free nodefs", "nodefs .. free",
)

FAULTS: list[FaultSpec] = [
    function_fault(
        name="kubelet-eviction-threshold",
        summary="a kubelet drop-in raises nodefs.available on the target's node: DiskPressure, pods evicted",
        layer="os", selector=PINNED, resource_kind="Node",
        mechanism="kubelet evictionHard nodefs.available raised far above the node's free disk in the node's "
                  "kubelet configuration drop-in: DiskPressure, disk-pressure taint, pods evicted",
        params_schema=schema(nodefs_available={"type": "string", "default": "90%",
                                               "pattern": "^[0-9]{1,2}(\\.[0-9]+)?%$"}),
        inject=inject, is_present=is_present, recover=recover, reference_fix=reference_fix,
        symptoms=("node DiskPressure True", "pods Evicted: The node was low on resource: ephemeral-storage",
                  "replacement pod Pending: untolerated taint node.kubernetes.io/disk-pressure"),
        keywords=("DiskPressure", "eviction", "evictionHard", "nodefs.available", "kubelet config", "taint"),
        values=lambda t, p, s: {"node": s.get("node", "(unknown)"),
                                "configmap": f"{NAMESPACE}/{s.get('drop_in', BASE + '-<node>')}",
                                "threshold": p.get("nodefs_available", "90%")},
        prose="The kubelet on node {node} runs with evictionHard nodefs.available={threshold} from its drop-in "
              "{configmap}: far more free disk than the node has, so it reports DiskPressure, is tainted "
              "node.kubernetes.io/disk-pressure and evicted {component}'s pod (Evicted: The node was low on "
              "resource: ephemeral-storage); its replacement cannot schedule, its volume is on {node}. Fix: set "
              "nodefs.available in {configmap} back below the node's free disk (the cluster-wide "
              "kube-system/kubelet-config's value, or the kubelet default 10%).",
        capabilities=hooks.NODE_AGENT, vocabulary=VOCABULARY,
    ),
]
