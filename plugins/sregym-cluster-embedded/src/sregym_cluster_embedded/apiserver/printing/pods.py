"""The Pod printer: READY, STATUS, RESTARTS and the wide columns, following kubectl's rules.

The STATUS column is the part agents read most, so the precedence below mirrors the real
printer step by step: pod phase or ``status.reason`` → scheduling gates → init containers →
regular containers (scanned last to first) → Completed-but-running fix-up → deletion.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from .columns import (
    Column,
    Printer,
    age_column,
    as_dict,
    as_int,
    as_list,
    dig,
    meta_name,
    name_column,
)
from .timefmt import parse_time, since

NODE_UNREACHABLE_REASON = "NodeLost"

POD_COLUMNS = (
    name_column(),
    Column("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
    Column("Status", "string", "The aggregate status of the containers in this pod."),
    Column(
        "Restarts",
        "string",
        "The number of times the containers in this pod have been restarted and when the last "
        "container in this pod has restarted.",
    ),
    age_column(),
    Column("IP", "string", ("V1PodStatus", "pod_ip"), priority=1),
    Column("Node", "string", ("V1PodSpec", "node_name"), priority=1),
    Column("Nominated Node", "string", ("V1PodStatus", "nominated_node_name"), priority=1),
    Column("Readiness Gates", "string", ("V1PodSpec", "readiness_gates"), priority=1),
)


def _is_restartable_init(container: dict[str, Any] | None) -> bool:
    """Sidecar containers: init containers with ``restartPolicy: Always``."""
    return container is not None and container.get("restartPolicy") == "Always"


def _condition_true(status: dict[str, Any], kind: str) -> bool:
    for condition in as_list(status.get("conditions")):
        if isinstance(condition, dict) and condition.get("type") == kind:
            return condition.get("status") == "True"
    return False


def _terminated_reason(terminated: dict[str, Any], prefix: str = "") -> str:
    reason = terminated.get("reason") or ""
    if reason:
        return prefix + reason
    signal = as_int(terminated.get("signal"))
    if signal:
        return f"{prefix}Signal:{signal}"
    return f"{prefix}ExitCode:{as_int(terminated.get('exitCode'))}"


class _Restarts:
    """Sum of restarts plus the most recent ``lastState.terminated.finishedAt``."""

    def __init__(self) -> None:
        self.count = 0
        self.last: datetime | None = None

    def add(self, status: dict[str, Any]) -> None:
        self.count += as_int(status.get("restartCount"))
        finished = parse_time(dig(status, "lastState", "terminated", "finishedAt"))
        if finished is not None and (self.last is None or finished > self.last):
            self.last = finished


def pod_status_summary(pod: dict[str, Any]) -> tuple[int, int, str, _Restarts]:
    """Return (ready containers, total containers, STATUS text, restarts) for a pod dict."""
    spec = as_dict(pod.get("spec"))
    status = as_dict(pod.get("status"))
    containers = [c for c in as_list(spec.get("containers")) if isinstance(c, dict)]
    init_specs = {c.get("name"): c for c in as_list(spec.get("initContainers")) if isinstance(c, dict)}
    init_count = len(as_list(spec.get("initContainers")))

    total = len(containers) + sum(1 for c in init_specs.values() if _is_restartable_init(c))
    ready = 0
    phase = str(status.get("phase") or "")
    reason = str(status.get("reason") or phase)

    for condition in as_list(status.get("conditions")):
        if (
            isinstance(condition, dict)
            and condition.get("type") == "PodScheduled"
            and condition.get("reason") == "SchedulingGated"
        ):
            reason = "SchedulingGated"

    all_restarts = _Restarts()
    sidecar_restarts = _Restarts()
    initializing = False
    for index, init_status in enumerate(as_list(status.get("initContainerStatuses"))):
        if not isinstance(init_status, dict):
            continue
        all_restarts.add(init_status)
        container_spec = init_specs.get(init_status.get("name"))
        sidecar = _is_restartable_init(container_spec)
        if sidecar:
            sidecar_restarts.add(init_status)
        state = as_dict(init_status.get("state"))
        terminated = state.get("terminated") if isinstance(state.get("terminated"), dict) else None
        waiting = state.get("waiting") if isinstance(state.get("waiting"), dict) else None
        if terminated is not None and as_int(terminated.get("exitCode")) == 0:
            continue
        if sidecar and init_status.get("started") is True:
            if init_status.get("ready"):
                ready += 1
            continue
        if terminated is not None:
            reason = _terminated_reason(terminated, "Init:")
        elif waiting is not None and waiting.get("reason") and waiting.get("reason") != "PodInitializing":
            reason = f"Init:{waiting['reason']}"
        else:
            reason = f"Init:{index}/{init_count}"
        initializing = True
        break

    restarts = all_restarts
    if not initializing or _condition_true(status, "Initialized"):
        restarts = sidecar_restarts
        has_running = False
        for container_status in reversed(as_list(status.get("containerStatuses"))):
            if not isinstance(container_status, dict):
                continue
            restarts.add(container_status)
            state = as_dict(container_status.get("state"))
            waiting = as_dict(state.get("waiting"))
            terminated = state.get("terminated") if isinstance(state.get("terminated"), dict) else None
            if waiting.get("reason"):
                reason = str(waiting["reason"])
            elif terminated is not None:
                reason = _terminated_reason(terminated)
            elif container_status.get("ready") and isinstance(state.get("running"), dict):
                has_running = True
                ready += 1
        # A container that completed while another still runs must not make the pod look done.
        if reason == "Completed" and has_running:
            reason = "Running" if _condition_true(status, "Ready") else "NotReady"

    deleting = dig(pod, "metadata", "deletionTimestamp") is not None
    if deleting and status.get("reason") == NODE_UNREACHABLE_REASON:
        reason = "Unknown"
    elif deleting and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"
    return ready, total, reason, restarts


def _restarts_text(restarts: _Restarts, now: datetime) -> str:
    if restarts.count != 0 and restarts.last is not None:
        return f"{restarts.count} ({since(restarts.last, now)} ago)"
    return str(restarts.count)


def _readiness_gates(pod: dict[str, Any]) -> str:
    gates = [g for g in as_list(dig(pod, "spec", "readinessGates")) if isinstance(g, dict)]
    if not gates:
        return "<none>"
    conditions = [c for c in as_list(dig(pod, "status", "conditions")) if isinstance(c, dict)]
    true_count = 0
    for gate in gates:
        for condition in conditions:
            if condition.get("type") == gate.get("conditionType"):
                if condition.get("status") == "True":
                    true_count += 1
                break
    return f"{true_count}/{len(gates)}"


def _pod_cells(pod: dict[str, Any], now: datetime) -> list[Any]:
    ready, total, reason, restarts = pod_status_summary(pod)
    status = as_dict(pod.get("status"))
    pod_ips = [p for p in as_list(status.get("podIPs")) if isinstance(p, dict)]
    pod_ip = str(pod_ips[0].get("ip") or "") if pod_ips else ""
    pod_ip = pod_ip or str(status.get("podIP") or "") or "<none>"
    return [
        meta_name(pod),
        f"{ready}/{total}",
        reason,
        _restarts_text(restarts, now),
        since(dig(pod, "metadata", "creationTimestamp"), now),
        pod_ip,
        str(dig(pod, "spec", "nodeName", default="")) or "<none>",
        str(status.get("nominatedNodeName") or "") or "<none>",
        _readiness_gates(pod),
    ]


def _pod_conditions(pod: dict[str, Any]) -> list[dict[str, Any]]:
    phase = dig(pod, "status", "phase")
    if phase == "Succeeded":
        return [
            {"type": "Completed", "status": "True", "reason": "Succeeded", "message": "The pod has completed successfully."}
        ]
    if phase == "Failed":
        return [{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}]
    return []


POD_PRINTER = Printer(POD_COLUMNS, _pod_cells, _pod_conditions)
