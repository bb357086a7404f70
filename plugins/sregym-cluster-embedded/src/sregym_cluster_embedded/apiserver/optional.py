"""Calls into the modules other helpers write (printers, defaults, admission, patching, protobuf,
openapi), each with a minimal fallback so the server works while a module is missing or broken."""

from __future__ import annotations

import copy
import importlib
import json
import logging
from datetime import UTC, datetime
from types import ModuleType
from typing import Any

import yaml

from .errors import ApiError

log = logging.getLogger(__name__)


def _module(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(f"{__package__}.{name}")
    except Exception as exc:  # a missing or half-written module must not take the server down
        if not isinstance(exc, ModuleNotFoundError):
            log.warning("apiserver.%s failed to import: %s", name, exc)
        return None


# -- defaults ---------------------------------------------------------------------------------------
def apply_defaults(group: str, version: str, kind: str, obj: dict[str, Any]) -> None:
    mod = _module("defaults")
    fn = getattr(mod, "apply_defaults", None)
    if fn is None:
        return
    try:
        fn(group, version, kind, obj)
    except Exception as exc:
        log.warning("defaults for %s failed: %s", kind, exc)


# -- admission --------------------------------------------------------------------------------------
def admission_module() -> ModuleType | None:
    return _module("admission")


def admission_error(exc: Exception) -> ApiError | None:
    """Map an ``admission.AdmissionError`` to an ApiError (None for other exceptions)."""
    mod = admission_module()
    cls = getattr(mod, "AdmissionError", None)
    if cls is not None and isinstance(exc, cls):
        return ApiError(getattr(exc, "code", 403), getattr(exc, "message", str(exc)), getattr(exc, "reason", None))
    return None


# -- printers ---------------------------------------------------------------------------------------
def _age(ts: str | None, now: datetime) -> str:
    if not ts:
        return "<unknown>"
    try:
        then = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return "<invalid>"
    secs = int((now - then).total_seconds())
    if secs < 0:
        return "0s"
    if secs < 120:
        return f"{secs}s"
    if secs < 600:
        return f"{secs // 60}m{secs % 60}s" if secs % 60 else f"{secs // 60}m"
    if secs < 3 * 3600:
        return f"{secs // 60}m"
    if secs < 8 * 3600:
        return f"{secs // 3600}h{(secs % 3600) // 60}m" if (secs % 3600) // 60 else f"{secs // 3600}h"
    if secs < 48 * 3600:
        return f"{secs // 3600}h"
    return f"{secs // 86400}d"


def partial_metadata(obj: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata", {})}


def _fallback_table(objects: list[dict[str, Any]], include_object: str, now: datetime) -> dict[str, Any]:
    rows = []
    for obj in objects:
        row: dict[str, Any] = {"cells": [obj["metadata"].get("name", ""),
                                         _age(obj["metadata"].get("creationTimestamp"), now)]}
        if include_object == "Object":
            row["object"] = obj
        elif include_object != "None":
            row["object"] = partial_metadata(obj)
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {},
        "columnDefinitions": [
            {"name": "Name", "type": "string", "format": "name", "description": "Name", "priority": 0},
            {"name": "Age", "type": "string", "format": "", "description": "CreationTimestamp", "priority": 0},
        ],
        "rows": rows,
    }


def build_table(resource: str, group: str, objects: list[dict[str, Any]], *, include_object: str = "Metadata",
                crd: dict[str, Any] | None = None) -> dict[str, Any]:
    now = datetime.now(UTC)
    fn = getattr(_module("printers"), "build_table", None)
    if fn is not None:
        try:
            return fn(resource, group, objects, include_object=include_object, now=now, crd=crd)
        except Exception as exc:
            log.warning("printer for %s failed: %s", resource, exc)
    return _fallback_table(objects, include_object, now)


# -- patching ---------------------------------------------------------------------------------------
def _merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = _merge_patch(out.get(k), v)
    return out


def _strategic_fallback(target: Any, patch: Any) -> Any:
    """Crude strategic merge: lists of named dicts merge by name; directives are dropped."""
    if isinstance(patch, dict) and isinstance(target, dict):
        out = dict(target)
        for k, v in patch.items():
            if k.startswith("$"):
                continue
            if v is None:
                out.pop(k, None)
            elif isinstance(v, list) and isinstance(out.get(k), list) and all(
                isinstance(i, dict) and "name" in i for i in v + out[k]
            ):
                merged = {i["name"]: i for i in out[k]}
                for item in v:
                    merged[item["name"]] = _strategic_fallback(merged.get(item["name"], {}), item)
                out[k] = list(merged.values())
            else:
                out[k] = _strategic_fallback(out.get(k), v)
        return out
    if isinstance(patch, dict):
        return {k: _strategic_fallback(None, v) for k, v in patch.items() if not k.startswith("$") and v is not None}
    return copy.deepcopy(patch)


def apply_patch(obj: dict[str, Any], body: bytes, content_type: str, *, kind: str, group: str) -> dict[str, Any]:
    mod = _module("patching")
    fn = getattr(mod, "apply_patch", None)
    if fn is not None:
        error_cls = getattr(mod, "PatchError", None)
        try:
            return fn(obj, body, content_type, kind=kind, group=group)
        except ApiError:
            raise
        except Exception as exc:
            if error_cls is not None and isinstance(exc, error_cls):
                raise ApiError(getattr(exc, "code", 422), getattr(exc, "message", str(exc))) from exc
            raise ApiError(422, f"the patch could not be applied: {exc}", "Invalid") from exc
    try:
        if content_type == "application/apply-patch+yaml":
            patch = yaml.safe_load(body.decode())
        else:
            patch = json.loads(body)
    except (ValueError, yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ApiError(400, f"error decoding patch: {exc}") from exc
    if content_type == "application/json-patch+json":
        import jsonpatch

        try:
            return jsonpatch.apply_patch(obj, patch)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError) as exc:
            raise ApiError(422, f"the server rejected our request due to an error in our request: {exc}") from exc
    if not isinstance(patch, dict):
        raise ApiError(400, "json: cannot unmarshal array into Go value of type map[string]interface {}")
    if content_type == "application/strategic-merge-patch+json":
        return _strategic_fallback(obj, patch)
    return _merge_patch(obj, patch)


# -- protobuf ---------------------------------------------------------------------------------------
def decode_protobuf(body: bytes) -> dict[str, Any]:
    mod = _module("protobuf")
    fn = getattr(mod, "decode_object", None)
    if fn is None:
        raise ApiError(415, "the body of the request was in an unknown format - accepted media types include: "
                            "application/json, application/yaml", "UnsupportedMediaType")
    error_cls = getattr(mod, "ProtobufError", None)
    try:
        return fn(body)
    except Exception as exc:
        if error_cls is not None and isinstance(exc, error_cls):
            raise ApiError(400, f"failed to decode protobuf body: {exc}") from exc
        raise ApiError(400, f"failed to decode protobuf body: {exc}") from exc


# -- openapi ----------------------------------------------------------------------------------------
def _openapi_stub(resources: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    docs: dict[str, dict[str, Any]] = {}
    for res in resources:
        gv = f"apis/{res['group']}/{res['version']}" if res["group"] else f"api/{res['version']}"
        doc = docs.setdefault(gv, {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.32.4"},
                                   "paths": {}, "components": {"schemas": {}}})
        prefix = f"/{gv}/namespaces/{{namespace}}" if res["namespaced"] else f"/{gv}"
        doc["paths"][f"{prefix}/{res['plural']}/{{name}}"] = {
            "patch": {
                "x-kubernetes-group-version-kind": {"group": res["group"], "version": res["version"],
                                                    "kind": res["kind"]},
                "parameters": [{"name": "fieldValidation", "in": "query", "schema": {"type": "string"}}],
                "responses": {"200": {"description": "OK"}},
            }
        }
    index = {"paths": {gv: {"serverRelativeURL": f"/openapi/v3/{gv}?hash=stub"} for gv in docs}}
    return index, docs


def build_openapi(resources: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    fn = getattr(_module("openapi"), "build_openapi_v3", None)
    if fn is not None:
        try:
            return fn(resources)
        except Exception as exc:
            log.warning("openapi build failed: %s", exc)
    return _openapi_stub(resources)
