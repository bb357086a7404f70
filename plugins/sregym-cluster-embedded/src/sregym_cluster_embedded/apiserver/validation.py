"""Object name validation with the real API server's messages."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

from sregym_core.quantity_canonical import stored_quantity

SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
    "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
# kinds whose names must be DNS-1123 labels (the rest are subdomains or path segments)
LABEL_KINDS = {"Namespace", "Service"}
# kinds whose names only have to be valid path segments
PATH_SEGMENT_KINDS = {"Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"}


def name_problem(kind: str, name: str) -> str | None:
    """The validation message for ``name``, or None when it is fine."""
    if kind in PATH_SEGMENT_KINDS:
        if name in (".", "..") or "/" in name or "%" in name:
            return 'may not contain \'/\' or \'%\' or be "." or ".."'
        return None
    if kind in LABEL_KINDS:
        if len(name) > 63:
            return "must be no more than 63 characters"
        return None if LABEL_RE.match(name) else LABEL_MSG
    if len(name) > 253:
        return "must be no more than 253 characters"
    return None if SUBDOMAIN_RE.match(name) else SUBDOMAIN_MSG


# -- object validation (the subset of the real API server's rules agents most often trip over) ------
Cause = tuple[str, str, str]  # (reason, message, field) as in a Status' details.causes
_RESTART_POLICIES = ("Always", "OnFailure", "Never")
_POD_TEMPLATE_PATHS = {
    "Deployment": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "ReplicationController": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
    "PodTemplate": ("template", "spec"),
    "Pod": ("spec",),
}
_REPLICA_KINDS = {"Deployment", "ReplicaSet", "StatefulSet", "ReplicationController"}


class QuantityProblem(ValueError):
    """A resource quantity that does not parse (the real server rejects the body with 400)."""


def _parse_quantity(text: object) -> Decimal:
    try:
        return stored_quantity(text)
    except (ValueError, TypeError, ArithmeticError):
        raise QuantityProblem(
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        ) from None


def _dig(obj: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def _port_cause(value: Any, field: str) -> Cause | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        return ("FieldValueInvalid", f"Invalid value: {json.dumps(value)}: must be between 1 and 65535, inclusive",
                field)
    return None


def _container_causes(containers: Any, field: str, need_image: bool = True) -> list[Cause]:
    causes: list[Cause] = []
    if not isinstance(containers, list):
        return causes
    seen: set[str] = set()
    for i, c in enumerate(containers):
        at = f"{field}[{i}]"
        if not isinstance(c, dict):
            continue
        name = c.get("name")
        if not name:
            causes.append(("FieldValueRequired", "Required value", f"{at}.name"))
        elif name in seen:
            causes.append(("FieldValueDuplicate", f'Duplicate value: "{name}"', f"{at}.name"))
        else:
            seen.add(str(name))
        if need_image and not c.get("image"):
            causes.append(("FieldValueRequired", "Required value", f"{at}.image"))
        for j, port in enumerate(c.get("ports") or []):
            if isinstance(port, dict):
                cause = _port_cause(port.get("containerPort"), f"{at}.ports[{j}].containerPort")
                if cause:
                    causes.append(cause)
        resources = c.get("resources") if isinstance(c.get("resources"), dict) else {}
        limits = resources.get("limits") if isinstance(resources.get("limits"), dict) else {}
        requests = resources.get("requests") if isinstance(resources.get("requests"), dict) else {}
        parsed_limits = {k: _parse_quantity(v) for k, v in limits.items()}
        for key, value in requests.items():
            req = _parse_quantity(value)
            lim = parsed_limits.get(key)
            if req is not None and lim is not None and req > lim:
                causes.append(("FieldValueInvalid", f'Invalid value: "{value}": must be less than or equal to '
                                                    f"{key} limit of {limits[key]}", f"{at}.resources.requests"))
    return causes


def object_causes(kind: str, obj: dict[str, Any]) -> list[Cause]:
    """Validation failures of ``obj`` (a built-in kind), in the real server's words.

    Raises :class:`QuantityProblem` for quantities that do not parse."""
    causes: list[Cause] = []
    path = _POD_TEMPLATE_PATHS.get(kind)
    if path is not None:
        spec = _dig(obj, path)
        field = ".".join(path)
        if isinstance(spec, dict):
            containers = spec.get("containers")
            if not containers:
                causes.append(("FieldValueRequired", "Required value", f"{field}.containers"))
            causes += _container_causes(containers, f"{field}.containers")
            causes += _container_causes(spec.get("initContainers"), f"{field}.initContainers")
            policy = spec.get("restartPolicy")
            if policy is not None and policy not in _RESTART_POLICIES:
                supported = ", ".join(f'"{p}"' for p in sorted(_RESTART_POLICIES))
                causes.append(("FieldValueNotSupported", f'Unsupported value: "{policy}": supported values: '
                                                         f"{supported}", f"{field}.restartPolicy"))
        elif kind != "Pod" and spec is None and _dig(obj, path[:-1]) is None:
            causes.append(("FieldValueRequired", "Required value", ".".join(path[:-1])))
    if kind in _REPLICA_KINDS:
        replicas = _dig(obj, ("spec", "replicas"))
        if isinstance(replicas, int) and not isinstance(replicas, bool) and replicas < 0:
            causes.append(("FieldValueInvalid", f"Invalid value: {replicas}: must be greater than or equal to 0",
                           "spec.replicas"))
    if kind == "Service":
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
        ports = spec.get("ports")
        if not ports and spec.get("type") != "ExternalName" and spec.get("clusterIP") != "None":
            causes.append(("FieldValueRequired", "Required value", "spec.ports"))
        for i, port in enumerate(ports or []):
            if isinstance(port, dict):
                cause = _port_cause(port.get("port"), f"spec.ports[{i}].port")
                if cause:
                    causes.append(cause)
    return causes
