"""Printers for apps, batch, autoscaling and policy workload kinds."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sregym_core.quantity import QuantityError
from sregym_core.quantity_canonical import canonical_quantity

from .columns import (
    Column,
    Printer,
    age_column,
    as_dict,
    as_int,
    as_list,
    bool_ptr,
    container_cells,
    dig,
    format_label_selector,
    format_labels,
    meta_name,
    name_column,
    selector_string,
)
from .timefmt import between, parse_time, since


def _age(obj: dict[str, Any], now: datetime) -> str:
    return since(dig(obj, "metadata", "creationTimestamp"), now)


def _wide_template(obj: dict[str, Any], template_path: tuple[str, ...], selector: Any) -> list[str]:
    """CONTAINERS, IMAGES, SELECTOR; an empty selector reads ``<none>`` (FormatLabelSelector)."""
    names, images = container_cells(dig(obj, *template_path, "spec", "containers"))
    return [names, images, format_label_selector(selector)]


CONTAINERS_COLUMN = Column("Containers", "string", "Names of each container in the template.", priority=1)
IMAGES_COLUMN = Column("Images", "string", "Images referenced by each container in the template.", priority=1)

# ---------------------------------------------------------------------------- Deployment

DEPLOYMENT_PRINTER = Printer(
    (
        name_column(),
        Column("Ready", "string", "Number of the pod with ready state"),
        Column("Up-to-date", "string", ("V1DeploymentStatus", "updated_replicas")),
        Column("Available", "string", ("V1DeploymentStatus", "available_replicas")),
        age_column(),
        CONTAINERS_COLUMN,
        IMAGES_COLUMN,
        Column("Selector", "string", ("V1DeploymentSpec", "selector"), priority=1),
    ),
    lambda d, now: [
        meta_name(d),
        f"{as_int(dig(d, 'status', 'readyReplicas'))}/{as_int(dig(d, 'spec', 'replicas'), 1)}",
        as_int(dig(d, "status", "updatedReplicas")),
        as_int(dig(d, "status", "availableReplicas")),
        _age(d, now),
        *container_cells(dig(d, "spec", "template", "spec", "containers")),
        selector_string(dig(d, "spec", "selector")),
    ],
)

REPLICASET_PRINTER = Printer(
    (
        name_column(),
        Column("Desired", "integer", ("V1ReplicaSetSpec", "replicas")),
        Column("Current", "integer", ("V1ReplicaSetStatus", "replicas")),
        Column("Ready", "integer", ("V1ReplicaSetStatus", "ready_replicas")),
        age_column(),
        CONTAINERS_COLUMN,
        IMAGES_COLUMN,
        Column("Selector", "string", ("V1ReplicaSetSpec", "selector"), priority=1),
    ),
    lambda rs, now: [
        meta_name(rs),
        as_int(dig(rs, "spec", "replicas"), 1),
        as_int(dig(rs, "status", "replicas")),
        as_int(dig(rs, "status", "readyReplicas")),
        _age(rs, now),
        *_wide_template(rs, ("spec", "template"), dig(rs, "spec", "selector")),
    ],
)


def _statefulset_cells(sts: dict[str, Any], now: datetime) -> list[Any]:
    names, images = container_cells(dig(sts, "spec", "template", "spec", "containers"))
    ready = as_int(dig(sts, "status", "readyReplicas"))
    return [meta_name(sts), f"{ready}/{as_int(dig(sts, 'spec', 'replicas'), 1)}", _age(sts, now), names, images]


STATEFULSET_PRINTER = Printer(
    (
        name_column(),
        Column("Ready", "string", "Number of the pod with ready state"),
        age_column(),
        CONTAINERS_COLUMN,
        IMAGES_COLUMN,
    ),
    _statefulset_cells,
)

DAEMONSET_PRINTER = Printer(
    (
        name_column(),
        Column("Desired", "integer", ("V1DaemonSetStatus", "desired_number_scheduled")),
        Column("Current", "integer", ("V1DaemonSetStatus", "current_number_scheduled")),
        Column("Ready", "integer", ("V1DaemonSetStatus", "number_ready")),
        Column("Up-to-date", "integer", ("V1DaemonSetStatus", "updated_number_scheduled")),
        Column("Available", "integer", ("V1DaemonSetStatus", "number_available")),
        Column("Node Selector", "string", ("V1PodSpec", "node_selector")),
        age_column(),
        CONTAINERS_COLUMN,
        IMAGES_COLUMN,
        Column("Selector", "string", ("V1DaemonSetSpec", "selector"), priority=1),
    ),
    lambda ds, now: [
        meta_name(ds),
        as_int(dig(ds, "status", "desiredNumberScheduled")),
        as_int(dig(ds, "status", "currentNumberScheduled")),
        as_int(dig(ds, "status", "numberReady")),
        as_int(dig(ds, "status", "updatedNumberScheduled")),
        as_int(dig(ds, "status", "numberAvailable")),
        format_labels(dig(ds, "spec", "template", "spec", "nodeSelector")),
        _age(ds, now),
        *_wide_template(ds, ("spec", "template"), dig(ds, "spec", "selector")),
    ],
)

# ---------------------------------------------------------------------------- Job / CronJob


def _has_condition(obj: dict[str, Any], kind: str) -> bool:
    """Whether the first condition of this type is True."""
    for condition in as_list(dig(obj, "status", "conditions")):
        if isinstance(condition, dict) and condition.get("type") == kind:
            return condition.get("status") == "True"
    return False


def job_status_text(job: dict[str, Any]) -> str:
    if _has_condition(job, "Complete"):
        return "Complete"
    if _has_condition(job, "Failed"):
        return "Failed"
    if dig(job, "metadata", "deletionTimestamp") is not None:
        return "Terminating"
    if _has_condition(job, "Suspended"):
        return "Suspended"
    if _has_condition(job, "FailureTarget"):
        return "FailureTarget"
    return "Running"


def job_completions_text(job: dict[str, Any]) -> str:
    succeeded = as_int(dig(job, "status", "succeeded"))
    completions = dig(job, "spec", "completions")
    if completions is not None:
        return f"{succeeded}/{as_int(completions)}"
    parallelism = as_int(dig(job, "spec", "parallelism"))
    if parallelism > 1:
        return f"{succeeded}/1 of {parallelism}"
    return f"{succeeded}/1"


def job_duration_text(job: dict[str, Any], now: datetime) -> str:
    start = dig(job, "status", "startTime")
    if parse_time(start) is None:
        return ""
    completion = dig(job, "status", "completionTime")
    if parse_time(completion) is None:
        return since(start, now)
    return between(start, completion)


JOB_PRINTER = Printer(
    (
        name_column(),
        Column("Status", "string", "Status of the job."),
        Column("Completions", "string", ("V1JobStatus", "succeeded")),
        Column("Duration", "string", "Time required to complete the job."),
        age_column(),
        CONTAINERS_COLUMN,
        IMAGES_COLUMN,
        Column("Selector", "string", ("V1JobSpec", "selector"), priority=1),
    ),
    lambda job, now: [
        meta_name(job),
        job_status_text(job),
        job_completions_text(job),
        job_duration_text(job, now),
        _age(job, now),
        *_wide_template(job, ("spec", "template"), dig(job, "spec", "selector")),
    ],
)


def _cronjob_cells(cronjob: dict[str, Any], now: datetime) -> list[Any]:
    spec = as_dict(cronjob.get("spec"))
    last = dig(cronjob, "status", "lastScheduleTime")
    job_spec = dig(spec, "jobTemplate", "spec", default={})
    return [
        meta_name(cronjob),
        str(spec.get("schedule") or ""),
        str(spec.get("timeZone") or "<none>"),
        bool_ptr(spec.get("suspend")),
        len(as_list(dig(cronjob, "status", "active"))),
        since(last, now) if parse_time(last) is not None else "<none>",
        _age(cronjob, now),
        *_wide_template(job_spec, ("template",), job_spec.get("selector")),
    ]


CRONJOB_PRINTER = Printer(
    (
        name_column(),
        Column("Schedule", "string", ("V1CronJobSpec", "schedule")),
        Column("Timezone", "string", ("V1CronJobSpec", "time_zone")),
        Column("Suspend", "boolean", ("V1CronJobSpec", "suspend")),
        Column("Active", "integer", ("V1CronJobStatus", "active")),
        Column("Last Schedule", "string", ("V1CronJobStatus", "last_schedule_time")),
        age_column(),
        CONTAINERS_COLUMN,
        IMAGES_COLUMN,
        Column("Selector", "string", ("V1JobSpec", "selector"), priority=1),
    ),
    _cronjob_cells,
)

# ---------------------------------------------------------------------------- HPA


def _q(value: Any) -> str:
    if value is None:
        return "<unknown>"
    try:
        return canonical_quantity(value)
    except QuantityError:
        return str(value)


def _v1_as_v2_metrics(hpa: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """autoscaling/v1 objects only carry a CPU target; express it as a v2 resource metric."""
    spec = as_dict(hpa.get("spec"))
    status = as_dict(hpa.get("status"))
    if "metrics" in spec or "targetCPUUtilizationPercentage" not in spec:
        return as_list(spec.get("metrics")), as_list(status.get("currentMetrics"))
    spec_metric = {
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": spec["targetCPUUtilizationPercentage"]}},
    }
    statuses: list[Any] = []
    if status.get("currentCPUUtilizationPercentage") is not None:
        statuses = [
            {
                "type": "Resource",
                "resource": {"name": "cpu", "current": {"averageUtilization": status["currentCPUUtilizationPercentage"]}},
            }
        ]
    return [spec_metric], statuses


def _metric_text(spec: dict[str, Any], status: dict[str, Any]) -> str:
    kind = spec.get("type")
    if kind in ("Resource", "ContainerResource"):
        key = "resource" if kind == "Resource" else "containerResource"
        source = as_dict(spec.get(key))
        current = as_dict(dig(status, key, "current"))
        target = as_dict(source.get("target"))
        name = str(source.get("name") or "")
        if target.get("averageValue") is not None:
            now_text = _q(current.get("averageValue")) if dig(status, key) is not None else "<unknown>"
            return f"{name}: {now_text}/{_q(target['averageValue'])}"
        now_text = "<unknown>"
        if current.get("averageUtilization") is not None:
            now_text = f"{as_int(current['averageUtilization'])}%"
        goal = f"{as_int(target['averageUtilization'])}%" if target.get("averageUtilization") is not None else "<auto>"
        return f"{name}: {now_text}/{goal}"
    if kind == "Pods":
        average = dig(status, "pods", "current", "averageValue") if dig(status, "pods") is not None else None
        return f"{_q(average)}/{_q(dig(spec, 'pods', 'target', 'averageValue'))}"
    if kind in ("Object", "External"):
        key = kind.lower()
        target = as_dict(dig(spec, key, "target"))
        current = as_dict(dig(status, key, "current"))
        present = dig(status, key) is not None
        if target.get("averageValue") is not None:
            now_text = _q(current.get("averageValue")) if present else "<unknown>"
            return f"{now_text}/{_q(target['averageValue'])} (avg)"
        now_text = _q(current.get("value")) if present else "<unknown>"
        return f"{now_text}/{_q(target.get('value'))}"
    return "<unknown type>"


def hpa_targets_text(hpa: dict[str, Any], limit: int = 2) -> str:
    specs, statuses = _v1_as_v2_metrics(hpa)
    specs = [s for s in specs if isinstance(s, dict)]
    if not specs:
        return "<none>"
    texts = []
    for index, spec in enumerate(specs):
        status = statuses[index] if index < len(statuses) and isinstance(statuses[index], dict) else {}
        texts.append(_metric_text(spec, status))
    text = ", ".join(texts[:limit])
    if len(texts) > limit:
        return f"{text} + {len(texts) - limit} more..."
    return text


def _hpa_cells(hpa: dict[str, Any], now: datetime) -> list[Any]:
    spec = as_dict(hpa.get("spec"))
    target = as_dict(spec.get("scaleTargetRef"))
    min_replicas = spec.get("minReplicas")
    return [
        meta_name(hpa),
        f"{target.get('kind', '')}/{target.get('name', '')}",
        hpa_targets_text(hpa),
        str(min_replicas) if min_replicas is not None else "<unset>",
        as_int(spec.get("maxReplicas")),
        as_int(dig(hpa, "status", "currentReplicas")),
        _age(hpa, now),
    ]


HPA_PRINTER = Printer(
    (
        name_column(),
        Column("Reference", "string", ("V2HorizontalPodAutoscalerSpec", "scale_target_ref")),
        Column("Targets", "string", ("V2HorizontalPodAutoscalerSpec", "metrics")),
        Column("MinPods", "string", ("V2HorizontalPodAutoscalerSpec", "min_replicas")),
        Column("MaxPods", "string", ("V2HorizontalPodAutoscalerSpec", "max_replicas")),
        Column("Replicas", "string", ("V2HorizontalPodAutoscalerStatus", "current_replicas")),
        age_column(),
    ),
    _hpa_cells,
)

# ---------------------------------------------------------------------------- PDB / ControllerRevision

PDB_PRINTER = Printer(
    (
        name_column(),
        Column("Min Available", "string", "The minimum number of pods that must be available."),
        Column("Max Unavailable", "string", "The maximum number of pods that may be unavailable."),
        Column("Allowed Disruptions", "integer", "Calculated number of pods that may be disrupted at this time."),
        age_column(),
    ),
    lambda pdb, now: [
        meta_name(pdb),
        str(dig(pdb, "spec", "minAvailable")) if dig(pdb, "spec", "minAvailable") is not None else "N/A",
        str(dig(pdb, "spec", "maxUnavailable")) if dig(pdb, "spec", "maxUnavailable") is not None else "N/A",
        as_int(dig(pdb, "status", "disruptionsAllowed")),
        _age(pdb, now),
    ],
)


def _controller_of(obj: dict[str, Any]) -> str:
    for ref in as_list(dig(obj, "metadata", "ownerReferences")):
        if isinstance(ref, dict) and ref.get("controller"):
            group = str(ref.get("apiVersion") or "").split("/")[0] if "/" in str(ref.get("apiVersion") or "") else ""
            kind = str(ref.get("kind") or "").lower()
            resource = f"{kind}.{group}" if group else kind
            return f"{resource}/{ref.get('name', '')}"
    return "<none>"


CONTROLLER_REVISION_PRINTER = Printer(
    (
        name_column(),
        Column("Controller", "string", "Controller of the object"),
        Column("Revision", "string", ("V1ControllerRevision", "revision")),
        age_column(),
    ),
    lambda rev, now: [meta_name(rev), _controller_of(rev), as_int(rev.get("revision")), _age(rev, now)],
)
