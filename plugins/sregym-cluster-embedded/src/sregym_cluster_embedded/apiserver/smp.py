"""Strategic merge patch (SMP), the patch type kubectl uses for `patch`, `set`, `edit`, `apply`...

Semantics follow the Kubernetes apimachinery behaviour (a clean-room reimplementation):

* maps merge recursively; a ``null`` value deletes the key;
* lists are replaced wholesale unless the struct field is tagged ``patchStrategy:"merge"``, in which
  case list-of-maps merge element-wise by the field's merge key and primitive lists are unioned;
* directives: ``$patch: replace|delete|merge`` (on maps and on list elements),
  ``$retainKeys``, ``$setElementOrder/<list>``, ``$deleteFromPrimitiveList/<list>``.

Merge metadata comes from the Go struct tags of k8s.io/api (facts, listed in ``STRUCTS``), addressed
by struct type so the same table serves every place a struct appears (pod templates in Deployments,
Jobs, CronJob job templates, ...). ``openapi.py`` reuses it for ``x-kubernetes-patch-*`` extensions.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BUILTIN_GROUPS",
    "FieldMeta",
    "KIND_ROOTS",
    "STRUCTS",
    "SmpError",
    "is_builtin",
    "root_struct",
    "strategic_merge",
]


class SmpError(Exception):
    """A patch that cannot be applied; ``code`` is the HTTP status kube-apiserver answers with.

    As there: malformed directives are 400, a ``$retainKeys`` mismatch 422, and errors the server
    does not classify (a list element without its merge key...) 500 with the bare message.
    """

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class FieldMeta:
    """Patch metadata of one struct field (from its Go ``patchStrategy``/``patchMergeKey`` tags)."""

    struct: str | None = None  # struct type of the value (of the elements, for lists)
    merge_key: str | None = None  # set for merge lists of maps
    merge: bool = False  # patchStrategy "merge": list merged instead of replaced
    retain_keys: bool = False  # patchStrategy contains "retainKeys"
    replace: bool = False  # patchStrategy "replace": the whole value is replaced

    @property
    def strategy(self) -> str | None:
        """The Go tag value, as used for ``x-kubernetes-patch-strategy``."""
        parts = [
            p
            for p, on in (("merge", self.merge), ("retainKeys", self.retain_keys), ("replace", self.replace))
            if on
        ]
        return ",".join(parts) or None


def _merge(key: str | None, struct: str | None = None, *, retain: bool = False) -> FieldMeta:
    return FieldMeta(struct=struct, merge_key=key, merge=True, retain_keys=retain)


def _sub(struct: str) -> FieldMeta:
    return FieldMeta(struct=struct)


_STATUS_WITH_CONDITIONS = {"conditions": _merge("type")}
_CONTAINER = {
    "env": _merge("name"),
    "ports": _merge("containerPort"),
    "volumeMounts": _merge("mountPath"),
    "volumeDevices": _merge("devicePath"),
}
_WEBHOOK = {"matchConditions": _merge("name")}

# struct type -> field -> patch metadata. Fields absent here are plain (maps merge, lists atomic).
STRUCTS: dict[str, dict[str, FieldMeta]] = {
    "ObjectMeta": {"ownerReferences": _merge("uid"), "finalizers": _merge(None)},
    "PodTemplateSpec": {"metadata": _sub("ObjectMeta"), "spec": _sub("PodSpec")},
    "PodSpec": {
        "containers": _merge("name", "Container"),
        "initContainers": _merge("name", "Container"),
        "ephemeralContainers": _merge("name", "EphemeralContainer"),
        "volumes": _merge("name", "Volume", retain=True),
        "imagePullSecrets": _merge("name"),
        "hostAliases": _merge("ip"),
        "topologySpreadConstraints": _merge("topologyKey"),
        "schedulingGates": _merge("name"),
        "resourceClaims": _merge("name", retain=True),
    },
    "Container": _CONTAINER,
    "EphemeralContainer": _CONTAINER,
    "Volume": {},
    "PodStatus": {
        "conditions": _merge("type"),
        "podIPs": _merge("ip"),
        "hostIPs": _merge("ip"),
        "resourceClaimStatuses": _merge("name", retain=True),
        "containerStatuses": FieldMeta(struct="ContainerStatus"),
        "initContainerStatuses": FieldMeta(struct="ContainerStatus"),
        "ephemeralContainerStatuses": FieldMeta(struct="ContainerStatus"),
    },
    "ContainerStatus": {"volumeMounts": _merge("mountPath"), "allocatedResourcesStatus": _merge("name")},
    "DeploymentSpec": {"template": _sub("PodTemplateSpec"), "strategy": FieldMeta(retain_keys=True)},
    "ReplicaSetSpec": {"template": _sub("PodTemplateSpec")},
    "StatefulSetSpec": {"template": _sub("PodTemplateSpec")},
    "DaemonSetSpec": {"template": _sub("PodTemplateSpec")},
    "ReplicationControllerSpec": {"template": _sub("PodTemplateSpec")},
    "JobSpec": {"template": _sub("PodTemplateSpec")},
    "JobTemplateSpec": {"metadata": _sub("ObjectMeta"), "spec": _sub("JobSpec")},
    "CronJobSpec": {"jobTemplate": _sub("JobTemplateSpec")},
    "ServiceSpec": {"ports": _merge("port")},
    "NodeSpec": {"podCIDRs": _merge(None)},
    "NodeStatus": {"conditions": _merge("type"), "addresses": _merge("type")},
    "ConditionsStatus": _STATUS_WITH_CONDITIONS,
    "PodDisruptionBudgetSpec": {"selector": FieldMeta(replace=True)},
    "ValidatingWebhook": _WEBHOOK,
    "MutatingWebhook": _WEBHOOK,
    "ValidatingAdmissionPolicySpec": {"matchConditions": _merge("name"), "variables": _merge("name")},
}


def _root(spec: str | None = None, status: str | None = None, **extra: FieldMeta) -> dict[str, FieldMeta]:
    fields: dict[str, FieldMeta] = {"metadata": _sub("ObjectMeta")}
    if spec:
        fields["spec"] = _sub(spec)
    if status:
        fields["status"] = _sub(status)
    fields.update(extra)
    return fields


# (group, kind) -> fields of the top-level object. Built-in kinds not listed get plain metadata.
KIND_ROOTS: dict[tuple[str, str], dict[str, FieldMeta]] = {
    ("", "Pod"): _root("PodSpec", "PodStatus"),
    ("", "PodTemplate"): _root(template=_sub("PodTemplateSpec")),
    ("", "ReplicationController"): _root("ReplicationControllerSpec", "ConditionsStatus"),
    ("", "Service"): _root("ServiceSpec", "ConditionsStatus"),
    ("", "ServiceAccount"): _root(secrets=_merge("name")),
    ("", "Node"): _root("NodeSpec", "NodeStatus"),
    ("", "Namespace"): _root(status="ConditionsStatus"),
    ("", "PersistentVolumeClaim"): _root(status="ConditionsStatus"),
    ("", "ComponentStatus"): _root(conditions=_merge("type")),
    ("apps", "Deployment"): _root("DeploymentSpec", "ConditionsStatus"),
    ("apps", "ReplicaSet"): _root("ReplicaSetSpec", "ConditionsStatus"),
    ("apps", "StatefulSet"): _root("StatefulSetSpec", "ConditionsStatus"),
    ("apps", "DaemonSet"): _root("DaemonSetSpec", "ConditionsStatus"),
    ("batch", "Job"): _root("JobSpec", "ConditionsStatus"),
    ("batch", "CronJob"): _root("CronJobSpec"),
    ("autoscaling", "HorizontalPodAutoscaler"): _root(status="ConditionsStatus"),
    ("policy", "PodDisruptionBudget"): _root("PodDisruptionBudgetSpec", "ConditionsStatus"),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): _root(
        webhooks=_merge("name", "ValidatingWebhook")
    ),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): _root(
        webhooks=_merge("name", "MutatingWebhook")
    ),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"): _root("ValidatingAdmissionPolicySpec"),
}

# API groups served natively by kube-apiserver. Anything else (CRDs, even "*.k8s.io" ones such as
# gateway.networking.k8s.io) has no Go struct tags, so the real server refuses SMP with 415.
BUILTIN_GROUPS = frozenset(
    {
        "",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "apiregistration.k8s.io",
        "apps",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "autoscaling",
        "batch",
        "certificates.k8s.io",
        "coordination.k8s.io",
        "discovery.k8s.io",
        "events.k8s.io",
        "flowcontrol.apiserver.k8s.io",
        "internal.apiserver.k8s.io",
        "networking.k8s.io",
        "node.k8s.io",
        "policy",
        "rbac.authorization.k8s.io",
        "resource.k8s.io",
        "scheduling.k8s.io",
        "storage.k8s.io",
        "storagemigration.k8s.io",
    }
)

_DIRECTIVE = "$patch"
_RETAIN = "$retainKeys"
_ORDER = "$setElementOrder/"
_DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"
_ROOT_STRUCT = "__root__"


def is_builtin(group: str) -> bool:
    """True when kind structs of ``group`` are compiled into kube-apiserver (SMP allowed)."""
    return group in BUILTIN_GROUPS


def root_struct(group: str, kind: str) -> dict[str, FieldMeta]:
    """Top-level field metadata of a built-in kind."""
    return KIND_ROOTS.get((group, kind)) or {"metadata": _sub("ObjectMeta")}


def strategic_merge(
    original: dict[str, Any], patch: dict[str, Any], *, group: str, kind: str
) -> dict[str, Any]:
    """Apply strategic merge ``patch`` to ``original`` (a built-in kind); returns a new dict.

    Raises SmpError for CRDs (415, as the real server) and malformed directives (422).
    """
    if not is_builtin(group):
        raise SmpError(
            415,
            "the body of the request was in an unknown format - accepted media types include: "
            "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
        )
    if not isinstance(patch, dict):
        raise SmpError(400, "json: cannot unmarshal array into Go value of type map[string]interface {}")
    result = _merge_map(copy.deepcopy(original), patch, root_struct(group, kind))
    return result if isinstance(result, dict) else {}


# --------------------------------------------------------------------------- maps


def _fields_of(meta: FieldMeta | None) -> dict[str, FieldMeta]:
    return STRUCTS.get(meta.struct, {}) if meta and meta.struct else {}


def _merge_map(
    original: dict[str, Any], patch: dict[str, Any], fields: dict[str, FieldMeta], *, fresh: bool = False
) -> dict[str, Any] | None:
    """Merge ``patch`` into ``original`` (owned, mutated). Returns None when the map is deleted.

    ``fresh`` marks content the original did not have: apimachinery takes such patch values as they
    are, without checking ``$setElementOrder`` (we still drop the directives instead of storing them).
    """
    directive = patch.get(_DIRECTIVE)
    if directive is not None:
        if directive == "delete":
            return None
        if directive == "replace":
            return _merge_map({}, {k: v for k, v in patch.items() if k != _DIRECTIVE}, fields, fresh=True)
        if directive != "merge":
            raise SmpError(500, f"Unknown patch type: {directive} in map: {_go_map(patch)}")

    if _RETAIN in patch:
        _apply_retain_keys(original, patch)

    orders = _element_orders(patch)
    if fresh:
        orders = {}  # content new to the object is taken in the patch's own order
    for field, order in orders.items():
        if isinstance(patch.get(field), list):
            meta = fields.get(field)
            _check_order(patch[field], order, meta.merge_key if meta else None)
            if not patch[field] and not original.get(field):
                raise SmpError(500, "no elements in any of the given slices")
    _delete_from_primitive_lists(original, patch, unordered=set(orders))
    for key, value in patch.items():
        if key in (_DIRECTIVE, _RETAIN) or key.startswith(_ORDER) or key.startswith(_DELETE_PRIMITIVE):
            continue
        if value is None:
            original.pop(key, None)
            continue
        meta = fields.get(key)
        merged = _merge_value(original.get(key), value, meta, orders.get(key))
        if merged is _DELETED:
            original.pop(key, None)
        else:
            original[key] = merged

    _delete_from_primitive_lists(original, patch, ordered=set(orders))
    for field, order in orders.items():
        current, meta = original.get(field), fields.get(field)
        if field not in patch and isinstance(current, list) and meta is not None and meta.merge:
            original[field] = _apply_order(current, order, meta.merge_key, current)
    return original


def _delete_from_primitive_lists(
    original: dict[str, Any],
    patch: dict[str, Any],
    *,
    ordered: set[str] | None = None,
    unordered: set[str] | None = None,
) -> None:
    """Apply ``$deleteFromPrimitiveList/<field>``.

    apimachinery deletes before merging the field's patch list, except for lists that also carry
    ``$setElementOrder`` (merged first): call with ``unordered=`` before the merge (skipping
    those) and with ``ordered=`` after it (only those).
    """
    for key, value in patch.items():
        if not key.startswith(_DELETE_PRIMITIVE):
            continue
        if not isinstance(value, list):
            raise SmpError(400, "invalid patch format of primitive list")
        field = key[len(_DELETE_PRIMITIVE) :]
        if (ordered is not None and field not in ordered) or (unordered is not None and field in unordered):
            continue
        current = original.get(field)
        if isinstance(current, list):
            original[field] = [item for item in current if item not in value]


def _element_orders(patch: dict[str, Any]) -> dict[str, list[Any]]:
    orders = {}
    for key, value in patch.items():
        if key.startswith(_ORDER):
            if not isinstance(value, list):
                raise SmpError(400, "invalid patch format of setElementOrder list")
            orders[key[len(_ORDER) :]] = value
    return orders


def _check_order(items: list[Any], order: list[Any], key: str | None) -> None:
    """The patch list must be a subsequence of ``$setElementOrder`` (kubectl builds both together).

    Deleted elements are ignored; other directive elements are skipped while walking but count
    as unmatched when the order list runs out first (as in apimachinery).
    """
    if not items or not order:
        return
    wanted = (
        [i for i in items if not (isinstance(i, dict) and i.get(_DIRECTIVE) == "delete")] if key else items
    )
    position = index = 0
    while position < len(wanted) and index < len(order):
        current, expected = wanted[position], order[index]
        if isinstance(current, dict) and _DIRECTIVE in current:
            position += 1
            continue
        if key and isinstance(current, dict) and isinstance(expected, dict):
            same = current.get(key) == expected.get(key)
        else:
            same = current == expected
        if same:
            position += 1
        index += 1
    if position < len(wanted):
        raise SmpError(
            500,
            f"The order in patch list:\n{_go_value(items)}\n doesn't match $setElementOrder list:\n{_go_value(order)}\n",
        )


def _apply_retain_keys(original: dict[str, Any], patch: dict[str, Any]) -> None:
    retain = patch[_RETAIN]
    if not isinstance(retain, list):
        raise SmpError(400, "invalid patch format of retainKeys")
    for key, value in patch.items():
        if key.startswith("$") or value is None:
            continue
        if key not in retain:
            raise SmpError(422, "patch content doesn't match retainKeys list")
    for key in list(original):
        if key not in retain:
            del original[key]


_DELETED = object()


def _merge_value(current: Any, value: Any, meta: FieldMeta | None, order: list[Any] | None = None) -> Any:
    """Merge one patch value into the current value of the same field."""
    if isinstance(value, dict):
        if meta is not None and meta.replace:
            return _strip_directives(value, meta)
        base = current if isinstance(current, dict) else {}
        merged = _merge_map(base, value, _fields_of(meta), fresh=not isinstance(current, dict))
        return _DELETED if merged is None else merged
    if isinstance(value, list):
        base_list = current if isinstance(current, list) else []
        if meta is not None and meta.merge and not meta.replace:
            return _merge_list(base_list, value, meta, order)
        return _strip_list(value, meta)
    return value


def _strip_directives(value: Any, meta: FieldMeta | None) -> Any:
    """A patch value taken as is: directives dropped (merging into an empty value does that)."""
    if isinstance(value, dict):
        merged = _merge_map({}, value, _fields_of(meta), fresh=True)
        return {} if merged is None else merged
    if isinstance(value, list):
        return _strip_list(value, meta)
    return value


def _strip_list(items: list[Any], meta: FieldMeta | None) -> list[Any]:
    element = FieldMeta(struct=meta.struct) if meta and meta.struct else None
    out = []
    for item in items:
        if isinstance(item, dict) and item.get(_DIRECTIVE) in ("delete", "replace") and len(item) == 1:
            continue
        out.append(_strip_directives(item, element))
    return out


# --------------------------------------------------------------------------- lists


def _merge_list(original: list[Any], patch: list[Any], meta: FieldMeta, order: list[Any] | None) -> list[Any]:
    if not patch:
        merged = [copy.deepcopy(i) for i in original]  # an empty merge list changes nothing (apimachinery)
    elif meta.merge_key is None or not any(isinstance(i, dict) for i in patch):
        merged = list(original) + [i for n, i in enumerate(patch) if i not in original and i not in patch[:n]]
    else:
        by_key = _merge_map_list(original, patch, meta)
        if by_key is None:  # "$patch: replace": exactly the patch's elements, in their order
            element = FieldMeta(struct=meta.struct)
            return [
                _strip_directives(i, element) for i in patch if not (isinstance(i, dict) and _DIRECTIVE in i)
            ]
        merged = by_key
    if order is None:
        order = [i for i in patch if not (isinstance(i, dict) and _DIRECTIVE in i)]
    return _apply_order(merged, order, meta.merge_key, original)


def _merge_map_list(original: list[Any], patch: list[Any], meta: FieldMeta) -> list[Any] | None:
    """Element-wise merge of a list of maps by merge key; None means "replace with the patch"."""
    key = meta.merge_key
    element = FieldMeta(struct=meta.struct)
    if any(isinstance(i, dict) and i.get(_DIRECTIVE) == "replace" for i in patch):
        return None
    result = [copy.deepcopy(i) for i in original]
    for item in patch:
        if not isinstance(item, dict):
            raise SmpError(
                500, f"merging an object in json but data type is not map, orig is {_go_value(item)}"
            )
        if key not in item:
            if item.get(_DIRECTIVE) == "delete":
                raise SmpError(500, "delete patch type with no merge key defined")
            raise SmpError(500, f"map: {_go_map(item)} does not contain declared merge key: {key}")
        index = next(
            (n for n, old in enumerate(result) if isinstance(old, dict) and old.get(key) == item[key]), None
        )
        if item.get(_DIRECTIVE) == "delete":
            result = [old for old in result if not (isinstance(old, dict) and old.get(key) == item[key])]
            continue
        merged = _merge_map(
            {} if index is None else result[index], item, _fields_of(element), fresh=index is None
        )
        if index is None:
            if merged is not None:
                result.append(merged)
        elif merged is None:
            del result[index]
        else:
            result[index] = merged
    return result


def _apply_order(merged: list[Any], order: list[Any], key: str | None, original: list[Any]) -> list[Any]:
    """Order a merged list as apimachinery does.

    Items named by ``order`` (``$setElementOrder``, else the patch list itself) come in that order;
    the remaining, server-only items keep their original order, and the two runs are interleaved by
    the items' positions in the original list.
    """

    def identity(item: Any) -> Any:
        if key is not None and isinstance(item, dict):
            return ("k", _hashable(item.get(key)))
        return ("v", _hashable(item))

    order_pos: dict[Any, int] = {}
    for n, item in enumerate(order):
        order_pos.setdefault(identity(item), n)
    server_pos: dict[Any, int] = {}
    for n, item in enumerate(original):
        server_pos.setdefault(identity(item), n)
    missing = len(order) + len(original)
    in_patch = sorted((i for i in merged if identity(i) in order_pos), key=lambda i: order_pos[identity(i)])
    server_only = sorted(
        (i for i in merged if identity(i) not in order_pos),
        key=lambda i: server_pos.get(identity(i), missing),
    )
    result: list[Any] = []
    left = right = 0
    while left < len(server_only) and right < len(in_patch):
        left_pos = server_pos.get(identity(server_only[left]))
        right_pos = server_pos.get(identity(in_patch[right]))
        if left_pos is not None and right_pos is not None and left_pos < right_pos:
            result.append(server_only[left])
            left += 1
        else:
            result.append(in_patch[right])
            right += 1
    return result + server_only[left:] + in_patch[right:]


def _hashable(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    return value


# --------------------------------------------------------------------------- Go-like messages


def _go_type(value: Any) -> str:
    return {dict: "map[string]interface {}", list: "[]interface {}", str: "string", bool: "bool"}.get(
        type(value), "float64" if isinstance(value, (int, float)) else "<nil>"
    )


def _go_value(value: Any) -> str:
    if isinstance(value, dict):
        return _go_map(value)
    if isinstance(value, list):
        return "[" + " ".join(_go_value(v) for v in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _go_map(value: dict[str, Any]) -> str:
    return "map[" + " ".join(f"{k}:{_go_value(v)}" for k, v in sorted(value.items())) + "]"
