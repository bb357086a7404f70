"""PATCH bodies: JSON patch, JSON merge patch, strategic merge patch and server-side apply.

``apply_patch`` is pure: it never mutates its input and only ever raises ``PatchError`` whose code
and message mimic kube-apiserver (kubectl prints them to the agent).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonpatch
import jsonpointer
import yaml

from . import smp
from .shapes import as_dict
from .yamlbody import load_json_compatible

__all__ = ["CONTENT_TYPES", "PatchError", "apply_patch", "merge_patch"]

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
CONTENT_TYPES = (JSON_PATCH, MERGE_PATCH, APPLY_PATCH, STRATEGIC_PATCH)

_REASONS = {
    400: "BadRequest",
    409: "Conflict",
    415: "UnsupportedMediaType",
    422: "Invalid",
    500: "",  # StatusReasonUnknown: what the server reports for errors it does not classify
}
_UNPROCESSABLE = "the server rejected our request due to an error in our request"


class PatchError(Exception):
    """A patch the server refuses. ``to_status()`` gives the Kubernetes ``Status`` body."""

    def __init__(self, code: int, message: str, *, causes: list[dict[str, str]] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = _REASONS.get(code, "")
        self.causes = causes or []

    def to_status(self) -> dict[str, Any]:
        status: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "code": self.code,
        }
        if self.reason:
            status["reason"] = self.reason
        if self.causes:
            status["details"] = {"causes": self.causes}
        return status


def _unprocessable(detail: str) -> PatchError:
    """What the server answers when a JSON patch operation fails (a generic 422 with one cause)."""
    return PatchError(422, _UNPROCESSABLE, causes=[{"reason": "UnexpectedServerResponse", "message": detail}])


def apply_patch(
    obj: dict[str, Any], body: bytes, content_type: str, *, kind: str, group: str
) -> dict[str, Any]:
    """Apply a PATCH request body to ``obj`` and return the patched copy.

    :param obj: the live object (JSON dict); ``{}`` for a server-side apply that creates.
    :param content_type: the request Content-Type (parameters such as ``charset`` are ignored).
    :param kind: kind of the object, used for strategic merge keys.
    :param group: API group ("" for core); non built-in groups are CRDs (no SMP).
    """
    media = content_type.split(";", 1)[0].strip().lower()
    try:
        if media == JSON_PATCH:
            result = _json_patch(obj, _parse_json(body))
        elif media == MERGE_PATCH:
            patch = _parse_json(body)
            if not isinstance(patch, dict):
                raise PatchError(400, "Invalid JSON Patch")
            result = merge_patch(obj, patch)
        elif media == STRATEGIC_PATCH:
            patch = _parse_json(body)
            if not isinstance(patch, dict):
                raise PatchError(
                    400,
                    f"json: cannot unmarshal {_json_kind(patch)} into Go value of type map[string]interface {{}}",
                )
            result = smp.strategic_merge(obj, patch, group=group, kind=kind)
        elif media == APPLY_PATCH:
            result = _server_side_apply(obj, body, kind=kind, group=group)
        else:
            raise PatchError(
                415,
                f"the body of the request was in an unknown format - accepted media types include: {', '.join(CONTENT_TYPES)}",
            )
    except smp.SmpError as exc:
        if exc.code == 422:
            raise _unprocessable(exc.message) from None
        raise PatchError(exc.code, exc.message) from None
    except PatchError:
        raise
    except RecursionError:
        raise PatchError(400, "the patch is nested too deeply") from None
    except Exception as exc:  # noqa: BLE001 - contract: bad input never escapes as anything but PatchError
        raise PatchError(500, f"unable to apply patch: {exc}") from None  # a bug of ours, reported cleanly
    if not isinstance(result, dict):
        raise PatchError(
            400,
            f"couldn't get version/kind; json parse error: json: cannot unmarshal {_json_kind(result)} "
            'into Go value of type struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
            'Kind string "json:\\"kind,omitempty\\"" }',
        )
    _check_identity(obj, result)
    return result


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch; returns a new value (``target`` is not modified)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# --------------------------------------------------------------------------- JSON patch (RFC 6902)


def _json_patch(obj: dict[str, Any], patch: Any) -> Any:
    if not isinstance(patch, list):
        raise PatchError(
            400, f"json: cannot unmarshal {_json_kind(patch)} into Go value of type jsonpatch.Patch"
        )
    doc: Any = copy.deepcopy(obj)
    for op in patch:
        if not isinstance(op, dict):
            raise PatchError(
                400, f"json: cannot unmarshal {_json_kind(op)} into Go value of type jsonpatch.Operation"
            )
        name, path = op.get("op"), op.get("path")
        if name not in ("add", "remove", "replace", "move", "copy", "test"):
            raise _unprocessable(f"Unexpected kind: {name}")
        if not isinstance(path, str):
            raise _unprocessable(f"{name} operation missing path")
        try:
            doc = jsonpatch.apply_patch(doc, [op], in_place=True)
        except jsonpatch.JsonPatchTestFailed:
            raise _unprocessable(f"testing value {path} failed: test failed") from None
        except (
            jsonpatch.JsonPatchException,
            jsonpointer.JsonPointerException,
            KeyError,
            IndexError,
            TypeError,
        ) as exc:
            raise _unprocessable(_op_failure(name, path, op, exc)) from None
    return doc


def _op_failure(name: str, path: str, op: dict[str, Any], exc: Exception) -> str:
    """Go json-patch style text for a failed operation."""
    if isinstance(exc, jsonpatch.InvalidJsonPatch):
        return f"{name} operation is invalid: {exc}"
    last = path.rsplit("/", 1)[-1]
    if name == "remove":
        return f"error in remove for path: '{path}': Unable to remove nonexistent key: {last}: missing value"
    if name == "replace":
        return f"replace operation does not apply: doc is missing key: {path}: missing value"
    if name == "add":
        return f'add operation does not apply: doc is missing path: "{path}": missing value'
    source = op.get("from")
    return f"error in {name} for path: '{path}': {name} operation does not apply: doc is missing from path: {source}: missing value"


# --------------------------------------------------------------------------- server-side apply


def _server_side_apply(obj: dict[str, Any], body: bytes, *, kind: str, group: str) -> dict[str, Any]:
    """Approximate server-side apply: merge the applied configuration into the live object.

    Fields absent from the configuration stay as they are; lists merge by their strategic merge
    key (SSA's list-map keys agree for the cases kubectl users hit). Field ownership, conflicts and
    ``managedFields`` bookkeeping are not modelled.
    """
    try:
        text = body.decode("utf-8")
        applied = load_json_compatible(text) if text.strip() else None
    except (yaml.YAMLError, ValueError, RecursionError) as exc:
        raise PatchError(400, f"error decoding YAML: {exc}") from None
    if not isinstance(applied, dict):
        raise PatchError(
            400,
            f"error decoding YAML: the applied configuration must be an object, got {_json_kind(applied)}",
        )
    if _expanded_size(applied, _MAX_APPLY_NODES) > _MAX_APPLY_NODES:
        # YAML aliases can make a few bytes expand exponentially ("billion laughs").
        raise PatchError(400, "error decoding YAML: the applied configuration expands to too many nodes")
    if not applied.get("kind"):
        raise PatchError(400, f"Object 'Kind' is missing in '{text.strip()[:200]}'")
    if not applied.get("apiVersion"):
        raise PatchError(400, f"Object 'apiVersion' is missing in '{text.strip()[:200]}'")
    if applied["kind"] != kind:
        raise PatchError(
            400,
            f"the kind in the applied configuration ({applied['kind']}) does not match the object kind ({kind})",
        )
    applied_group = str(applied["apiVersion"]).rpartition("/")[0]
    if applied_group != group:
        raise PatchError(
            400,
            f"the API group in the applied configuration ({applied_group or 'core'}) does not match "
            f"the object's group ({group or 'core'})",
        )
    config = _drop_nulls_and_directives(applied)
    config.get("metadata", {}).pop("managedFields", None)
    if smp.is_builtin(group):
        return smp.strategic_merge(obj, config, group=group, kind=kind)
    return _deep_merge(copy.deepcopy(obj), config)


_MAX_APPLY_NODES = 200_000


def _expanded_size(value: Any, limit: int) -> int:
    """Count nodes as if aliases were expanded, stopping as soon as ``limit`` is passed."""
    count = 0
    stack = [value]
    while stack and count <= limit:
        current = stack.pop()
        count += 1
        if isinstance(current, dict):
            stack.extend(current.values())
        elif isinstance(current, list):
            stack.extend(current)
    return count


def _drop_nulls_and_directives(value: Any) -> Any:
    """An applied configuration states fields; ``null`` and ``$`` directives carry no meaning there."""
    if isinstance(value, dict):
        return {
            str(k): _drop_nulls_and_directives(v)
            for k, v in value.items()
            if v is not None and not str(k).startswith("$")
        }
    if isinstance(value, list):
        return [_drop_nulls_and_directives(v) for v in value]
    return value


def _deep_merge(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _deep_merge(base[key], value)
        else:
            base[key] = copy.deepcopy(value)
    return base


# --------------------------------------------------------------------------- helpers


def _check_identity(original: dict[str, Any], patched: dict[str, Any]) -> None:
    """A patch may not rename an object or move it to another namespace (same check as the server)."""
    old_meta = as_dict(original.get("metadata"))
    new_meta = patched.get("metadata")
    if not isinstance(new_meta, dict):
        if "metadata" in patched:
            raise PatchError(400, "metadata: Invalid value: the object's metadata must be an object")
        return
    for field in ("name", "namespace"):
        old, new = old_meta.get(field), new_meta.get(field)
        if old and new is not None and new != old:
            raise PatchError(
                400, f"the {field} of the object ({new}) does not match the {field} on the URL ({old})"
            )


def _parse_json(body: bytes) -> Any:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise PatchError(
            400, "invalid character looking for beginning of value (body is not UTF-8)"
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise PatchError(400, _go_json_error(exc)) from None
    except RecursionError:
        raise PatchError(400, "exceeded max depth") from None


def _go_json_error(exc: json.JSONDecodeError) -> str:
    """Translate a Python JSON error into encoding/json wording (what kubectl users expect)."""
    if exc.pos >= len(exc.doc.rstrip()):
        return "unexpected end of JSON input"
    char = exc.doc[exc.pos]
    shown = repr(char)[1:-1] if char != "'" else "\\''"
    context = {
        "Expecting value": "looking for beginning of value",
        "Expecting property name enclosed in double quotes": "looking for beginning of object key string",
        "Expecting ':' delimiter": "after object key",
        "Extra data": "after top-level value",
    }.get(exc.msg)
    if context is None and exc.msg == "Expecting ',' delimiter":
        before = exc.doc[: exc.pos].rstrip()
        context = "after array element" if _innermost_open(before) == "[" else "after object key:value pair"
    return f"invalid character '{shown}' {context or 'in string literal'}"


def _innermost_open(text: str) -> str:
    depth: list[str] = []
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in "[{":
            depth.append(ch)
        elif ch in "]}" and depth:
            depth.pop()
    return depth[-1] if depth else ""


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if value is None:
        return "null"
    return "number"
