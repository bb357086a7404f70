"""Admission the real API server applies on create: LimitRanger, ResourceQuota, ServiceAccount.

Messages match the real plugins word for word, because agents see them in ``kubectl``
errors and in ReplicaSet ``FailedCreate`` events, e.g.::

    pods "web-1" is forbidden: maximum cpu usage per Container is 500m, but limit is 1
    pods "web-1" is forbidden: failed quota: q: must specify limits.cpu for: app
    pods "web-1" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from sregym_core.quantity import DECIMAL_SI, QuantityError, milli_value
from sregym_core.quantity_canonical import format_quantity, stored_amount

from .defaults import apply_defaults, pod_qos_class
from .shapes import as_dict

__all__ = [
    "AdmissionError",
    "apply_default_storage_class",
    "apply_limit_ranges",
    "apply_priority",
    "check_quota",
    "compute_quota_status",
    "missing_service_account",
    "mount_service_account_token",
    "object_usage",
]

LIMIT_RANGER_ANNOTATION = "kubernetes.io/limit-ranger"
SERVICE_ACCOUNT_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
_TOKEN_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


class AdmissionError(Exception):
    """A rejected request; the API server turns it into a Kubernetes ``Status``."""

    def __init__(self, code: int, reason: str, message: str, *, name: str = "", kind: str = "", group: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.name = name
        self.kind = kind
        self.group = group

    def status(self) -> dict[str, Any]:
        details: dict[str, Any] = {"name": self.name, "kind": self.kind}
        if self.group:
            details["group"] = self.group
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "details": details,
            "code": self.code,
        }


def _forbidden(resource: str, obj: dict[str, Any], reason_text: str) -> AdmissionError:
    metadata = as_dict(obj.get("metadata"))
    # Like the real plugin: before name generation the generateName prefix stands in for the name.
    name = str(metadata.get("name") or metadata.get("generateName") or "Unknown")
    plural, _, group = resource.partition(".")
    return AdmissionError(403, "Forbidden", f'{resource} "{name}" is forbidden: {reason_text}', name=name, kind=plural, group=group)


def missing_service_account(pod: dict[str, Any], namespace: str, account: str) -> AdmissionError:
    """The ServiceAccount plugin's refusal of a pod whose serviceAccountName does not exist."""
    return _forbidden("pods", pod, f'error looking up service account {namespace}/{account}: '
                                   f'serviceaccount "{account}" not found')


def _aggregate(messages: list[str]) -> str:
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


# ---------------------------------------------------------------------------- quantities with formats

# A resource amount keeps the format it was written in, so sums print like the real server
# (memory written in Mi adds up to Mi/Gi, cpu written in m stays in m).
Amount = tuple[Decimal, str]


def _amount(value: Any) -> Amount | None:
    try:
        return stored_amount(value)
    except QuantityError:
        return None


def _add(total: dict[str, Amount], name: str, amount: Amount) -> None:
    if name in total:
        value, fmt = total[name]
        total[name] = (value + amount[0], fmt if value != 0 else amount[1])
    else:
        total[name] = amount


def _text(amount: Amount) -> str:
    return format_quantity(amount[0], amount[1])


def _resource_list(value: Any) -> dict[str, Amount]:
    result: dict[str, Amount] = {}
    if isinstance(value, dict):
        for name, raw in value.items():
            amount = _amount(raw)
            if amount is not None:
                result[str(name)] = amount
    return result


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def _resources(container: dict[str, Any]) -> dict[str, Any]:
    resources = container.get("resources")
    if not isinstance(resources, dict):
        resources = container["resources"] = {}
    return resources


# ---------------------------------------------------------------------------- LimitRanger


def _merge_defaults(container: dict[str, Any], limits: dict[str, Any], requests: dict[str, Any], label: str) -> list[str]:
    resources = _resources(container)
    set_limits: list[str] = []
    set_requests: list[str] = []
    if limits:
        if resources.get("limits") is None:
            resources["limits"] = {}
        current = resources["limits"]
        for name, value in limits.items():
            if isinstance(current, dict) and name not in current:
                current[name] = value
                set_limits.append(name)
    if requests:
        if resources.get("requests") is None:
            resources["requests"] = {}
        current = resources["requests"]
        for name, value in requests.items():
            if isinstance(current, dict) and name not in current:
                current[name] = value
                set_requests.append(name)
    notes = []
    if set_requests:
        notes.append(f"{', '.join(sorted(set_requests))} request for {label} {container.get('name', '')}")
    if set_limits:
        notes.append(f"{', '.join(sorted(set_limits))} limit for {label} {container.get('name', '')}")
    return notes


def _container_defaults(limit_range: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    limits: dict[str, Any] = {}
    requests: dict[str, Any] = {}
    for item in _dicts(_spec(limit_range).get("limits")):
        if item.get("type") != "Container":
            continue
        # Apply the LimitRange's own defaulting (max -> default -> defaultRequest, min ->
        # defaultRequest) in case the object was stored without it.
        item = copy.deepcopy(item)
        apply_defaults("", "v1", "LimitRange", {"spec": {"limits": [item]}})
        if isinstance(item.get("default"), dict):
            limits.update(item["default"])
        if isinstance(item.get("defaultRequest"), dict):
            requests.update(item["defaultRequest"])
    return limits, requests


def _enforced_values(request: Amount | None, limit: Amount | None, enforced: Amount) -> tuple[int, int, int]:
    # The real plugin compares milli-values (rounded up), falling back to whole values on overflow.
    return (
        milli_value(request[0]) if request else 0,
        milli_value(limit[0]) if limit else 0,
        milli_value(enforced[0]),
    )


def _min_violation(kind: str, name: str, enforced: Amount, requests: dict, limits: dict) -> str | None:
    request, limit = requests.get(name), limits.get(name)
    req_value, lim_value, enforced_value = _enforced_values(request, limit, enforced)
    if request is None:
        return f"minimum {name} usage per {kind} is {_text(enforced)}.  No request is specified"
    if req_value < enforced_value:
        return f"minimum {name} usage per {kind} is {_text(enforced)}, but request is {_text(request)}"
    if limit is not None and lim_value < enforced_value:
        return f"minimum {name} usage per {kind} is {_text(enforced)}, but limit is {_text(limit)}"
    return None


def _max_violation(kind: str, name: str, enforced: Amount, requests: dict, limits: dict) -> str | None:
    request, limit = requests.get(name), limits.get(name)
    req_value, lim_value, enforced_value = _enforced_values(request, limit, enforced)
    if limit is None:
        return f"maximum {name} usage per {kind} is {_text(enforced)}.  No limit is specified"
    if lim_value > enforced_value:
        return f"maximum {name} usage per {kind} is {_text(enforced)}, but limit is {_text(limit)}"
    if request is not None and req_value > enforced_value:
        return f"maximum {name} usage per {kind} is {_text(enforced)}, but request is {_text(request)}"
    return None


def _max_request_violation(kind: str, name: str, enforced: Amount, requests: dict, limits: dict) -> str | None:
    """Max checked against the request only (PersistentVolumeClaim storage)."""
    request = requests.get(name)
    req_value, _, enforced_value = _enforced_values(request, None, enforced)
    if request is None:
        return f"maximum {name} usage per {kind} is {_text(enforced)}.  No request is specified"
    if req_value > enforced_value:
        return f"maximum {name} usage per {kind} is {_text(enforced)}, but request is {_text(request)}"
    return None


def _ratio_violation(kind: str, name: str, enforced: Amount, requests: dict, limits: dict) -> str | None:
    request, limit = requests.get(name), limits.get(name)
    req_value, lim_value, _ = _enforced_values(request, limit, enforced)
    shown = _text(enforced)
    if request is None or req_value == 0:
        return f"{name} max limit to request ratio per {kind} is {shown}, but no request is specified or request is 0"
    if limit is None or lim_value == 0:
        return f"{name} max limit to request ratio per {kind} is {shown}, but no limit is specified or limit is 0"
    ratio = lim_value / req_value
    if ratio * 1000 > milli_value(enforced[0]):
        return f"{name} max limit to request ratio per {kind} is {shown}, but provided ratio is {ratio:f}"
    return None


_CONTAINER_CHECKS = (("min", _min_violation), ("max", _max_violation), ("maxLimitRequestRatio", _ratio_violation))
_CLAIM_CHECKS = (("min", _min_violation), ("max", _max_request_violation))


def _check_item(item: dict[str, Any], kind: str, requests: dict, limits: dict, checks=_CONTAINER_CHECKS) -> list[str]:
    problems: list[str] = []
    for key, check in checks:
        for name, enforced in sorted(_resource_list(item.get(key)).items()):
            problem = check(kind, name, enforced, requests, limits)
            if problem:
                problems.append(problem)
    return problems


def _pod_totals(spec: dict[str, Any], field: str, *, overhead: bool = True) -> dict[str, Amount]:
    """Effective pod requests/limits: max(sum of containers, largest init container) + overhead."""
    total: dict[str, Amount] = {}
    for container in _dicts(spec.get("containers")):
        for name, amount in _resource_list((container.get("resources") or {}).get(field)).items():
            _add(total, name, amount)
    for container in _dicts(spec.get("initContainers")):
        for name, amount in _resource_list((container.get("resources") or {}).get(field)).items():
            if name not in total or amount[0] > total[name][0]:
                total[name] = amount
    if overhead:
        for name, amount in _resource_list(spec.get("overhead")).items():
            _add(total, name, amount)
    return total


def _validate_pod(limit_range: dict[str, Any], pod: dict[str, Any]) -> list[str]:
    spec = _spec(pod)
    problems: list[str] = []
    for item in _dicts(_spec(limit_range).get("limits")):
        if item.get("type") == "Container":
            for container in _dicts(spec.get("containers")) + _dicts(spec.get("initContainers")):
                resources = as_dict(container.get("resources"))
                problems += _check_item(
                    item, "Container", _resource_list(resources.get("requests")), _resource_list(resources.get("limits"))
                )
        elif item.get("type") == "Pod":
            requests = _pod_totals(spec, "requests", overhead=False)
            problems += _check_item(item, "Pod", requests, _pod_totals(spec, "limits", overhead=False))
    return problems


def _validate_claim(limit_range: dict[str, Any], claim: dict[str, Any]) -> list[str]:
    resources = as_dict(_spec(claim).get("resources"))
    problems: list[str] = []
    for item in _dicts(_spec(limit_range).get("limits")):
        if item.get("type") == "PersistentVolumeClaim":
            # Only the claim's requests count; its limits are not user input here.
            problems += _check_item(
                item, "PersistentVolumeClaim", _resource_list(resources.get("requests")), {}, _CLAIM_CHECKS
            )
    return problems


def apply_limit_ranges(pod: dict, limit_ranges: list[dict]) -> None:
    """Apply LimitRange defaults to a pod's containers, then enforce min/max/ratio.

    Mutates ``pod`` in place (resources and the ``kubernetes.io/limit-ranger`` annotation).
    A PersistentVolumeClaim (``kind: PersistentVolumeClaim``) is checked against storage
    min/max instead. Raises :class:`AdmissionError` 403 with the real message on violation.
    """
    if not isinstance(pod, dict):
        return
    ranges = [lr for lr in limit_ranges or [] if isinstance(lr, dict)]
    if pod.get("kind") == "PersistentVolumeClaim":
        for limit_range in ranges:
            problems = _validate_claim(limit_range, pod)
            if problems:
                raise _forbidden("persistentvolumeclaims", pod, _aggregate(problems))
        return
    spec = _spec(pod)
    for limit_range in ranges:
        limits, requests = _container_defaults(limit_range)
        if not limits and not requests:
            continue
        notes: list[str] = []
        for key, label in (("containers", "container"), ("initContainers", "init container")):
            for container in _dicts(spec.get(key)):
                notes += _merge_defaults(container, limits, requests, label)
        if notes:
            metadata = pod.setdefault("metadata", {})
            annotations = metadata.get("annotations")
            if not isinstance(annotations, dict):
                annotations = metadata["annotations"] = {}
            annotations[LIMIT_RANGER_ANNOTATION] = "LimitRanger plugin set: " + "; ".join(notes)
            # The QoS class is derived from resources, so it must follow the defaults just applied.
            status = pod.get("status")
            if isinstance(status, dict) and status.get("qosClass"):
                status["qosClass"] = pod_qos_class(spec)
    for limit_range in ranges:
        problems = _validate_pod(limit_range, pod)
        if problems:
            raise _forbidden("pods", pod, _aggregate(problems))


# ---------------------------------------------------------------------------- ResourceQuota

# Resources whose quota requires every container to declare them (the real plugin's
# "backward compatibility requirement").
_CONTAINER_REQUIRED = ("cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory")
_LEGACY_COUNTED = {"services", "configmaps", "secrets", "persistentvolumeclaims", "replicationcontrollers", "resourcequotas"}


def _count_name(resource: str) -> str:
    return f"count/{resource}"


def _pod_is_active(pod: dict[str, Any]) -> bool:
    phase = (pod.get("status") or {}).get("phase") if isinstance(pod.get("status"), dict) else None
    return phase not in ("Succeeded", "Failed")


def _compute_usage(requests: dict[str, Amount], limits: dict[str, Amount]) -> dict[str, Amount]:
    usage: dict[str, Amount] = {"pods": (Decimal(1), DECIMAL_SI)}
    for name in ("cpu", "memory", "ephemeral-storage"):
        if name in requests:
            usage[name] = requests[name]
            usage[f"requests.{name}"] = requests[name]
        if name in limits:
            usage[f"limits.{name}"] = limits[name]
    for name, amount in requests.items():
        if name.startswith("hugepages-"):
            usage[name] = amount
            usage[f"requests.{name}"] = amount
        elif "/" in name and not name.startswith("kubernetes.io/"):
            usage[f"requests.{name}"] = amount  # extended resources are quota'd as requests.<name>
    return usage


def _pod_usage(pod: dict[str, Any]) -> dict[str, Amount]:
    usage: dict[str, Amount] = {"count/pods": (Decimal(1), DECIMAL_SI)}
    if not _pod_is_active(pod):
        return usage
    spec = _spec(pod)
    usage.update(_compute_usage(_pod_totals(spec, "requests"), _pod_totals(spec, "limits")))
    return usage


def _service_usage(service: dict[str, Any]) -> dict[str, Amount]:
    one = (Decimal(1), DECIMAL_SI)
    usage: dict[str, Amount] = {"services": one, "count/services": one}
    kind = _spec(service).get("type") or "ClusterIP"
    ports = len(_dicts(_spec(service).get("ports")))
    if kind == "LoadBalancer":
        usage["services.loadbalancers"] = one
    if kind in ("NodePort", "LoadBalancer"):
        usage["services.nodeports"] = (Decimal(ports), DECIMAL_SI)
    return usage


def _claim_usage(claim: dict[str, Any]) -> dict[str, Amount]:
    one = (Decimal(1), DECIMAL_SI)
    usage: dict[str, Amount] = {"persistentvolumeclaims": one, "count/persistentvolumeclaims": one}
    spec = _spec(claim)
    storage = _resource_list((spec.get("resources") or {}).get("requests") if isinstance(spec.get("resources"), dict) else None).get("storage")
    status_storage = _resource_list((claim.get("status") or {}).get("capacity") if isinstance(claim.get("status"), dict) else None).get("storage")
    if status_storage is not None and (storage is None or status_storage[0] > storage[0]):
        storage = status_storage
    storage_class = spec.get("storageClassName") or ""
    if storage is not None:
        usage["requests.storage"] = storage
    if storage_class:
        prefix = f"{storage_class}.storageclass.storage.k8s.io/"
        usage[prefix + "persistentvolumeclaims"] = one
        if storage is not None:
            usage[prefix + "requests.storage"] = storage
    return usage


def object_usage(resource: str, obj: dict[str, Any]) -> dict[str, Decimal]:
    """The quota usage one object contributes, e.g. ``{"pods": 1, "requests.cpu": 0.5, ...}``."""
    return {name: amount[0] for name, amount in _usage(resource, obj).items()}


def _usage(resource: str, obj: dict[str, Any]) -> dict[str, Amount]:
    if resource == "pods":
        return _pod_usage(obj)
    if resource == "services":
        return _service_usage(obj)
    if resource == "persistentvolumeclaims":
        return _claim_usage(obj)
    one = (Decimal(1), DECIMAL_SI)
    usage = {_count_name(resource): one}
    if resource in _LEGACY_COUNTED:
        usage[resource] = one
    return usage


def _pod_matching(name: str) -> bool:
    return (
        name in ("pods", "count/pods", "cpu", "memory", "ephemeral-storage")
        or name.startswith(("requests.", "limits.", "hugepages-"))
    ) and name != "requests.storage"


def _matching_resources(resource: str, hard: Iterable[str]) -> list[str]:
    names = list(hard)
    if resource == "pods":
        return [n for n in names if _pod_matching(n)]
    if resource == "services":
        return [n for n in names if n in ("services", "count/services", "services.loadbalancers", "services.nodeports")]
    if resource == "persistentvolumeclaims":
        return [
            n for n in names
            if n in ("persistentvolumeclaims", "count/persistentvolumeclaims", "requests.storage")
            or ".storageclass.storage.k8s.io/" in n
        ]
    own = {_count_name(resource)} | ({resource} if resource in _LEGACY_COUNTED else set())
    return [n for n in names if n in own]


def _qos_best_effort(pod: dict[str, Any]) -> bool:
    spec = _spec(pod)
    for container in _dicts(spec.get("containers")) + _dicts(spec.get("initContainers")):
        resources = as_dict(container.get("resources"))
        for field in ("requests", "limits"):
            values = as_dict(resources.get(field))
            if "cpu" in values or "memory" in values:
                return False
    return True


def _scope_matches(scope: str, operator: str, values: list[str], pod: dict[str, Any]) -> bool:
    spec = _spec(pod)
    deadline = spec.get("activeDeadlineSeconds")
    if scope == "Terminating":
        return deadline is not None and deadline >= 0
    if scope == "NotTerminating":
        return deadline is None or deadline < 0
    if scope == "BestEffort":
        return _qos_best_effort(pod)
    if scope == "NotBestEffort":
        return not _qos_best_effort(pod)
    if scope == "PriorityClass":
        name = spec.get("priorityClassName") or ""
        if operator == "In":
            return name in values
        if operator == "NotIn":
            return name not in values
        if operator == "Exists":
            return bool(name)
        if operator == "DoesNotExist":
            return not name
    return False


def _scope_selectors(quota: dict[str, Any]) -> list[tuple[str, str, list[str]]]:
    spec = _spec(quota)
    selectors: list[tuple[str, str, list[str]]] = [
        (str(s), "Exists", []) for s in spec.get("scopes") or [] if isinstance(s, str)]
    selector = spec.get("scopeSelector")
    if isinstance(selector, dict):
        for expression in _dicts(selector.get("matchExpressions")):
            values = [str(v) for v in expression.get("values") or []]
            selectors.append((str(expression.get("scopeName")), str(expression.get("operator")), values))
    return selectors


def _quota_applies(quota: dict[str, Any], resource: str, obj: dict[str, Any]) -> bool:
    selectors = _scope_selectors(quota)
    if not selectors:
        return True
    if resource != "pods":
        return False  # scoped quotas only ever track pods
    return all(_scope_matches(scope, operator, values, obj) for scope, operator, values in selectors)


def _hard(quota: dict[str, Any]) -> dict[str, Amount]:
    return _resource_list(_spec(quota).get("hard"))


def _same_object(a: dict[str, Any], b: dict[str, Any]) -> bool:
    name_a = (a.get("metadata") or {}).get("name") if isinstance(a.get("metadata"), dict) else None
    name_b = (b.get("metadata") or {}).get("name") if isinstance(b.get("metadata"), dict) else None
    return bool(name_a) and name_a == name_b


def _used(quota: dict[str, Any], hard: dict[str, Amount], namespace_objects: dict[str, list[dict]],
          exclude: tuple[str, dict[str, Any]] | None = None) -> dict[str, Amount]:
    used: dict[str, Amount] = {}
    for resource, objects in (namespace_objects or {}).items():
        relevant = set(_matching_resources(resource, hard))
        if not relevant:
            continue
        for item in objects or []:
            if not isinstance(item, dict):
                continue
            if exclude is not None and exclude[0] == resource and _same_object(item, exclude[1]):
                continue
            if not _quota_applies(quota, resource, item):
                continue
            for name, amount in _usage(resource, item).items():
                if name in relevant:
                    _add(used, name, amount)
    for name in hard:
        used.setdefault(name, (Decimal(0), DECIMAL_SI))
    return used


def compute_quota_status(quota: dict, namespace_objects: dict[str, list[dict]]) -> dict:
    """``status`` (hard and used) for a ResourceQuota over the objects of its namespace.

    For the quota controller: ``namespace_objects`` maps resource names (``"pods"``,
    ``"deployments.apps"``) to the namespace's objects.
    """
    hard = _hard(quota)
    used = _used(quota, hard, namespace_objects)
    return {
        "hard": {name: _text(amount) for name, amount in hard.items()},
        "used": {name: _text(used[name]) for name in hard},
    }


def _pretty(values: dict[str, Amount], names: list[str]) -> str:
    return ",".join(f"{name}={_text(values.get(name, (Decimal(0), DECIMAL_SI)))}" for name in sorted(names))


def _missing_container_resources(pod: dict[str, Any], required: set[str]) -> str | None:
    required = required & set(_CONTAINER_REQUIRED)
    if not required:
        return None
    missing: dict[str, set[str]] = {}
    spec = _spec(pod)
    for container in _dicts(spec.get("containers")) + _dicts(spec.get("initContainers")):
        resources = as_dict(container.get("resources"))
        present = set(_compute_usage(_resource_list(resources.get("requests")), _resource_list(resources.get("limits"))))
        for name in required - present:
            missing.setdefault(name, set()).add(str(container.get("name") or ""))
    if not missing:
        return None
    parts = [f"{name} for: {','.join(sorted(missing[name]))}" for name in sorted(missing)]
    return "must specify " + "; ".join(parts)


def check_quota(resource: str, obj: dict, quotas: list[dict], namespace_objects: dict[str, list[dict]]) -> list[dict]:
    """Admit ``obj`` (being created in a namespace) against that namespace's ResourceQuotas.

    :param resource: ``"pods"`` for core resources, ``"deployments.apps"`` otherwise.
    :param namespace_objects: the namespace's current objects by the same resource names; an
        object with the same name as ``obj`` is treated as its previous version (update).
    :returns: deep copies of ``quotas`` with ``status.hard`` and ``status.used`` including ``obj``.
    :raises AdmissionError: 403 ``failed quota: ...`` or ``exceeded quota: ...``.
    """
    if not isinstance(obj, dict):
        return [copy.deepcopy(q) for q in quotas or []]
    quotas = [q for q in quotas or [] if isinstance(q, dict)]
    previous = next(
        (item for item in (namespace_objects or {}).get(resource, []) or [] if isinstance(item, dict) and _same_object(item, obj)),
        None,
    )
    delta = _usage(resource, obj)
    if previous is not None:
        old = _usage(resource, previous)
        delta = {name: (amount[0] - old.get(name, (Decimal(0), amount[1]))[0], amount[1]) for name, amount in delta.items()}
        delta = {name: amount for name, amount in delta.items() if amount[0] > 0}

    applicable: list[tuple[int, dict[str, Amount], list[str]]] = []
    for index, quota in enumerate(quotas):
        hard = _hard(quota)
        restricted = _matching_resources(resource, hard)
        if not restricted or not _quota_applies(quota, resource, obj):
            continue
        if resource == "pods":
            problem = _missing_container_resources(obj, set(restricted))
            if problem:
                raise _forbidden(resource, obj, f"failed quota: {_name(quota)}: {problem}")
        applicable.append((index, hard, restricted))

    results = [copy.deepcopy(q) for q in quotas]
    for index, quota in enumerate(quotas):
        hard = _hard(quota)
        used = _used(quota, hard, namespace_objects, exclude=(resource, obj))
        if previous is not None and _quota_applies(quota, resource, previous):
            for name, amount in _usage(resource, previous).items():
                if name in hard:
                    _add(used, name, amount)
        entry = next((a for a in applicable if a[0] == index), None)
        if entry is not None:
            requested = {name: delta[name] for name in entry[2] if name in delta}
            exceeded = [name for name, amount in requested.items() if used[name][0] + amount[0] > hard[name][0]]
            if exceeded:
                raise _forbidden(
                    resource,
                    obj,
                    f"exceeded quota: {_name(quota)}, requested: {_pretty(requested, exceeded)}, "
                    f"used: {_pretty(used, exceeded)}, limited: {_pretty(hard, exceeded)}",
                )
            for name, amount in requested.items():
                _add(used, name, amount)
        status = results[index].setdefault("status", {})
        if isinstance(status, dict):
            status["hard"] = {name: _text(amount) for name, amount in hard.items()}
            status["used"] = {name: _text(used[name]) for name in hard}
    return results


def _name(quota: dict[str, Any]) -> str:
    metadata = quota.get("metadata")
    return str(metadata.get("name") or "") if isinstance(metadata, dict) else ""


# ---------------------------------------------------------------------------- ServiceAccount token


def mount_service_account_token(pod: dict, *, service_account: dict | None = None, suffix: str | None = None) -> None:
    """Add the projected ``kube-api-access-xxxxx`` volume and its mounts, as the real plugin does.

    Skipped when the pod or its service account sets ``automountServiceAccountToken: false``
    or a container already mounts the service-account path. Idempotent.
    """
    spec = pod.get("spec") if isinstance(pod, dict) else None
    if not isinstance(spec, dict):
        return
    automount = spec.get("automountServiceAccountToken")
    if automount is None and isinstance(service_account, dict):
        automount = service_account.get("automountServiceAccountToken")
    if automount is False:
        return
    containers = _dicts(spec.get("containers")) + _dicts(spec.get("initContainers"))
    if any(m.get("mountPath") == SERVICE_ACCOUNT_MOUNT_PATH for c in containers for m in _dicts(c.get("volumeMounts"))):
        return
    volumes = spec.get("volumes")
    if volumes is None:
        volumes = spec["volumes"] = []
    if not isinstance(volumes, list):
        return
    existing = next((v for v in _dicts(volumes) if str(v.get("name", "")).startswith("kube-api-access-")), None)
    if existing is not None:
        name = str(existing["name"])
    else:
        name = "kube-api-access-" + (suffix or "".join(random.choice(_TOKEN_SUFFIX_ALPHABET) for _ in range(5)))
        volumes.append(
            {
                "name": name,
                "projected": {
                    "defaultMode": 420,
                    "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
                    ],
                },
            }
        )
    for container in containers:
        mounts = container.get("volumeMounts")
        if mounts is None:
            mounts = container["volumeMounts"] = []
        if isinstance(mounts, list):
            mounts.append({"name": name, "readOnly": True, "mountPath": SERVICE_ACCOUNT_MOUNT_PATH})


# ---------------------------------------------------------------------------- Priority

SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}


def apply_priority(pod: dict, priority_classes: list[dict]) -> None:
    """The Priority plugin: resolve ``priorityClassName`` into ``priority``/``preemptionPolicy``.

    Without a class name the global-default class (if any) is used, else priority 0. An unknown
    class is rejected with the real message (``no PriorityClass with name x was found``).
    """
    spec = pod.get("spec") if isinstance(pod, dict) else None
    if not isinstance(spec, dict):
        return
    # The two system classes always exist on a real cluster (the API server bootstraps them).
    classes: dict[str, dict[str, Any]] = {
        name: {"metadata": {"name": name}, "value": value} for name, value in SYSTEM_PRIORITY_CLASSES.items()}
    classes.update(
        {str((pc.get("metadata") or {}).get("name")): pc for pc in priority_classes or [] if isinstance(pc, dict)}
    )
    name = spec.get("priorityClassName")
    if not name:
        defaults = [pc for pc in classes.values() if pc.get("globalDefault") is True]
        if not defaults:
            spec.setdefault("priority", 0)
            spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
            return
        # Several global defaults can exist transiently; the lowest value wins, as in the real plugin.
        chosen = min(defaults, key=lambda pc: int(pc.get("value") or 0))
        spec["priorityClassName"] = (chosen.get("metadata") or {}).get("name")
    else:
        named = classes.get(str(name))
        if named is None:
            raise _forbidden("pods", pod, f"no PriorityClass with name {name} was found")
        chosen = named
    value = chosen.get("value")
    spec["priority"] = int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0
    spec["preemptionPolicy"] = chosen.get("preemptionPolicy") or "PreemptLowerPriority"


# ---------------------------------------------------------------------------- DefaultStorageClass

_DEFAULT_CLASS_ANNOTATIONS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)
_LEGACY_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"


def apply_default_storage_class(claim: dict, storage_classes: list[dict]) -> None:
    """The DefaultStorageClass plugin: claims that name no class get the default one.

    A claim that sets ``storageClassName`` (even ``""``) or the legacy annotation is left alone.
    With several defaults the newest wins.
    """
    spec = claim.get("spec") if isinstance(claim, dict) else None
    if not isinstance(spec, dict) or spec.get("storageClassName") is not None:
        return
    annotations = (claim.get("metadata") or {}).get("annotations") if isinstance(claim.get("metadata"), dict) else None
    if isinstance(annotations, dict) and _LEGACY_CLASS_ANNOTATION in annotations:
        return
    defaults = []
    for sc in storage_classes or []:
        if not isinstance(sc, dict):
            continue
        sc_annotations = (sc.get("metadata") or {}).get("annotations") or {}
        if isinstance(sc_annotations, dict) and any(sc_annotations.get(k) == "true" for k in _DEFAULT_CLASS_ANNOTATIONS):
            defaults.append(sc)
    if not defaults:
        return
    newest = max(defaults, key=lambda sc: (str((sc.get("metadata") or {}).get("creationTimestamp") or ""),
                                           str((sc.get("metadata") or {}).get("name") or "")))
    spec["storageClassName"] = (newest.get("metadata") or {}).get("name")
