"""Unknown-field detection (``fieldValidation=Strict|Warn|Ignore``) against the OpenAPI schemas.

kubectl sends ``fieldValidation=Strict`` and trusts the server to reject typos such as
``spec.replica``; other clients get the real server's default, a ``Warning`` header per unknown
field. Custom resources are pruned to their structural schema, as the real server does.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from . import openapi
from .errors import ApiError
from .registry import ResourceType
from .yamlbody import load_json_compatible

_REF = "#/components/schemas/"
_MAX_REPORTED = 20


def _schemas() -> dict[str, Any]:
    return openapi.load_schemas().get("schemas") or {}


def _root_schema(rt: ResourceType) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    if rt.crd is not None:
        for ver in (rt.crd.get("spec") or {}).get("versions") or []:
            if ver.get("name") == rt.version:
                return ((ver.get("schema") or {}).get("openAPIV3Schema")), {}
        return None, {}
    schemas = _schemas()
    if not schemas:
        return None, {}
    try:
        from . import openapi

        name = openapi.component_name(rt.group, rt.version, rt.kind)
    except Exception:
        return None, {}
    return schemas.get(name), schemas


def _resolve(schema: Any, schemas: dict[str, Any]) -> dict[str, Any] | None:
    for _ in range(10):
        if not isinstance(schema, dict):
            return None
        ref = schema.get("$ref")
        if ref is None and len(schema.get("allOf") or []) == 1:
            ref = schema["allOf"][0].get("$ref")
        if not ref:
            return schema
        schema = schemas.get(ref.removeprefix(_REF))
    return None


def _walk(value: Any, schema: Any, schemas: dict[str, Any], path: str, out: list[str], prune: bool,
          top: bool = False) -> None:
    schema = _resolve(schema, schemas)
    if not schema or schema.get("x-kubernetes-preserve-unknown-fields") or schema.get("x-kubernetes-int-or-string"):
        return
    if isinstance(value, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        if props is None and not isinstance(extra, dict):
            return
        for key in list(value):
            child = value[key]
            if key.startswith("$") or child is None:  # patch directives and deletions
                continue
            sub = f"{path}.{key}" if path else key
            if props is not None and key in props:
                _walk(child, props[key], schemas, sub, out, prune)
            elif isinstance(extra, dict):
                _walk(child, extra, schemas, f"{path}[{key}]" if path else key, out, prune)
            elif extra is True or (top and key in ("apiVersion", "kind", "metadata")):
                continue
            else:
                out.append(sub)
                if prune:
                    del value[key]
    elif isinstance(value, list):
        items = schema.get("items")
        if items is None:
            return
        for i, child in enumerate(value):
            _walk(child, items, schemas, f"{path}[{i}]", out, prune)


# -- JSON types ------------------------------------------------------------------------------------
_JSON_NAMES = {dict: "object", list: "array", str: "string", bool: "bool", int: "number", float: "number"}


def _type_ok(value: Any, kind: str) -> bool:
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    return True


def _go_type(schema: dict[str, Any], raw: Any) -> str:
    ref = (raw or {}).get("$ref") if isinstance(raw, dict) else None
    if ref is None and isinstance(raw, dict) and len(raw.get("allOf") or []) == 1:
        ref = raw["allOf"][0].get("$ref")
    if ref:
        parts = ref.removeprefix(_REF).split(".")
        return ".".join(parts[-2:])
    kind = schema.get("type")
    if kind == "integer":
        return schema.get("format") or "int"
    if kind == "boolean":
        return "bool"
    if kind == "array":
        return "[]" + _go_type(_resolve(schema.get("items"), {}) or {}, schema.get("items"))
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return "map[string]" + _go_type(schema["additionalProperties"], schema["additionalProperties"])
    return kind or "object"


def _first_type_error(value: Any, raw: Any, schemas: dict[str, Any], path: str) -> tuple[str, str, str] | None:
    """(path, JSON type found, Go type wanted) of the first value whose JSON type is wrong."""
    schema = _resolve(raw, schemas)
    if not schema or value is None or schema.get("x-kubernetes-int-or-string"):
        return None
    kind = schema.get("type")
    if kind and not _type_ok(value, kind):
        return path, _JSON_NAMES.get(type(value), "value"), _go_type(schema, raw)
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return None
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, child in value.items():
            sub = f"{path}.{key}" if path else key
            if key in props:
                found = _first_type_error(child, props[key], schemas, sub)
            elif isinstance(extra, dict):
                found = _first_type_error(child, extra, schemas, sub)
            else:
                found = None
            if found:
                return found
    elif isinstance(value, list) and schema.get("items") is not None:
        for i, child in enumerate(value):
            found = _first_type_error(child, schema["items"], schemas, f"{path}[{i}]")
            if found:
                return found
    return None


def check_types(rt: ResourceType, obj: Any) -> None:
    """Reject values of the wrong JSON type, as the real server's decoder (built-ins, 400) or
    schema validation (custom resources, 422) does."""
    root, schemas = _root_schema(rt)
    if root is None or not isinstance(obj, dict):
        return
    found = _first_type_error(obj, root, schemas, "")
    if found is None:
        return
    path, got, want = found
    if rt.crd is not None:
        name = (obj.get("metadata") or {}).get("name", "") if isinstance(obj.get("metadata"), dict) else ""
        want_json = {"int": "integer", "int32": "integer", "int64": "integer", "bool": "boolean"}.get(want, want)
        raise ApiError(422, f'{rt.kind}.{rt.group} "{name}" is invalid: {path}: Invalid value: "{got}": {path} in '
                            f'body must be of type {want_json}: "{got}"', "Invalid")
    field = f"{rt.kind}.{path}" if path else rt.kind
    raise ApiError(400, f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: json: cannot '
                        f"unmarshal {got} into Go struct field {field} of type {want}", "BadRequest")


def unknown_fields(rt: ResourceType, body: Any, *, prune: bool = False) -> list[str]:
    """Paths of the fields in ``body`` the schema of ``rt`` does not declare."""
    root, schemas = _root_schema(rt)
    if root is None or not isinstance(body, dict):
        return []
    out: list[str] = []
    _walk(body, root, schemas, "", out, prune, top=True)
    return out


def _mode(query: Any) -> str:
    mode = query.get("fieldValidation") or "Warn"
    if mode not in ("Strict", "Warn", "Ignore"):
        raise ApiError(400, f'fieldValidation must be one of "Ignore", "Warn" or "Strict", not "{mode}"')
    return mode


def check(rt: ResourceType, body: Any, query: Any) -> list[str]:
    """Validate a create/update body; returns Warning header values (400 in Strict mode).
    Undeclared fields are dropped from ``body``, as a real server's decoder (or CRD pruning) does."""
    mode = _mode(query)
    found = unknown_fields(rt, body, prune=True)
    return _verdict(rt, found, mode)


def check_patch(rt: ResourceType, raw: bytes, content_type: str, query: Any) -> tuple[list[str], bytes]:
    """Validate the fields a merge/strategic/apply patch sets (JSON patches are not checked).
    Returns the warnings and the patch without its undeclared fields."""
    mode = _mode(query)
    if content_type == "application/json-patch+json":
        return [], raw
    try:
        patch = (load_json_compatible(raw.decode()) if content_type == "application/apply-patch+yaml"
                 else json.loads(raw))
    except (ValueError, yaml.YAMLError, UnicodeDecodeError, RecursionError):
        return [], raw  # the patch code reports malformed bodies
    found = unknown_fields(rt, patch, prune=True)
    if not found:
        return [], raw
    return _verdict(rt, found, mode), json.dumps(patch).encode()


def _verdict(rt: ResourceType, found: list[str], mode: str) -> list[str]:
    if not found:
        return []
    shown = found[:_MAX_REPORTED]
    if mode == "Strict":
        fields = ", ".join(f'unknown field "{f}"' for f in shown)
        if rt.crd is not None:
            raise ApiError(400, f"strict decoding error: {fields}", "BadRequest")
        raise ApiError(400, f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
                            f"strict decoding error: {fields}", "BadRequest")
    if mode == "Ignore":
        return []
    # header values must be printable ASCII: escape the path as JSON does
    return ['299 - "unknown field ' + json.dumps(json.dumps(f, ensure_ascii=True))[1:-1] + '"' for f in shown]
