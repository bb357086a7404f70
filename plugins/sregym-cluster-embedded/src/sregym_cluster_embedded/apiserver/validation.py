"""Object name validation with the real API server's messages."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

from sregym_core.quantity_canonical import stored_quantity

from .shapes import as_dict, as_list

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
        for j, mount in enumerate(c.get("volumeMounts") or []):
            sub = mount.get("subPath") if isinstance(mount, dict) else None
            if isinstance(sub, str) and sub:  # validateLocalDescendingPath: the node keeps it inside the volume too
                if sub.startswith("/"):
                    causes.append(("FieldValueInvalid", f'Invalid value: "{sub}": must be a relative path',
                                   f"{at}.volumeMounts[{j}].subPath"))
                if ".." in sub.replace("\\", "/").split("/"):
                    causes.append(("FieldValueInvalid", f"Invalid value: \"{sub}\": must not contain '..'",
                                   f"{at}.volumeMounts[{j}].subPath"))
        resources = as_dict(c.get("resources"))
        limits = as_dict(resources.get("limits"))
        requests = as_dict(resources.get("requests"))
        parsed_limits = {k: _parse_quantity(v) for k, v in limits.items()}
        for key, value in requests.items():
            req = _parse_quantity(value)
            lim = parsed_limits.get(key)
            if req is not None and lim is not None and req > lim:
                causes.append(("FieldValueInvalid", f'Invalid value: "{value}": must be less than or equal to '
                                                    f"{key} limit of {limits[key]}", f"{at}.resources.requests"))
    return causes


_TOLERATION_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_TOLERATION_OPERATORS = ("Equal", "Exists")
_UID_MAX = 2147483647


def _toleration_causes(tolerations: Any, field: str) -> list[Cause]:
    """A toleration's effect and operator, as the real server checks them (an operator writing a
    pod template from its own resource meets these refusals, so they must be real here)."""
    causes: list[Cause] = []
    for i, toleration in enumerate(tolerations if isinstance(tolerations, list) else []):
        if not isinstance(toleration, dict):
            continue
        effect, operator = toleration.get("effect"), toleration.get("operator")
        if effect not in (None, "") and effect not in _TOLERATION_EFFECTS:
            supported = ", ".join(f'"{e}"' for e in _TOLERATION_EFFECTS)
            causes.append(("FieldValueNotSupported", f'Unsupported value: "{effect}": supported values: {supported}',
                           f"{field}[{i}].effect"))
        if operator not in (None, "") and operator not in _TOLERATION_OPERATORS:
            supported = ", ".join(f'"{o}"' for o in _TOLERATION_OPERATORS)
            causes.append(("FieldValueNotSupported", f'Unsupported value: "{operator}": supported values: '
                                                     f"{supported}", f"{field}[{i}].operator"))
    return causes


def _uid_cause(context: Any, key: str, field: str) -> Cause | None:
    value = context.get(key) if isinstance(context, dict) else None
    if isinstance(value, int) and not isinstance(value, bool) and not 0 <= value <= _UID_MAX:
        return ("FieldValueInvalid", f"Invalid value: {value}: must be between 0 and {_UID_MAX}, inclusive",
                f"{field}.{key}")
    return None


def _security_causes(spec: dict[str, Any], field: str) -> list[Cause]:
    """runAsUser / runAsGroup / fsGroup out of the uid range, in the pod's and each container's context."""
    contexts: list[tuple[Any, str, tuple[str, ...]]] = [
        (spec.get("securityContext"), f"{field}.securityContext", ("runAsUser", "runAsGroup", "fsGroup"))]
    for group in ("initContainers", "containers"):
        for i, c in enumerate(as_list(spec.get(group))):
            if isinstance(c, dict):
                contexts.append((c.get("securityContext"), f"{field}.{group}[{i}].securityContext",
                                 ("runAsUser", "runAsGroup")))
    return [cause for context, at, keys in contexts for key in keys if (cause := _uid_cause(context, key, at))]


def _statefulset_strategy_causes(strategy: Any) -> list[Cause]:
    """A StatefulSet's update strategy type is RollingUpdate or OnDelete (the server's wording)."""
    kind = strategy.get("type") if isinstance(strategy, dict) else None
    if kind in (None, "RollingUpdate", "OnDelete"):
        return []
    shown = f'apps.StatefulSetUpdateStrategy{{Type:"{kind}", RollingUpdate:(*apps.RollingUpdateStatefulSetStrategy)(nil)}}'
    return [("FieldValueInvalid", f"Invalid value: {shown}: must be 'RollingUpdate' or 'OnDelete'",
             "spec.updateStrategy")]


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
            causes += _toleration_causes(spec.get("tolerations"), f"{field}.tolerations")
            causes += _security_causes(spec, field)
        elif kind != "Pod" and spec is None and _dig(obj, path[:-1]) is None:
            causes.append(("FieldValueRequired", "Required value", ".".join(path[:-1])))
    if kind == "StatefulSet":
        causes += _statefulset_strategy_causes(_dig(obj, ("spec", "updateStrategy")))
    if kind in _REPLICA_KINDS:
        replicas = _dig(obj, ("spec", "replicas"))
        if isinstance(replicas, int) and not isinstance(replicas, bool) and replicas < 0:
            causes.append(("FieldValueInvalid", f"Invalid value: {replicas}: must be greater than or equal to 0",
                           "spec.replicas"))
    if kind == "Service":
        spec = as_dict(obj.get("spec"))
        ports = spec.get("ports")
        if not ports and spec.get("type") != "ExternalName" and spec.get("clusterIP") != "None":
            causes.append(("FieldValueRequired", "Required value", "spec.ports"))
        for i, port in enumerate(ports or []):
            if isinstance(port, dict):
                cause = _port_cause(port.get("port"), f"spec.ports[{i}].port")
                if cause:
                    causes.append(cause)
    if kind == "Ingress":
        causes += ingress_causes(obj)
    return causes


# -- Ingress (networking.k8s.io/v1): the real server's host, path and backend rules ---------------
# Hosts and paths flow into the ingress controller's nginx configuration, so they are held to the
# grammar the real API server enforces (k8s.io/kubernetes pkg/apis/networking/validation).
WILDCARD_MSG = (
    "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist "
    "of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. "
    "'*.example.com', regex used for validation is '\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*"
    "[a-z0-9])?)*')"
)
DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation "
    "is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
DNS1035_RE = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
PORT_NAME_RE = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
PATH_TYPES = ("Exact", "ImplementationSpecific", "Prefix")
_BAD_PATH_PARTS = ("//", "/./", "/../", "%2f", "%2F")
_BAD_PATH_ENDS = ("/..", "/.")


def _is_ip(text: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def host_problem(host: Any) -> str | None:
    """Why ``host`` is no valid Ingress host (a DNS-1123 subdomain, or ``*.`` and one), or None."""
    if not isinstance(host, str):
        return "must be a string"
    if _is_ip(host):
        return "must be a DNS name, not an IP address"
    if "*" in host:
        rest = host[2:]
        if not host.startswith("*.") or len(host) > 253 or not SUBDOMAIN_RE.match(rest):
            return WILDCARD_MSG
        return None
    if len(host) > 253:
        return "must be no more than 253 characters"
    return None if SUBDOMAIN_RE.match(host) else SUBDOMAIN_MSG


def path_problems(path: Any, path_type: Any) -> list[tuple[str, str, str]]:
    """(reason, message, field suffix) for an HTTP path and its pathType, as the real server words them."""
    if path_type is None:
        return [("FieldValueRequired", "Required value: pathType must be specified", "pathType")]
    if path_type not in PATH_TYPES:
        supported = ", ".join(f'"{t}"' for t in PATH_TYPES)
        return [("FieldValueNotSupported", f'Unsupported value: {json.dumps(path_type)}: supported values: '
                                           f"{supported}", "pathType")]
    text = path if isinstance(path, str) else ""
    out: list[tuple[str, str, str]] = []
    if (text or path_type != "ImplementationSpecific") and not text.startswith("/"):
        out.append(("FieldValueInvalid", f"Invalid value: {json.dumps(text)}: must be an absolute path", "path"))
    if path_type in ("Exact", "Prefix") and text:
        out += [("FieldValueInvalid", f"Invalid value: {json.dumps(text)}: must not contain '{part}'", "path")
                for part in _BAD_PATH_PARTS if part in text]
        out += [("FieldValueInvalid", f"Invalid value: {json.dumps(text)}: cannot end with '{end}'", "path")
                for end in _BAD_PATH_ENDS if text.endswith(end)]
    return out


def _backend_causes(backend: Any, field: str) -> list[Cause]:
    if not isinstance(backend, dict):
        return []
    service = backend.get("service")
    if not isinstance(service, dict):
        return [] if backend.get("resource") else [("FieldValueRequired", "Required value", field)]
    out: list[Cause] = []
    name = service.get("name")
    if not isinstance(name, str) or not name:
        out.append(("FieldValueRequired", "Required value", f"{field}.service.name"))
    elif len(name) > 63 or not DNS1035_RE.match(name):
        out.append(("FieldValueInvalid", f"Invalid value: {json.dumps(name)}: {DNS1035_MSG}", f"{field}.service.name"))
    port = as_dict(service.get("port"))
    number, port_name = port.get("number"), port.get("name")
    if number is not None and port_name:
        out.append(("FieldValueInvalid", "Invalid value: \"\": cannot set both port name & port number",
                    f"{field}.service.port"))
    elif number is not None:
        cause = _port_cause(number, f"{field}.service.port.number")
        if cause:
            out.append(cause)
    elif port_name:
        if not isinstance(port_name, str) or len(port_name) > 15 or not PORT_NAME_RE.match(port_name) \
                or "--" in port_name or not re.search("[a-z]", port_name):
            out.append(("FieldValueInvalid", f"Invalid value: {json.dumps(port_name)}: must be a valid port name "
                                             "(an IANA_SVC_NAME)", f"{field}.service.port.name"))
    else:
        out.append(("FieldValueRequired", "Required value: port name or number is required",
                    f"{field}.service.port"))
    return out


def ingress_causes(obj: dict[str, Any]) -> list[Cause]:
    spec = as_dict(obj.get("spec"))
    causes: list[Cause] = []
    for i, tls in enumerate(spec.get("tls") or []):
        for j, host in enumerate((tls.get("hosts") or []) if isinstance(tls, dict) else []):
            problem = host_problem(host)
            if problem:
                causes.append(("FieldValueInvalid", f"Invalid value: {json.dumps(host)}: {problem}",
                               f"spec.tls[{i}].hosts[{j}]"))
    if spec.get("defaultBackend") is not None:
        causes += _backend_causes(spec["defaultBackend"], "spec.defaultBackend")
    for i, rule in enumerate(spec.get("rules") or []):
        if not isinstance(rule, dict):
            continue
        host = rule.get("host")
        if host:
            problem = host_problem(host)
            if problem:
                causes.append(("FieldValueInvalid", f"Invalid value: {json.dumps(host)}: {problem}",
                               f"spec.rules[{i}].host"))
        http = rule.get("http") if isinstance(rule.get("http"), dict) else None
        if http is None:
            continue
        paths = http.get("paths")
        if not paths:
            causes.append(("FieldValueRequired", "Required value", f"spec.rules[{i}].http.paths"))
        for j, path in enumerate(paths or []):
            if not isinstance(path, dict):
                continue
            at = f"spec.rules[{i}].http.paths[{j}]"
            causes += [(r, m, f"{at}.{f}") for r, m, f in path_problems(path.get("path"), path.get("pathType"))]
            causes += _backend_causes(path.get("backend"), f"{at}.backend")
    return causes
