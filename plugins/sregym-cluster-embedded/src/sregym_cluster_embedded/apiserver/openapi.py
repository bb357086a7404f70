"""OpenAPI v3 documents (``/openapi/v3`` and ``/openapi/v3/<group-version>``).

kubectl needs them for ``explain`` (real schemas), and for ``apply``/``edit`` under the default
``--validate=strict`` (PATCH operations carrying ``x-kubernetes-group-version-kind`` and a
``fieldValidation`` parameter, so kubectl lets the server validate).

Component schemas of built-in kinds are pre-generated from the official ``kubernetes`` Python
client (``tools/gen_openapi_schemas.py`` → ``openapi_data/schemas.json.gz``) and loaded on first
use, so importing this module and starting the server stay cheap. CRDs contribute their
``openAPIV3Schema``.
"""

from __future__ import annotations

import copy
import gzip
import hashlib
import json
import re
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = ["build_openapi_v3", "component_name", "load_schemas"]

DATA_FILE = Path(__file__).parent / "openapi_data" / "schemas.json.gz"
_REF = "#/components/schemas/"
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_STATUS = "io.k8s.apimachinery.pkg.apis.meta.v1.Status"
_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
)
#: custom resources take no strategic merge patch (the server answers 415), and their PATCH operations
#: say so as kube-apiserver's do: kubectl reads them to choose, and sends ``apply`` as a JSON merge patch
_CUSTOM_PATCH_TYPES = tuple(t for t in _PATCH_TYPES if "strategic" not in t)
_lock = threading.Lock()


@lru_cache(maxsize=1)
def load_schemas() -> dict[str, Any]:
    """The generated data: ``{"schemas": {name: schema}, "kinds": {"group/version/Kind": name}}``."""
    try:
        return json.loads(gzip.decompress(DATA_FILE.read_bytes()))
    except (OSError, ValueError):
        # A missing data file must not take the server down: explain degrades, apply/edit still work.
        return {"schemas": {}, "kinds": {}}


def component_name(group: str, version: str, kind: str) -> str:
    """The schema name kube-apiserver uses for a kind (built-ins from the data, CRDs reversed-domain)."""
    known = load_schemas()["kinds"].get(f"{group}/{version}/{kind}")
    if known:
        return known
    if not group:
        return f"io.k8s.api.core.{version}.{kind}"
    if "." not in group:
        return f"io.k8s.api.{group}.{version}.{kind}"
    return ".".join(reversed(group.split("."))) + f".{version}.{kind}"


def build_openapi_v3(resources: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Build the ``/openapi/v3`` index and one document per group-version.

    :param resources: dicts with ``group``, ``version``, ``kind``, ``plural``, ``namespaced`` and
        optionally ``schema`` (a CRD's ``openAPIV3Schema``).
    :returns: ``(index, documents)``; documents are keyed ``"api/v1"``, ``"apis/apps/v1"``, ...
        Results are cached per resource set and shared: treat them as read-only.
    """
    key = json.dumps(resources, sort_keys=True, default=str)
    with _lock:
        return _build_cached(key)


@lru_cache(maxsize=8)
def _build_cached(key: str) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    resources = [r for r in json.loads(key) if isinstance(r, dict) and r.get("version") and r.get("kind")]
    by_group_version: dict[str, list[dict[str, Any]]] = {}
    for resource in resources:
        group = resource.get("group") or ""
        gv_path = f"apis/{group}/{resource['version']}" if group else f"api/{resource['version']}"
        by_group_version.setdefault(gv_path, []).append(resource)
    documents = {gv: _document(gv, items) for gv, items in sorted(by_group_version.items())}
    index = {
        "paths": {
            gv: {"serverRelativeURL": f"/openapi/v3/{gv}?hash={_hash(document)}"}
            for gv, document in documents.items()
        }
    }
    return index, documents


def _hash(document: dict[str, Any]) -> str:
    return hashlib.sha512(json.dumps(document, sort_keys=True).encode()).hexdigest().upper()


# --------------------------------------------------------------------------- documents


def _document(gv_path: str, resources: list[dict[str, Any]]) -> dict[str, Any]:
    known = load_schemas()["schemas"]
    schemas: dict[str, Any] = {}
    paths: dict[str, Any] = {}
    for resource in sorted(resources, key=lambda r: str(r.get("plural"))):
        group, version, kind = resource.get("group") or "", resource["version"], resource["kind"]
        name = component_name(group, version, kind)
        if resource.get("schema"):
            schemas[name] = _crd_schema(resource["schema"], group, version, kind)
        elif name in known:
            schemas[name] = known[name]
        else:
            schemas[name] = _minimal_schema(group, version, kind)
        if resource.get("plural"):
            paths.update(_paths(gv_path, resource, name))
    for needed in (_STATUS, _OBJECT_META):
        if needed in known:
            schemas.setdefault(needed, known[needed])
    _add_referenced(schemas, known)
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.37.0"},
        "paths": paths,
        "components": {"schemas": dict(sorted(schemas.items()))},
    }


def _add_referenced(schemas: dict[str, Any], known: dict[str, Any]) -> None:
    """Pull in every schema reachable through ``$ref`` (the document must be self-contained)."""
    pending = list(schemas.values())
    while pending:
        for ref in _refs(pending.pop()):
            if ref not in schemas and ref in known:
                schemas[ref] = known[ref]
                pending.append(known[ref])


def _refs(value: Any) -> list[str]:
    found: list[str] = []
    stack = [value]
    while stack:
        current = stack.pop()
        if isinstance(current, dict):
            ref = current.get("$ref")
            if isinstance(ref, str) and ref.startswith(_REF):
                found.append(ref[len(_REF) :])
            stack.extend(current.values())
        elif isinstance(current, list):
            stack.extend(current)
    return found


def _gvk(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "version": version, "kind": kind}


def _type_meta_properties() -> dict[str, Any]:
    return {
        "apiVersion": {
            "description": "APIVersion defines the versioned schema of this representation of an object.",
            "type": "string",
        },
        "kind": {
            "description": "Kind is a string value representing the REST resource this object represents.",
            "type": "string",
        },
        "metadata": {
            "allOf": [{"$ref": _REF + _OBJECT_META}],
            "description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
        },
    }


def _crd_schema(schema: dict[str, Any], group: str, version: str, kind: str) -> dict[str, Any]:
    result = copy.deepcopy(schema) if isinstance(schema, dict) else {}
    result.setdefault("type", "object")
    properties = result.setdefault("properties", {})
    if isinstance(properties, dict):
        for field, definition in _type_meta_properties().items():
            if field == "metadata" or field not in properties:
                properties[field] = definition
    result["x-kubernetes-group-version-kind"] = [_gvk(group, version, kind)]
    return result


def _minimal_schema(group: str, version: str, kind: str) -> dict[str, Any]:
    return {
        "description": f"{kind} ({group or 'core'}/{version}).",
        "type": "object",
        "properties": _type_meta_properties(),
        "x-kubernetes-preserve-unknown-fields": True,
        "x-kubernetes-group-version-kind": [_gvk(group, version, kind)],
    }


# --------------------------------------------------------------------------- paths


def _param(
    name: str, where: str, description: str, *, required: bool = False, typ: str = "string"
) -> dict[str, Any]:
    param: dict[str, Any] = {
        "name": name,
        "in": where,
        "description": description,
        "schema": {"type": typ, "uniqueItems": True},
    }
    if required:
        param["required"] = True
    return param


_DRY_RUN = _param("dryRun", "query", "When present, indicates that modifications should not be persisted.")
_FIELD_MANAGER = _param(
    "fieldManager",
    "query",
    "fieldManager is a name associated with the actor or entity that is making these changes.",
)
_FIELD_VALIDATION = _param(
    "fieldValidation",
    "query",
    "fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields. Valid values are: Ignore, Warn, Strict.",
)
_FORCE = _param("force", "query", 'Force is going to "force" Apply requests.', typ="boolean")


def _operation_id(verb: str, group: str, version: str, kind: str, namespaced: bool, suffix: str = "") -> str:
    group_part = (
        "".join(p.capitalize() for p in re.split(r"[.\-]", group.replace(".k8s.io", ""))) if group else "Core"
    )
    scope = "Namespaced" if namespaced else ""
    return f"{verb}{group_part}{version.capitalize()}{scope}{kind}{suffix}"


def _paths(gv_path: str, resource: dict[str, Any], schema_name: str) -> dict[str, Any]:
    group, version, kind = resource.get("group") or "", resource["version"], resource["kind"]
    namespaced = bool(resource.get("namespaced"))
    plural = resource["plural"]
    base = f"/{gv_path}/namespaces/{{namespace}}/{plural}" if namespaced else f"/{gv_path}/{plural}"
    gvk = _gvk(group, version, kind)
    ref = {"$ref": _REF + schema_name}
    json_body = {"content": {"application/json": {"schema": ref}}}
    ok = {
        "description": "OK",
        "content": {"application/json": {"schema": ref}, "application/yaml": {"schema": ref}},
    }
    scope_params = (
        [
            _param(
                "namespace",
                "path",
                "object name and auth scope, such as for teams and projects",
                required=True,
            )
        ]
        if namespaced
        else []
    )

    def op(verb: str, action: str, responses: dict[str, Any], **extra: Any) -> dict[str, Any]:
        operation = {
            "operationId": _operation_id(verb, group, version, kind, namespaced),
            "description": f"{action} the specified {kind}",
            "tags": [gv_path.replace("/", "_")],
            "responses": responses,
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": gvk,
        }
        operation.update(extra)
        return operation

    item = {
        "parameters": [_param("name", "path", f"name of the {kind}", required=True), *scope_params],
        "get": op("read", "get", {"200": ok}),
        "put": op(
            "replace",
            "put",
            {"200": ok, "201": ok},
            parameters=[_DRY_RUN, _FIELD_MANAGER, _FIELD_VALIDATION],
            requestBody=json_body,
        ),
        "delete": op("delete", "delete", {"200": ok, "202": ok}, parameters=[_DRY_RUN]),
        "patch": op(
            "patch",
            "patch",
            {"200": ok, "201": ok},
            parameters=[_DRY_RUN, _FIELD_MANAGER, _FIELD_VALIDATION, _FORCE],
            requestBody={
                "content": {t: {"schema": {"type": "object"}}
                            for t in (_CUSTOM_PATCH_TYPES if resource.get("custom") else _PATCH_TYPES)},
                "required": True,
            },
        ),
    }
    collection = {
        "parameters": scope_params,
        "get": op("list", "list", {"200": {"description": "OK"}}),
        "post": op(
            "create",
            "post",
            {"200": ok, "201": ok, "202": ok},
            parameters=[_DRY_RUN, _FIELD_MANAGER, _FIELD_VALIDATION],
            requestBody=json_body,
        ),
    }
    return {f"{base}/{{name}}": item, base: collection}
