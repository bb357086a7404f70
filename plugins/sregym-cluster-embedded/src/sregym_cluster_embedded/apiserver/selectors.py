"""Label and field selectors, parsed once and matched many times.

Parse errors raise a 400 ``ApiError`` with the wording of the real API server.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .errors import ApiError

_KEY_RE = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

Matcher = Callable[[dict[str, str]], bool]


def _bad_label(selector: str, why: str) -> ApiError:
    return ApiError(400, f"unable to parse requirement: {why}", "BadRequest")


def _check_key(key: str, selector: str) -> None:
    if not key or len(key) > 316 or not _KEY_RE.match(key):
        raise _bad_label(
            selector,
            f'invalid label key "{key}": name part must consist of alphanumeric characters, \'-\', \'_\' '
            "or '.', and must start and end with an alphanumeric character",
        )


def _check_value(value: str, selector: str) -> None:
    if len(value) > 63 or not _VALUE_RE.match(value):
        raise _bad_label(
            selector,
            f"values[0][{value}]: Invalid value: \"{value}\": a valid label must be an empty string or "
            "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character",
        )


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise ApiError(400, f"unable to parse requirement: unbalanced parenthesis in {text!r}")
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth != 0:
        raise ApiError(400, f"unable to parse requirement: unbalanced parenthesis in {text!r}")
    parts.append("".join(cur))
    return parts


_SET_RE = re.compile(r"^\s*(\S+)\s+(in|notin)\s*\((.*)\)\s*$")
_OP_RE = re.compile(r"^\s*([^=!<>\s]+)\s*(==|=|!=|>|<)\s*(.*?)\s*$")


def parse_label_selector(selector: str | None) -> Matcher | None:
    """A matcher over a labels dict, or None when the selector is empty (matches everything)."""
    if selector is None or not selector.strip():
        return None
    reqs: list[Matcher] = []
    for raw in _split_top_level(selector):
        part = raw.strip()
        if not part:
            raise ApiError(400, f"unable to parse requirement: found '', expected: identifier in {selector!r}")
        m = _SET_RE.match(part)
        if m:
            key, op, values_text = m.group(1), m.group(2), m.group(3)
            _check_key(key, selector)
            values = {v.strip() for v in values_text.split(",")}
            for v in values:
                _check_value(v, selector)
            reqs.append(_within(key, values) if op == "in" else _outside(key, values))
            continue
        if part.startswith("!"):
            key = part[1:].strip()
            _check_key(key, selector)
            reqs.append(_absent(key))
            continue
        m = _OP_RE.match(part)
        if m:
            key, op, value = m.group(1), m.group(2), m.group(3)
            _check_key(key, selector)
            if op in ("<", ">"):
                try:
                    number = int(value)
                except ValueError:
                    raise ApiError(
                        400, f"unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an "
                        f"integer: {value!r}") from None
                reqs.append(_numeric(key, op, number))
                continue
            _check_value(value, selector)
            reqs.append(_differs(key, value) if op == "!=" else _equals(key, value))
            continue
        if re.fullmatch(r"\S+", part):
            _check_key(part, selector)
            reqs.append(_present(part))
            continue
        raise ApiError(400, f"unable to parse requirement: found '{part}', expected: in, notin, =, ==, !=, gt, lt")
    return _all(reqs)


def _all(reqs: list[Matcher]) -> Matcher:
    return lambda labels: all(r(labels) for r in reqs)


def _within(key: str, values: set[Any]) -> Matcher:
    return lambda labels: labels.get(key) in values


def _outside(key: str, values: set[Any]) -> Matcher:
    return lambda labels: labels.get(key) not in values


def _present(key: str) -> Matcher:
    return lambda labels: key in labels


def _absent(key: str) -> Matcher:
    return lambda labels: key not in labels


def _equals(key: str, value: Any) -> Matcher:
    return lambda labels: labels.get(key) == value


def _differs(key: str, value: Any) -> Matcher:
    return lambda labels: labels.get(key) != value


def _numeric(key: str, op: str, number: int) -> Matcher:
    def match(labels: dict[str, str]) -> bool:
        try:
            value = int(labels[key])
        except (KeyError, ValueError):
            return False
        return value > number if op == ">" else value < number

    return match


def selector_from_match_labels(selector: dict[str, Any] | None) -> Matcher | None:
    """A matcher from a LabelSelector object (matchLabels + matchExpressions); None matches nothing."""
    if selector is None:
        return None
    reqs: list[Matcher] = []
    for k, v in (selector.get("matchLabels") or {}).items():
        reqs.append(_equals(k, v))
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), set(expr.get("values") or [])
        if op == "In":
            reqs.append(_within(key, values))
        elif op == "NotIn":
            reqs.append(_outside(key, values))
        elif op == "Exists":
            reqs.append(_present(key))
        elif op == "DoesNotExist":
            reqs.append(_absent(key))
    return _all(reqs)


# -- field selectors ------------------------------------------------------------------------------

COMMON_FIELDS = {"metadata.name", "metadata.namespace"}
FIELDS: dict[str, set[str]] = {
    "pods": {
        "spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
        "spec.hostNetwork", "status.phase", "status.podIP", "status.podIPs", "status.nominatedNodeName",
    },
    "events": {
        "involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
        "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
        "reason", "reportingComponent", "source", "type",
    },
    "nodes": {"spec.unschedulable"},
    "namespaces": {"status.phase"},
    "secrets": {"type"},
    "replicasets.apps": {"status.replicas"},
    "replicationcontrollers": {"status.replicas"},
    "jobs.batch": {"status.successful"},
    "persistentvolumeclaims": set(),
    "certificatesigningrequests.certificates.k8s.io": {"spec.signerName"},
}
# events.k8s.io names its fields differently; they map onto the stored core/v1 form
EVENT_ALIASES = {"regarding.": "involvedObject.", "note": "message", "reportingController": "reportingComponent"}


def _field_value(obj: dict[str, Any], path: str) -> str:
    if path == "source":
        return (obj.get("source") or {}).get("component", "")
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    if isinstance(cur, list):  # status.podIPs
        return ",".join(str(x.get("ip", x)) if isinstance(x, dict) else str(x) for x in cur)
    return str(cur)


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def _split_fields(text: str) -> list[str]:
    parts, cur, i = [], [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            cur.append(text[i : i + 2])
            i += 2
            continue
        if ch == ",":
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    parts.append("".join(cur))
    return parts


def parse_field_selector(selector: str | None, resource_key: str) -> Callable[[dict[str, Any]], bool] | None:
    """A matcher over whole objects; 400 for unsupported field labels, like the real server."""
    if selector is None or not selector.strip():
        return None
    allowed = COMMON_FIELDS | FIELDS.get(resource_key, set())
    if resource_key == "events.events.k8s.io":
        allowed = COMMON_FIELDS | FIELDS["events"]
    reqs = []
    for raw in _split_fields(selector):
        part = raw.strip()
        m = re.match(r"^([^=!]+?)\s*(==|!=|=)\s*(.*)$", part)
        if not m:
            raise ApiError(400, f"invalid selector: '{selector}'; can't understand '{part}'")
        field, op, value = m.group(1).strip(), m.group(2), _unescape(m.group(3))
        if resource_key == "events.events.k8s.io":
            for alias, real in EVENT_ALIASES.items():
                if field.startswith(alias):
                    field = real + field[len(alias):]
        if field not in allowed:
            raise ApiError(400, f'field label not supported: {field}')
        if op == "!=":
            reqs.append(lambda obj, f=field, v=value: _field_value(obj, f) != v)
        else:
            reqs.append(lambda obj, f=field, v=value: _field_value(obj, f) == v)
    return lambda obj: all(r(obj) for r in reqs)


def labels_of(obj: dict[str, Any]) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


class ObjectFilter:
    """Namespace + label + field selector filter over stored objects."""

    __slots__ = ("namespace", "labels", "fields")

    def __init__(self, namespace: str | None, label_selector: str | None, field_selector: str | None,
                 resource_key: str) -> None:
        self.namespace = namespace or None
        self.labels = parse_label_selector(label_selector)
        self.fields = parse_field_selector(field_selector, resource_key)

    def __call__(self, obj: dict[str, Any]) -> bool:
        meta = obj.get("metadata") or {}
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return False
        if self.labels is not None and not self.labels(meta.get("labels") or {}):
            return False
        if self.fields is not None and not self.fields(obj):
            return False
        return True
