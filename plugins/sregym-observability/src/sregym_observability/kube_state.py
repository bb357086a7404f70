"""kube-state-metrics-named series computed from Kubernetes objects.

Metric and label names follow kube-state-metrics v2 so PromQL and alert rules written for a real
cluster work unchanged (e.g. ``kube_job_status_failed`` labels the job ``job_name``, because
``job`` belongs to Prometheus).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sregym_core.quantity import quantity_or_zero

from .collector import sanitize_label
from .promtext import MetricFamilies

POD_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
WAITING_REASONS = ("ContainerCreating", "CrashLoopBackOff", "CreateContainerConfigError", "ErrImagePull",
                   "ImagePullBackOff", "CreateContainerError", "InvalidImageName")
TERMINATED_REASONS = ("OOMKilled", "Completed", "Error", "ContainerCannotRun", "DeadlineExceeded", "Evicted")

_HELP = {
    "kube_pod_info": "Information about pod.",
    "kube_pod_labels": "Kubernetes labels converted to Prometheus labels.",
    "kube_pod_owner": "Information about the Pod's owner.",
    "kube_pod_status_phase": "The pods current phase.",
    "kube_pod_status_ready": "Describes whether the pod is ready to serve requests.",
    "kube_pod_status_scheduled": "Describes the status of the scheduling process for the pod.",
    "kube_pod_container_info": "Information about a container in a pod.",
    "kube_pod_container_status_ready": "Describes whether the containers readiness check succeeded.",
    "kube_pod_container_status_running": "Describes whether the container is currently in running state.",
    "kube_pod_container_status_waiting": "Describes whether the container is currently in waiting state.",
    "kube_pod_container_status_terminated": "Describes whether the container is currently in terminated state.",
    "kube_pod_container_status_restarts_total": "The number of container restarts per container.",
    "kube_pod_container_status_waiting_reason": "Describes the reason the container is currently in waiting state.",
    "kube_pod_status_unschedulable": "Describes the unschedulable status for the pod.",
    "kube_pod_container_status_terminated_reason": "Describes the reason the container is currently in terminated state.",
    "kube_pod_container_status_last_terminated_reason": "Describes the last reason the container was in terminated state.",
    "kube_pod_container_resource_limits": "The number of requested limit resource by a container.",
    "kube_pod_container_resource_requests": "The number of requested request resource by a container.",
}
_COUNTERS = {"kube_pod_container_status_restarts_total"}


def _resource_unit(resource: str) -> str:
    if resource == "cpu":
        return "core"
    if resource in ("memory", "ephemeral-storage", "storage") or resource.startswith("hugepages-"):
        return "byte"
    return "integer"


def _meta(obj: Mapping) -> tuple[str, str, str]:
    meta = obj.get("metadata") or {}
    return meta.get("namespace", ""), meta.get("name", ""), meta.get("uid", "")


def _bool_series(families: MetricFamilies, name: str, base: dict[str, str], truth: str, key: str = "condition") -> None:
    for value in ("true", "false", "unknown"):
        families.add(name, {**base, key: value}, 1 if truth == value else 0)


def _condition_truth(conditions: Sequence[Mapping], kind: str) -> str:
    for cond in conditions or []:
        if cond.get("type") == kind:
            return str(cond.get("status", "Unknown")).lower()
    return "unknown"


def add_pod_metrics(families: MetricFamilies, pods: Sequence[Mapping]) -> None:
    for name in _HELP:
        families.declare(name, "counter" if name in _COUNTERS else "gauge", _HELP[name])
    for pod in pods:
        ns, name, uid = _meta(pod)
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        base = {"namespace": ns, "pod": name, "uid": uid}
        node = spec.get("nodeName") or ""
        owners = (pod.get("metadata") or {}).get("ownerReferences") or []
        owner = next((o for o in owners if o.get("controller")), owners[0] if owners else {})
        families.add("kube_pod_info", {**base, "host_ip": status.get("hostIP", ""), "pod_ip": status.get("podIP", ""),
                                       "node": node, "created_by_kind": owner.get("kind", "<none>"),
                                       "created_by_name": owner.get("name", "<none>"),
                                       "priority_class": spec.get("priorityClassName", ""),
                                       "host_network": str(bool(spec.get("hostNetwork"))).lower()}, 1)
        labels = (pod.get("metadata") or {}).get("labels") or {}
        families.add("kube_pod_labels", {**base, **{f"label_{sanitize_label(k)}": v for k, v in labels.items()}}, 1)
        families.add("kube_pod_owner", {**base, "owner_kind": owner.get("kind", "<none>"),
                                        "owner_name": owner.get("name", "<none>"),
                                        "owner_is_controller": str(bool(owner.get("controller"))).lower()
                                        if owner else "<none>"}, 1)
        phase = status.get("phase") or "Pending"
        # A pod being deleted is reported as phase Unknown by neither; keep the real phase.
        for candidate in POD_PHASES:
            families.add("kube_pod_status_phase", {**base, "phase": candidate}, 1 if candidate == phase else 0)
        conditions = status.get("conditions") or []
        _bool_series(families, "kube_pod_status_ready", base, _condition_truth(conditions, "Ready"))
        _bool_series(families, "kube_pod_status_scheduled", base, _condition_truth(conditions, "PodScheduled"))
        if any(c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason") == "Unschedulable"
               for c in conditions):  # kube-state-metrics: a series only for pods the scheduler gave up on
            families.add("kube_pod_status_unschedulable", base, 1)
        _add_container_status(families, base, status.get("containerStatuses") or [], spec.get("containers") or [])
        for container in spec.get("containers") or []:
            resources = container.get("resources") or {}
            for kind in ("limits", "requests"):
                for resource, quantity in (resources.get(kind) or {}).items():
                    families.add(f"kube_pod_container_resource_{kind}",
                                 {**base, "container": container.get("name", ""), "node": node,
                                  "resource": sanitize_label(resource), "unit": _resource_unit(resource)},
                                 quantity_or_zero(quantity))


def _add_container_status(families: MetricFamilies, base: dict[str, str], statuses: Sequence[Mapping],
                          containers: Sequence[Mapping]) -> None:
    images = {c.get("name"): c.get("image", "") for c in containers}
    for cs in statuses:
        cbase = {**base, "container": cs.get("name", "")}
        state, last = cs.get("state") or {}, cs.get("lastState") or {}
        families.add("kube_pod_container_info", {**cbase, "image": cs.get("image") or images.get(cs.get("name"), ""),
                                                 "container_id": cs.get("containerID", "")}, 1)
        families.add("kube_pod_container_status_ready", cbase, 1 if cs.get("ready") else 0)
        families.add("kube_pod_container_status_running", cbase, 1 if "running" in state else 0)
        families.add("kube_pod_container_status_waiting", cbase, 1 if "waiting" in state else 0)
        families.add("kube_pod_container_status_terminated", cbase, 1 if "terminated" in state else 0)
        families.add("kube_pod_container_status_restarts_total", cbase, int(cs.get("restartCount") or 0))
        if "waiting" in state and state["waiting"].get("reason"):
            families.add("kube_pod_container_status_waiting_reason", {**cbase, "reason": state["waiting"]["reason"]}, 1)
        if "terminated" in state and state["terminated"].get("reason"):
            families.add("kube_pod_container_status_terminated_reason",
                         {**cbase, "reason": state["terminated"]["reason"]}, 1)
        if "terminated" in last and last["terminated"].get("reason"):
            families.add("kube_pod_container_status_last_terminated_reason",
                         {**cbase, "reason": last["terminated"]["reason"]}, 1)
            if last["terminated"].get("exitCode") is not None:
                families.add("kube_pod_container_status_last_terminated_exitcode", cbase,
                             int(last["terminated"]["exitCode"]))


def add_workload_metrics(families: MetricFamilies, *, deployments: Sequence[Mapping] = (),
                         statefulsets: Sequence[Mapping] = (), daemonsets: Sequence[Mapping] = (),
                         replicasets: Sequence[Mapping] = (), jobs: Sequence[Mapping] = (),
                         hpas: Sequence[Mapping] = ()) -> None:
    for d in deployments:
        ns, name, _ = _meta(d)
        base = {"namespace": ns, "deployment": name}
        spec, status = d.get("spec") or {}, d.get("status") or {}
        families.add("kube_deployment_spec_replicas", base, int(spec.get("replicas", 1)))
        families.add("kube_deployment_spec_paused", base, 1 if spec.get("paused") else 0)
        families.add("kube_deployment_status_replicas", base, int(status.get("replicas") or 0))
        families.add("kube_deployment_status_replicas_available", base, int(status.get("availableReplicas") or 0))
        families.add("kube_deployment_status_replicas_unavailable", base, int(status.get("unavailableReplicas") or 0))
        families.add("kube_deployment_status_replicas_updated", base, int(status.get("updatedReplicas") or 0))
        families.add("kube_deployment_status_replicas_ready", base, int(status.get("readyReplicas") or 0))
        families.add("kube_deployment_metadata_generation", base, int((d.get("metadata") or {}).get("generation") or 0))
        families.add("kube_deployment_status_observed_generation", base, int(status.get("observedGeneration") or 0))
        for cond in status.get("conditions") or []:
            for value in ("true", "false", "unknown"):
                families.add("kube_deployment_status_condition",
                             {**base, "condition": cond.get("type", ""), "status": value},
                             1 if str(cond.get("status", "")).lower() == value else 0)
    for s in statefulsets:
        ns, name, _ = _meta(s)
        base = {"namespace": ns, "statefulset": name}
        spec, status = s.get("spec") or {}, s.get("status") or {}
        families.add("kube_statefulset_replicas", base, int(spec.get("replicas", 1)))
        families.add("kube_statefulset_status_replicas", base, int(status.get("replicas") or 0))
        families.add("kube_statefulset_status_replicas_ready", base, int(status.get("readyReplicas") or 0))
        families.add("kube_statefulset_status_replicas_available", base, int(status.get("availableReplicas") or 0))
        families.add("kube_statefulset_status_replicas_current", base, int(status.get("currentReplicas") or 0))
    for ds in daemonsets:
        ns, name, _ = _meta(ds)
        base = {"namespace": ns, "daemonset": name}
        status = ds.get("status") or {}
        families.add("kube_daemonset_status_desired_number_scheduled", base, int(status.get("desiredNumberScheduled") or 0))
        families.add("kube_daemonset_status_number_ready", base, int(status.get("numberReady") or 0))
        families.add("kube_daemonset_status_number_unavailable", base, int(status.get("numberUnavailable") or 0))
    for rs in replicasets:
        ns, name, _ = _meta(rs)
        base = {"namespace": ns, "replicaset": name}
        families.add("kube_replicaset_spec_replicas", base, int((rs.get("spec") or {}).get("replicas", 1)))
        families.add("kube_replicaset_status_ready_replicas", base, int((rs.get("status") or {}).get("readyReplicas") or 0))
    for job in jobs:
        ns, name, _ = _meta(job)
        base = {"namespace": ns, "job_name": name}
        status = job.get("status") or {}
        families.add("kube_job_status_active", base, int(status.get("active") or 0))
        families.add("kube_job_status_succeeded", base, int(status.get("succeeded") or 0))
        families.add("kube_job_status_failed", base, int(status.get("failed") or 0))
        for kind, metric in (("Complete", "kube_job_complete"), ("Failed", "kube_job_failed")):
            truth = _condition_truth(status.get("conditions") or [], kind)
            if truth != "unknown":
                _bool_series(families, metric, base, truth)
    for hpa in hpas:
        ns, name, _ = _meta(hpa)
        base = {"namespace": ns, "horizontalpodautoscaler": name}
        spec, status = hpa.get("spec") or {}, hpa.get("status") or {}
        families.add("kube_horizontalpodautoscaler_spec_min_replicas", base, int(spec.get("minReplicas", 1)))
        families.add("kube_horizontalpodautoscaler_spec_max_replicas", base, int(spec.get("maxReplicas") or 0))
        families.add("kube_horizontalpodautoscaler_status_current_replicas", base, int(status.get("currentReplicas") or 0))
        families.add("kube_horizontalpodautoscaler_status_desired_replicas", base, int(status.get("desiredReplicas") or 0))
        for cond in status.get("conditions") or []:
            for value in ("true", "false", "unknown"):
                families.add("kube_horizontalpodautoscaler_status_condition",
                             {**base, "condition": cond.get("type", ""), "status": value},
                             1 if str(cond.get("status", "")).lower() == value else 0)


def add_cluster_metrics(families: MetricFamilies, *, nodes: Sequence[Mapping] = (),
                        endpoints: Sequence[Mapping] = (), services: Sequence[Mapping] = (),
                        namespaces: Sequence[Mapping] = (), pvcs: Sequence[Mapping] = ()) -> None:
    for node in nodes:
        _, name, _ = _meta(node)
        spec, status = node.get("spec") or {}, node.get("status") or {}
        families.add("kube_node_spec_unschedulable", {"node": name}, 1 if spec.get("unschedulable") else 0)
        for cond in status.get("conditions") or []:
            for value in ("true", "false", "unknown"):
                families.add("kube_node_status_condition",
                             {"node": name, "condition": cond.get("type", ""), "status": value},
                             1 if str(cond.get("status", "")).lower() == value else 0)
        for kind in ("allocatable", "capacity"):
            for resource, quantity in (status.get(kind) or {}).items():
                families.add(f"kube_node_status_{kind}", {"node": name, "resource": sanitize_label(resource),
                                                          "unit": _resource_unit(resource)}, quantity_or_zero(quantity))
        for taint in spec.get("taints") or []:
            families.add("kube_node_spec_taint", {"node": name, "key": taint.get("key", ""),
                                                  "value": taint.get("value", ""), "effect": taint.get("effect", "")}, 1)
    for ep in endpoints:
        ns, name, _ = _meta(ep)
        base = {"namespace": ns, "endpoint": name}
        ready = not_ready = 0
        for subset in ep.get("subsets") or []:
            for address in subset.get("addresses") or []:
                ready += 1
                families.add("kube_endpoint_address", {**base, "ip": address.get("ip", ""), "ready": "true"}, 1)
            for address in subset.get("notReadyAddresses") or []:
                not_ready += 1
                families.add("kube_endpoint_address", {**base, "ip": address.get("ip", ""), "ready": "false"}, 1)
        families.add("kube_endpoint_address_available", base, ready)
        families.add("kube_endpoint_address_not_ready", base, not_ready)
        families.add("kube_endpoint_info", base, 1)
    for svc in services:
        ns, name, uid = _meta(svc)
        spec = svc.get("spec") or {}
        base = {"namespace": ns, "service": name, "uid": uid}
        families.add("kube_service_info", {**base, "cluster_ip": spec.get("clusterIP", ""),
                                           "external_name": spec.get("externalName", ""),
                                           "load_balancer_ip": spec.get("loadBalancerIP", "")}, 1)
        families.add("kube_service_spec_type", {**base, "type": spec.get("type", "ClusterIP")}, 1)
        selector = spec.get("selector") or {}
        families.add("kube_service_selector", {**base, **{f"label_{sanitize_label(k)}": v
                                                          for k, v in selector.items()}}, 1)
    for ns_obj in namespaces:
        _, name, _ = _meta(ns_obj)
        phase = (ns_obj.get("status") or {}).get("phase", "Active")
        for candidate in ("Active", "Terminating"):
            families.add("kube_namespace_status_phase", {"namespace": name, "phase": candidate},
                         1 if candidate == phase else 0)
    for pvc in pvcs:
        ns, name, _ = _meta(pvc)
        phase = (pvc.get("status") or {}).get("phase", "Pending")
        for candidate in ("Pending", "Bound", "Lost"):
            families.add("kube_persistentvolumeclaim_status_phase",
                         {"namespace": ns, "persistentvolumeclaim": name, "phase": candidate},
                         1 if candidate == phase else 0)


# (metric helper name, API path) for everything the kube-state exporter lists on each scrape.
RESOURCE_PATHS = {
    "pods": "/api/v1/pods",
    "nodes": "/api/v1/nodes",
    "endpoints": "/api/v1/endpoints",
    "services": "/api/v1/services",
    "namespaces": "/api/v1/namespaces",
    "pvcs": "/api/v1/persistentvolumeclaims",
    "deployments": "/apis/apps/v1/deployments",
    "statefulsets": "/apis/apps/v1/statefulsets",
    "daemonsets": "/apis/apps/v1/daemonsets",
    "replicasets": "/apis/apps/v1/replicasets",
    "jobs": "/apis/batch/v1/jobs",
    "hpas": "/apis/autoscaling/v2/horizontalpodautoscalers",
}


def render_kube_state(objects: Mapping[str, Sequence[Mapping]]) -> str:
    """Render every family from listed objects keyed as in :data:`RESOURCE_PATHS`."""
    families = MetricFamilies()
    add_pod_metrics(families, objects.get("pods", ()))
    add_workload_metrics(families, deployments=objects.get("deployments", ()),
                         statefulsets=objects.get("statefulsets", ()), daemonsets=objects.get("daemonsets", ()),
                         replicasets=objects.get("replicasets", ()), jobs=objects.get("jobs", ()),
                         hpas=objects.get("hpas", ()))
    add_cluster_metrics(families, nodes=objects.get("nodes", ()), endpoints=objects.get("endpoints", ()),
                        services=objects.get("services", ()), namespaces=objects.get("namespaces", ()),
                        pvcs=objects.get("pvcs", ()))
    return families.render()
