"""Faults on Services, ConfigMaps, Secrets, policies, quotas, nodes and storage."""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

import yaml

from sregym_core.errors import PermanentFaultError
from sregym_core.faultkit import WORKLOADS, function_fault, kube, schema
from sregym_core.quantity import parse_quantity
from sregym_core.types import FaultSpec, TargetSelector

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from sregym_core.faultkit import TruthValues
    from sregym_core.faults import FaultContext, FaultMethod
    from sregym_core.types import Capability, Layer, Target

SERVICE = TargetSelector(kinds=WORKLOADS, requires=("service",))


def fault(name: str, summary: str, *, inject: FaultMethod, recover: FaultMethod, is_present: FaultMethod,
          fix: FaultMethod | None = None, resource_kind: str, mechanism: str, symptoms: tuple[str, ...] = (),
          keywords: tuple[str, ...] = (), params: Mapping[str, Any] | None = None,
          selector: TargetSelector | None = None, values: TruthValues | None = None, layer: Layer = "k8s",
          prose: str | None = None, capabilities: Iterable[Capability] = frozenset({"any"}),
          recreates: tuple[str, ...] = ()) -> FaultSpec:
    return function_fault(name=name, summary=summary, layer=layer, selector=selector or SERVICE, recreates=recreates,
                          params_schema=params or schema(), inject=inject, recover=recover, is_present=is_present,
                          reference_fix=fix, resource_kind=resource_kind, mechanism=mechanism, symptoms=symptoms,
                          keywords=keywords, values=values, prose=prose, capabilities=capabilities)


def _clean(obj: dict) -> dict:
    meta = obj["metadata"]
    kept = {k: meta[k] for k in ("name", "namespace", "labels", "annotations") if k in meta}
    out = {k: copy.deepcopy(v) for k, v in obj.items() if k not in ("metadata", "status")}
    out["metadata"] = kept
    return out


# --------------------------------------------------------------------------- Service selector / ports

# Service faults roll the Service's callers after the change (kube.restart_dependents): pooled gRPC
# and database connections outlive a Service edit, as conntrack lets them on a real cluster, so the
# fault shows as soon as clients reconnect, which is when it bites in production.


def _required(target: Target, name: str | None, what: str) -> str:
    """The name of the target's ``what`` (Service, ConfigMap), which the fault's selector requires."""
    if not name:
        raise PermanentFaultError(f"component {target.component.name} has no {what}")
    return name


def _service_name(target: Target) -> str:
    return _required(target, target.component.service_name, "Service")


def _svc_save(ctx: FaultContext, target: Target) -> dict:
    svc = kube.service(ctx, target)
    ctx.state.setdefault("service", _clean(svc))
    return svc


def _svc_restore_spec(ctx: FaultContext, target: Target, params: Mapping[str, Any],
                      fields: tuple[str, ...] = ("selector", "ports")) -> None:
    saved = ctx.state.get("service")
    if not saved:
        return
    live = kube.get(ctx, "service", saved["metadata"]["name"], missing_ok=True)
    if live is None:
        ctx.kubectl("create", "-f", "-", input=json.dumps(saved))
        return
    kube.patch(ctx, "service", saved["metadata"]["name"],
               [{"op": "replace", "path": f"/spec/{f}", "value": saved["spec"][f]} for f in fields if f in saved["spec"]],
               type="json")


def selector_mismatch_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    svc = _svc_save(ctx, target)
    selector = {**svc["spec"].get("selector", {}), params["label"]: params["value"]}
    ctx.state["selector"] = selector
    kube.patch(ctx, "service", svc["metadata"]["name"], {"spec": {"selector": selector}})
    kube.restart_dependents(ctx, target)


def selector_mismatch_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    live = kube.get(ctx, "service", _service_name(target), missing_ok=True)
    return live is None or live["spec"].get("selector", {}).get(params["label"]) == params["value"]


def _template_labels(obj: dict) -> dict:
    labels = obj["spec"]["template"]["metadata"].get("labels", {})
    return {k: v for k, v in labels.items() if k != "pod-template-hash"}


def _other_workloads(ctx: FaultContext, target: Target) -> list[dict]:
    items = []
    for kind in ("deployments", "statefulsets"):
        for obj in json.loads(ctx.kubectl("get", kind, "-n", ctx.namespace, "-o", "json"))["items"]:
            if obj["metadata"]["name"] != target.component.name:
                items.append(obj)
    return items


def selector_pollution_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    svc = _svc_save(ctx, target)
    own = _template_labels(kube.workload(ctx, target))
    others = [_template_labels(o) for o in _other_workloads(ctx, target)]
    shared = {k: v for k, v in own.items() if any(o.get(k) == v for o in others)}
    if shared:
        # the common mistake: the selector keeps only labels every tier shares (part-of, tier...),
        # so the Service load-balances over pods of other workloads too
        ctx.state.update(mode="broad", selector=shared)
        kube.patch(ctx, "service", svc["metadata"]["name"],
                   [{"op": "replace", "path": "/spec/selector", "value": shared}], type="json")
        kube.restart_dependents(ctx, target)
        return
    selector = svc["spec"].get("selector", {})
    for decoy in target.app.components:
        if decoy.name == target.component.name or decoy.kind != "Deployment" or decoy.has_role("workload-generator") \
                or decoy.has_role("db:*"):
            continue
        obj = kube.get(ctx, decoy.kind, decoy.name)
        labels = obj["spec"]["template"]["metadata"].get("labels", {})
        if any(k in labels and labels[k] != v for k, v in selector.items()):
            continue  # relabelling would break the decoy's own selector
        ctx.state.update(mode="decoy", decoy=decoy.name, decoy_kind=decoy.kind, decoy_labels=copy.deepcopy(labels))
        # the decoy's pods now also carry the Service's selector labels: foreign pods join its endpoints
        kube.patch(ctx, decoy.kind, decoy.name, {"spec": {"template": {"metadata": {"labels": {**labels, **selector}}}}})
        return
    raise PermanentFaultError("no other workload whose pods the Service selector could also match")


def _selector_pollution_restore(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    if ctx.state.get("mode") == "broad":
        _svc_restore_spec(ctx, target, params, ("selector",))
        return
    if "decoy" not in ctx.state:
        return
    obj = kube.get(ctx, ctx.state["decoy_kind"], ctx.state["decoy"], missing_ok=True)
    if obj is None:
        return
    kube.patch(ctx, ctx.state["decoy_kind"], ctx.state["decoy"],
               [{"op": "replace", "path": "/spec/template/metadata/labels", "value": ctx.state["decoy_labels"]}],
               type="json")


def selector_pollution_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    """Present while the Service's selector matches the pods of any other workload."""
    svc = kube.get(ctx, "service", _service_name(target), missing_ok=True)
    if svc is None:
        return True  # deleting the Service is not a fix
    selector = svc["spec"].get("selector", {})
    return bool(selector) and any(all(labels.get(k) == v for k, v in selector.items())
                                  for labels in map(_template_labels, _other_workloads(ctx, target)))


def wrong_target_port_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    svc = _svc_save(ctx, target)
    ports = copy.deepcopy(svc["spec"]["ports"])
    original = ports[0].get("targetPort", ports[0]["port"])
    number = original if isinstance(original, int) else (target.component.ports[0] if target.component.ports else 80)
    ports[0]["targetPort"] = number + params["offset"]
    ctx.state["target_port"] = ports[0]["targetPort"]
    ctx.state["original_target_port"] = original
    kube.patch(ctx, "service", svc["metadata"]["name"], [{"op": "replace", "path": "/spec/ports", "value": ports}], type="json")
    kube.restart_dependents(ctx, target)


def wrong_target_port_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    live = kube.get(ctx, "service", _service_name(target), missing_ok=True)
    return live is None or live["spec"]["ports"][0].get("targetPort") == ctx.state["target_port"]


def service_port_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    svc = _svc_save(ctx, target)
    ports = copy.deepcopy(svc["spec"]["ports"])
    if "targetPort" not in ports[0]:
        ports[0]["targetPort"] = ports[0]["port"]
    ctx.state["original_port"] = ports[0]["port"]
    ports[0]["port"] = ports[0]["port"] + params["offset"]
    ctx.state["port"] = ports[0]["port"]
    kube.patch(ctx, "service", svc["metadata"]["name"], [{"op": "replace", "path": "/spec/ports", "value": ports}], type="json")
    kube.restart_dependents(ctx, target)


def service_port_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    live = kube.get(ctx, "service", _service_name(target), missing_ok=True)
    return live is None or live["spec"]["ports"][0]["port"] == ctx.state["port"]


def missing_service_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    _svc_save(ctx, target)
    kube.delete(ctx, "service", _service_name(target))
    kube.restart_dependents(ctx, target)


def missing_service_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    return not kube.exists(ctx, "service", _service_name(target))


def missing_service_recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    if not kube.exists(ctx, "service", _service_name(target)):
        saved = copy.deepcopy(ctx.state["service"])
        saved["spec"].pop("clusterIP", None)
        saved["spec"].pop("clusterIPs", None)
        ctx.kubectl("create", "-f", "-", input=json.dumps(saved))


# --------------------------------------------------------------------------- ConfigMaps and Secrets

def _config_map_name(target: Target) -> str:
    return _required(target, target.component.config_map, "ConfigMap")


def _config_map(ctx: FaultContext, target: Target) -> dict:
    return kube.get(ctx, "configmap", _config_map_name(target))


def missing_configmap_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    cm = _config_map(ctx, target)
    ctx.state["configmap"] = _clean(cm)
    kube.delete(ctx, "configmap", cm["metadata"]["name"])
    kube.delete_pods(ctx, target)


def missing_configmap_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    return not kube.exists(ctx, "configmap", _config_map_name(target))


def missing_configmap_recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    if not kube.exists(ctx, "configmap", _config_map_name(target)):
        ctx.kubectl("create", "-f", "-", input=json.dumps(ctx.state["configmap"]))
    kube.delete_pods(ctx, target)


def configmap_drift_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    cm = _config_map(ctx, target)
    ctx.state["configmap"] = _clean(cm)
    data = copy.deepcopy(cm.get("data") or {})
    removed = None
    for file_key, text in data.items():
        try:
            parsed = yaml.safe_load(text)
        except yaml.YAMLError:
            continue
        if isinstance(parsed, dict):
            # by default a whole section (listen, peers, database...): a scalar such as a name is
            # often optional, and dropping it would leave a fault with no symptom
            sections = [k for k, v in parsed.items() if isinstance(v, dict)]
            key = params.get("key") or next(iter(sections or parsed), None)
            if key in parsed:
                removed = (file_key, key, parsed.pop(key))
                data[file_key] = yaml.safe_dump(parsed, sort_keys=False)
                break
    if removed is None:
        key = params.get("key") or next(iter(data), None)
        if key is None or key not in data:
            raise PermanentFaultError(f"ConfigMap {cm['metadata']['name']} has no key to remove")
        removed = (key, None, data.pop(key))
    ctx.state["removed"] = {"file": removed[0], "key": removed[1], "value": removed[2]}
    kube.patch(ctx, "configmap", cm["metadata"]["name"], [{"op": "replace", "path": "/data", "value": data}], type="json")
    kube.restart(ctx, target)


def configmap_drift_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    live = kube.get(ctx, "configmap", _config_map_name(target), missing_ok=True)
    if live is None:
        return True
    removed = ctx.state["removed"]
    text = (live.get("data") or {}).get(removed["file"])
    if removed["key"] is None:
        return text is None
    try:
        parsed = yaml.safe_load(text or "") or {}
    except yaml.YAMLError:
        return True
    return removed["key"] not in parsed


def configmap_drift_recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    saved = ctx.state["configmap"]
    kube.patch(ctx, "configmap", saved["metadata"]["name"], [{"op": "replace", "path": "/data", "value": saved.get("data", {})}],
               type="json")
    kube.restart(ctx, target)


def secret_read_by(workload: dict) -> str | None:
    """The first Secret a workload's containers read (an env ``secretKeyRef`` or an ``envFrom``
    ``secretRef``), or ``None``: what missing-secret deletes, judged the same way on the live object
    (injection) and on the app's manifests (the compatibility check)."""
    for container in workload["spec"]["template"]["spec"].get("containers") or []:
        for item in container.get("env") or []:
            ref = (item.get("valueFrom") or {}).get("secretKeyRef")
            if ref:
                return ref["name"]
        for item in container.get("envFrom") or []:
            if "secretRef" in item:
                return item["secretRef"]["name"]
    return None


def _secret_name(ctx: FaultContext, target: Target) -> str:
    name = secret_read_by(kube.workload(ctx, target))
    if name is None:
        raise PermanentFaultError(f"{target.component.name} reads no Secret")
    return name


def missing_secret_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    name = _secret_name(ctx, target)
    ctx.state["secret"] = _clean(kube.get(ctx, "secret", name))
    kube.delete(ctx, "secret", name)
    kube.delete_pods(ctx, target)


def missing_secret_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    return not kube.exists(ctx, "secret", ctx.state["secret"]["metadata"]["name"])


def missing_secret_recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    if not kube.exists(ctx, "secret", ctx.state["secret"]["metadata"]["name"]):
        ctx.kubectl("create", "-f", "-", input=json.dumps(ctx.state["secret"]))
    kube.delete_pods(ctx, target)


# --------------------------------------------------------------------------- policies and admission

def network_policy_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    obj = kube.workload(ctx, target)
    labels = obj["spec"]["template"]["metadata"].get("labels", {})
    selector = {k: v for k, v in labels.items() if k != "pod-template-hash"}
    kube.apply(ctx, {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                     "metadata": {"name": params["name"], "namespace": ctx.namespace},
                     "spec": {"podSelector": {"matchLabels": selector}, "policyTypes": ["Ingress"], "ingress": []}})
    kube.restart_dependents(ctx, target)


def network_policy_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    return kube.exists(ctx, "networkpolicy", params["name"])


def network_policy_recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    kube.delete(ctx, "networkpolicy", params["name"])


def quota_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    kube.apply(ctx, {"apiVersion": "v1", "kind": "ResourceQuota",
                     "metadata": {"name": params["name"], "namespace": ctx.namespace},
                     "spec": {"hard": {"limits.cpu": "64", "limits.memory": "256Gi", "requests.cpu": "64"}}})
    kube.delete_pods(ctx, target)


def quota_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    return kube.exists(ctx, "resourcequota", params["name"])


def quota_recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    kube.delete(ctx, "resourcequota", params["name"])


def limitrange_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    kube.apply(ctx, {"apiVersion": "v1", "kind": "LimitRange",
                     "metadata": {"name": params["name"], "namespace": ctx.namespace},
                     "spec": {"limits": [{"type": "Container", "max": {"memory": params["max_memory"]}}]}})
    kube.delete_pods(ctx, target)


def limitrange_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    return kube.exists(ctx, "limitrange", params["name"])


def limitrange_recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    kube.delete(ctx, "limitrange", params["name"])
    kube.delete_pods(ctx, target)


# --------------------------------------------------------------------------- nodes and scheduling

def taint_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    nodes = [n.removeprefix("node/") for n in ctx.kubectl("get", "nodes", "-o", "name").split()]
    taint = f"{params['key']}={params['value']}:NoSchedule"
    ctx.state["nodes"] = nodes
    ctx.kubectl("taint", "nodes", *nodes, taint, "--overwrite")
    kube.patch(ctx, target.component.kind, target.component.name, {"spec": {"template": {"spec": {"tolerations": [
        {"key": params["key"], "operator": "Equal", "value": "cpu", "effect": "NoSchedule"}]}}}})
    kube.delete_pods(ctx, target)


def taint_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    nodes = json.loads(ctx.kubectl("get", "nodes", "-o", "json"))["items"]
    schedulable = [n for n in nodes if not any(t.get("key") == params["key"] and t.get("effect") == "NoSchedule"
                                               for t in n["spec"].get("taints") or [])]
    if schedulable:
        return False
    obj = kube.workload(ctx, target)
    tolerations = obj["spec"]["template"]["spec"].get("tolerations") or []
    return not any(t.get("key") == params["key"] and (t.get("operator") == "Exists" or t.get("value") == params["value"])
                   for t in tolerations)


def taint_recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    for node in ctx.state.get("nodes", []):
        ctx.kubectl("taint", "nodes", node.removeprefix("node/"), f"{params['key']}-", check=False)
    obj = kube.get(ctx, target.component.kind, target.component.name, missing_ok=True)
    if obj is not None and obj["spec"]["template"]["spec"].get("tolerations"):
        kube.patch(ctx, target.component.kind, target.component.name,
                   [{"op": "remove", "path": "/spec/template/spec/tolerations"}], type="json")


BATCH_PRIORITY = 1000000
BATCH_LABELS = {"app": "batch-reindex"}


def _staying_memory(pods: list[dict], classes: dict[str, int], node: str) -> float:
    """Memory requested on ``node`` by pods the batch workload cannot preempt (priority at or above it)."""
    total = 0.0
    for pod in pods:
        spec = pod.get("spec") or {}
        if spec.get("nodeName") != node or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        priority = spec.get("priority")
        if priority is None:
            priority = classes.get(spec.get("priorityClassName") or "", 0)
        if int(priority) >= BATCH_PRIORITY:
            for container in spec.get("containers") or []:
                request = ((container.get("resources") or {}).get("requests") or {}).get("memory")
                total += parse_quantity(request) if request else 0.0
    return total


def preemption_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    kube.apply(ctx, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                     "metadata": {"name": "batch-critical"}, "value": BATCH_PRIORITY, "globalDefault": False,
                     "description": "nightly batch jobs"})
    nodes = json.loads(ctx.kubectl("get", "nodes", "-o", "json"))["items"]
    pods = json.loads(ctx.kubectl("get", "pods", "-A", "-o", "json"))["items"]
    classes = {pc["metadata"]["name"]: int(pc.get("value") or 0)
               for pc in json.loads(ctx.kubectl("get", "priorityclasses", "-o", "json"))["items"]}
    # One batch pod per node, sized to everything the node can give it once the lower-priority
    # pods are gone: the scheduler preempts the app's pods and their replacements find no room.
    for node in nodes:
        name = node["metadata"]["name"]
        free = parse_quantity(node["status"]["allocatable"]["memory"]) - _staying_memory(pods, classes, name)
        mebibytes = int(free // 2**20)
        if mebibytes <= 0:
            continue
        kube.apply(ctx, {"apiVersion": "apps/v1", "kind": "Deployment",
                         "metadata": {"name": f"batch-reindex-{name}", "namespace": ctx.namespace, "labels": BATCH_LABELS},
                         "spec": {"replicas": 1, "selector": {"matchLabels": dict(BATCH_LABELS, shard=name)},
                                  "template": {"metadata": {"labels": dict(BATCH_LABELS, shard=name)},
                                               "spec": {"priorityClassName": "batch-critical",
                                                        "nodeSelector": {"kubernetes.io/hostname": name},
                                                        "containers": [{"name": "reindex", "image": "busybox:1.36",
                                                                        "command": ["sh", "-c", "sleep 3600000"],
                                                                        "resources": {"requests": {"memory": f"{mebibytes}Mi"}}}]}}}})


def _batch_deployments(ctx: FaultContext) -> list[str]:
    out = ctx.kubectl("get", "deployments", "-n", ctx.namespace, "-l", "app=batch-reindex", "-o", "name", check=False)
    return [line.strip() for line in out.splitlines() if line.strip().startswith("deployment")]


def preemption_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    return bool(_batch_deployments(ctx))


def preemption_recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    for name in _batch_deployments(ctx):
        ctx.kubectl("delete", name, "-n", ctx.namespace, "--ignore-not-found", "--wait=false", check=False)
    ctx.kubectl("delete", "priorityclass", "batch-critical", "--ignore-not-found", check=False)


# --------------------------------------------------------------------------- storage

def pvc_mismatch_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    obj = kube.workload(ctx, target)
    volumes = obj["spec"]["template"]["spec"].get("volumes") or []
    for index, volume in enumerate(volumes):
        if "persistentVolumeClaim" in volume:
            ctx.state["index"] = index
            ctx.state["claim"] = volume["persistentVolumeClaim"]["claimName"]
            kube.patch(ctx, target.component.kind, target.component.name, [{
                "op": "replace", "path": f"/spec/template/spec/volumes/{index}/persistentVolumeClaim/claimName",
                "value": params["claim"]}], type="json")
            return
    raise PermanentFaultError(f"{target.component.name} mounts no PersistentVolumeClaim volume")


def pvc_mismatch_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    obj = kube.workload(ctx, target)
    volumes = obj["spec"]["template"]["spec"].get("volumes") or []
    return any((v.get("persistentVolumeClaim") or {}).get("claimName") == params["claim"] for v in volumes)


def pvc_mismatch_recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    if "index" in ctx.state and pvc_mismatch_present(ctx, target, params):
        kube.patch(ctx, target.component.kind, target.component.name, [{
            "op": "replace", "path": f"/spec/template/spec/volumes/{ctx.state['index']}/persistentVolumeClaim/claimName",
            "value": ctx.state["claim"]}], type="json")
        # a StatefulSet does not replace a pod that never became Ready ("forced rollback"): the
        # Pending pod waiting for the missing claim is deleted by hand, as an SRE would
        kube.delete_pods(ctx, target)


def _pvc_volume_selector() -> TargetSelector:
    return TargetSelector(kinds=("Deployment", "StatefulSet"), requires=("pvcs",))


FAULTS = [
    fault("selector-mismatch", "Service selector gains a label no pod has", inject=selector_mismatch_inject,
          recover=lambda c, t, p: _svc_restore_spec(c, t, p, ("selector",)), is_present=selector_mismatch_present,
          resource_kind="Service", mechanism="Service selector requires a label that no pod carries",
          symptoms=("no endpoints", "connection refused/503 upstream"), keywords=("selector", "label", "endpoints"),
          params=schema(label={"type": "string", "default": "version"}, value={"type": "string", "default": "v2"}),
          values=lambda t, p, s: {"selector": s.get("selector") or {p.get("label"): p.get("value")}}),
    fault("selector-pollution", "Service selector also matches another workload's pods",
          inject=selector_pollution_inject, recover=_selector_pollution_restore, is_present=selector_pollution_present,
          resource_kind="Service", mechanism="the Service's selector also matches another workload's pods, so foreign pods are in its endpoints",
          symptoms=("intermittent errors", "wrong backend answers"), keywords=("selector", "labels", "endpoints", "foreign"),
          values=lambda t, p, s: {"selector": s.get("selector")} if s.get("mode") == "broad" else {"decoy_workload": s.get("decoy")}),
    fault("wrong-target-port", "Service targetPort points at a port nothing listens on",
          inject=wrong_target_port_inject, recover=lambda c, t, p: _svc_restore_spec(c, t, p, ("ports",)),
          is_present=wrong_target_port_present, resource_kind="Service", mechanism="Service targetPort set to a wrong port",
          symptoms=("connection refused",), keywords=("targetPort", "port", "service"),
          params=schema(offset={"type": "integer", "default": 1}),
          values=lambda t, p, s: {"targetPort": {"before": s.get("original_target_port"), "after": s.get("target_port")}}),
    fault("service-port-mismatch", "Service port changed, so clients dial a port it no longer serves",
          inject=service_port_inject, recover=lambda c, t, p: _svc_restore_spec(c, t, p, ("ports",)),
          is_present=service_port_present, resource_kind="Service", mechanism="Service port changed from the one clients use",
          symptoms=("connection refused",), keywords=("port", "service"),
          params=schema(offset={"type": "integer", "default": 10}),
          values=lambda t, p, s: {"port": {"before": s.get("original_port"), "after": s.get("port")}}),
    fault("missing-service", "the component's Service is deleted (and its callers restarted since)",
          inject=missing_service_inject,
          recover=missing_service_recover, is_present=missing_service_present, resource_kind="Service", recreates=("Service/{service}",),
          mechanism="the Service was deleted", symptoms=("DNS NXDOMAIN", "name resolution failure"),
          keywords=("service", "deleted", "missing", "dns")),
    fault("missing-configmap", "the mounted ConfigMap is deleted and the pods restarted",
          inject=missing_configmap_inject, recover=missing_configmap_recover, is_present=missing_configmap_present,
          resource_kind="ConfigMap", mechanism="the ConfigMap the pods mount was deleted", recreates=("ConfigMap/{config_map}",),
          symptoms=("ContainerCreating", "FailedMount", "CreateContainerConfigError"), keywords=("configmap", "deleted", "mount"),
          selector=TargetSelector(kinds=WORKLOADS, requires=("config_map",)),
          values=lambda t, p, s: {"configmap": t.component.config_map}),
    fault("configmap-drift", "a required key is removed from the mounted configuration",
          inject=configmap_drift_inject, recover=configmap_drift_recover, is_present=configmap_drift_present,
          resource_kind="ConfigMap", mechanism="a required key was removed from the service's configuration file",
          symptoms=("service starts with broken config", "validation error in logs"), keywords=("config", "key", "configmap"),
          selector=TargetSelector(kinds=WORKLOADS, requires=("config_map",)), params=schema(key={"type": "string"}),
          values=lambda t, p, s: {"removed_key": (s.get("removed") or {}).get("key") or p.get("key"),
                                  "configmap": t.component.config_map}),
    fault("missing-secret", "the Secret the pods read credentials from is deleted",
          inject=missing_secret_inject, recover=missing_secret_recover, is_present=missing_secret_present,
          resource_kind="Secret", mechanism="the Secret holding the credentials was deleted", recreates=("Secret/*",),
          symptoms=("CreateContainerConfigError", "secret not found"), keywords=("secret", "deleted", "credentials"),
          selector=TargetSelector(kinds=WORKLOADS, roles=("service:*", "frontend"), requires=("env",)),
          values=lambda t, p, s: {"secret": (s.get("secret") or {}).get("metadata", {}).get("name")}),
    fault("network-policy-block", "a NetworkPolicy denies all ingress to the component (callers reconnect)",
          inject=network_policy_inject, recover=network_policy_recover, is_present=network_policy_present,
          resource_kind="NetworkPolicy", mechanism="a deny-all ingress NetworkPolicy selects the component's pods",
          symptoms=("timeouts", "connection refused from callers"), keywords=("networkpolicy", "network policy", "ingress", "deny"),
          params=schema(name={"type": "string", "default": "default-deny-ingress"}), layer="network",
          values=lambda t, p, s: {"networkpolicy": p.get("name")}),
    fault("quota-admission", "a ResourceQuota forces limits and the pods are recreated without them",
          inject=quota_inject, recover=quota_recover, is_present=quota_present, resource_kind="ResourceQuota",
          mechanism="a ResourceQuota on limits makes pods without limits inadmissible",
          symptoms=("FailedCreate", "must specify limits"), keywords=("quota", "resourcequota", "limits"),
          params=schema(name={"type": "string", "default": "compute-budget"}),
          values=lambda t, p, s: {"resourcequota": p.get("name")}),
    fault("limitrange-too-small", "a LimitRange caps container memory below what the pods ask",
          inject=limitrange_inject, recover=limitrange_recover, is_present=limitrange_present, resource_kind="LimitRange",
          mechanism="a LimitRange maximum is below the pods' memory limits, so they cannot be created",
          symptoms=("FailedCreate", "maximum memory usage per Container"), keywords=("limitrange", "limit range", "maximum"),
          params=schema(name={"type": "string", "default": "container-caps"}, max_memory={"type": "string", "default": "16Mi"}),
          values=lambda t, p, s: {"limitrange": p.get("name"), "max_memory": p.get("max_memory")}),
    fault("taint-no-toleration", "every node is tainted and the pods tolerate something else",
          inject=taint_inject, recover=taint_recover, is_present=taint_present, resource_kind="Node",
          mechanism="all nodes carry a NoSchedule taint the pods do not tolerate",
          symptoms=("Pending", "untolerated taint"), keywords=("taint", "toleration", "NoSchedule"),
          params=schema(key={"type": "string", "default": "dedicated"}, value={"type": "string", "default": "gpu"}),
          selector=TargetSelector(kinds=("Deployment",)), values=lambda t, p, s: {"taint": f"{p.get('key')}={p.get('value')}:NoSchedule"}),
    fault("priority-preemption", "a high-priority batch workload preempts the service's pods",
          inject=preemption_inject, recover=preemption_recover, is_present=preemption_present, resource_kind="PriorityClass",
          mechanism="a high-priority batch Deployment fills the nodes and preempts lower-priority pods",
          symptoms=("Preempted", "Pending"), keywords=("priority", "preempt", "PriorityClass"),
          selector=TargetSelector(kinds=("Deployment",), requires=("ports",)),
          values=lambda t, p, s: {"priorityclass": "batch-critical", "workload": "batch-reindex", "label": "app=batch-reindex"},
          prose="A batch workload ({workload}, label {label}) runs at the higher PriorityClass {priorityclass} and asks "
                "for each node's free memory, so the scheduler preempted {component}'s lower-priority pods and "
                "their replacements stay Pending; deleting the batch workload and its PriorityClass lets them run."),
    fault("pvc-claim-mismatch", "a volume's claimName points at a claim that does not exist",
          inject=pvc_mismatch_inject, recover=pvc_mismatch_recover, is_present=pvc_mismatch_present,
          resource_kind="PersistentVolumeClaim", mechanism="the pod's volume references a PersistentVolumeClaim that does not exist",
          symptoms=("Pending", "persistentvolumeclaim not found"), keywords=("pvc", "claim", "volume"), layer="storage",
          params=schema(claim={"type": "string", "default": "data-v2"}), selector=_pvc_volume_selector(),
          values=lambda t, p, s: {"claimName": {"before": s.get("claim"), "after": p.get("claim")}}),
]
