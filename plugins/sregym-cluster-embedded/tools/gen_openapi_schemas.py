"""Generate ``apiserver/openapi_data/schemas.json.gz`` from the official ``kubernetes`` Python client.

The client's models carry every field's JSON name (``attribute_map``), type (``openapi_types``),
description and requiredness (pydantic ``model_fields``); its API modules pair each resource path
with the model it returns. From these this script builds OpenAPI v3 component schemas named like
kube-apiserver's (``io.k8s.api.core.v1.Pod``), tags kinds with ``x-kubernetes-group-version-kind``
and merge lists with ``x-kubernetes-patch-*`` (from ``smp.STRUCTS``).

Run after upgrading ``kubernetes``:  python tools/gen_openapi_schemas.py
"""

from __future__ import annotations

import gzip
import inspect
import json
import re
import sys
from pathlib import Path
from typing import Any

import kubernetes
from kubernetes.client import api as api_package
from kubernetes.client import models

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
from sregym_cluster_embedded.apiserver import smp  # noqa: E402

OUTPUT = HERE.parent / "src" / "sregym_cluster_embedded" / "apiserver" / "openapi_data" / "schemas.json.gz"

_MODEL_NAME = re.compile(
    r"^(?P<prefix>(?:[A-Z][a-z]+)*)(?P<version>V\d+(?:alpha\d+|beta\d+)?)(?P<name>[A-Z]\w*)$"
)
_RESOURCE_PATH = re.compile(
    r"^/apis?/(?:(?P<group>[^/]+)/)?(?P<version>v\d+\w*)/(?:namespaces/\{namespace\}/)?(?P<plural>[a-z0-9]+)/\{name\}$"
)
_COLLECTION_PATH = re.compile(
    r"^/apis?/(?:(?P<group>[^/]+)/)?(?P<version>v\d+\w*)/(?:namespaces/\{namespace\}/)?(?P<plural>[a-z0-9]+)$"
)
# Subresource kinds (their paths end in /scale, /eviction, /token, /binding).
_SUBRESOURCE_KINDS = {
    "V1Scale": ("autoscaling", "v1", "Scale"),
    "V1Eviction": ("policy", "v1", "Eviction"),
    "AuthenticationV1TokenRequest": ("authentication.k8s.io", "v1", "TokenRequest"),
    "V1Binding": ("", "v1", "Binding"),
}
_META_V1 = {
    "ObjectMeta", "ListMeta", "LabelSelector", "LabelSelectorRequirement", "OwnerReference", "ManagedFieldsEntry",
    "Condition", "Status", "StatusDetails", "StatusCause", "DeleteOptions", "Preconditions", "APIResource",
    "APIResourceList", "APIGroup", "APIGroupList", "APIVersions", "GroupVersionForDiscovery",
    "ServerAddressByClientCIDR", "WatchEvent", "FieldSelectorRequirement",
}  # fmt: skip
_PACKAGE_OF_GROUP = {
    "": "io.k8s.api.core",
    "apiextensions.k8s.io": "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions",
    "apiregistration.k8s.io": "io.k8s.kube-aggregator.pkg.apis.apiregistration",
    "internal.apiserver.k8s.io": "io.k8s.api.apiserverinternal",
    "flowcontrol.apiserver.k8s.io": "io.k8s.api.flowcontrol",
}
# Fields the client types as a bare ``object`` that are IntOrString in the API.
_INT_OR_STRING_FIELDS = {"targetPort", "port", "maxSurge", "maxUnavailable", "minAvailable", "partition"}
# Resource-quantity maps/fields the client types as plain strings.
_QUANTITY_MAPS = {
    "limits", "requests", "capacity", "allocatable", "hard", "used", "max", "min", "default", "defaultRequest",
    "maxLimitRequestRatio", "overhead", "allocatedResources",
}  # fmt: skip
_QUANTITY_FIELDS = {"sizeLimit", "storageCapacity"}
_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_SCALARS = {
    "str": {"type": "string"},
    "int": {"type": "integer", "format": "int32"},
    "float": {"type": "number", "format": "double"},
    "bool": {"type": "boolean"},
    "bytes": {"type": "string", "format": "byte"},
    "datetime": {"type": "string", "format": "date-time"},
}


def package_of(group: str) -> str:
    if group in _PACKAGE_OF_GROUP:
        return _PACKAGE_OF_GROUP[group]
    return "io.k8s.api." + group.split(".")[0]


def resource_kinds() -> dict[str, tuple[str, str, str]]:
    """Model class name -> (group, version, kind) for every top-level resource the client reads."""
    kinds: dict[str, tuple[str, str, str]] = {}
    for module_name in sorted(dir(api_package)):
        module = getattr(api_package, module_name)
        if not inspect.isclass(module) or not module_name.endswith("Api"):
            continue
        source = inspect.getsource(module)
        returns: dict[str, str] = {}
        paths: dict[str, str] = {}
        current = ""
        for line in source.splitlines():
            if match := re.match(
                r"\s+def (_?)(\w+?)(_with_http_info|_without_preload_content|_serialize)?\(", line
            ):
                current = match.group(2)
            elif match := re.search(r"'200': \"(\w+)\"", line):
                returns.setdefault(current, match.group(1))
            elif match := re.search(r"resource_path='([^']+)'", line):
                paths[current] = match.group(1)
        for method, model in returns.items():
            path = paths.get(method, "")
            if method.startswith("read_"):
                match = _RESOURCE_PATH.match(path)
            elif method.startswith("create_"):  # create-only kinds: reviews, TokenReview...
                match = _COLLECTION_PATH.match(path)
            else:
                continue
            if not match or not hasattr(models, model):
                continue
            name = _MODEL_NAME.match(model)
            if name and name.group("version").lower() == match.group("version"):
                kinds.setdefault(
                    model, (match.group("group") or "", match.group("version"), name.group("name"))
                )
    for model, gvk in _SUBRESOURCE_KINDS.items():
        if hasattr(models, model):
            kinds[model] = gvk
    return kinds


def model_refs(cls: type) -> list[str]:
    refs = []
    for typ in getattr(cls, "openapi_types", {}).values():
        refs += [t for t in re.findall(r"\w+", typ) if hasattr(models, t) and t not in _SCALARS]
    return refs


def assign_components(kinds: dict[str, tuple[str, str, str]]) -> dict[str, str]:
    """Model class name -> component name, walking from each group's kinds (core first)."""
    names: dict[str, str] = {}
    for model, (group, _, _) in sorted(kinds.items(), key=lambda kv: (kv[1][0] != "", kv[1][0], kv[0])):
        stack = [model]
        while stack:
            current = stack.pop()
            if current in names:
                continue
            match = _MODEL_NAME.match(current)
            if not match:
                names[current] = f"io.k8s.{current}"
                continue
            short, ver = match.group("name"), match.group("version").lower()
            if ver == "v1" and short in _META_V1 and not match.group("prefix"):
                names[current] = f"io.k8s.apimachinery.pkg.apis.meta.v1.{short}"
            else:
                names[current] = f"{package_of(group)}.{ver}.{short}"
            stack += model_refs(getattr(models, current))
    return names


def clean_description(text: str | None) -> str:
    if not text:
        return ""
    text = inspect.cleandoc(text).split("\n\nAttributes:")[0].split("\nAttributes:")[0]
    return text.strip()


def field_schema(typ: str, names: dict[str, str], json_name: str) -> dict[str, Any]:
    if typ == "str" and json_name in _QUANTITY_FIELDS:
        return {"$ref": f"#/components/schemas/{_QUANTITY}"}
    if typ in _SCALARS:
        return dict(_SCALARS[typ])
    if typ == "Dict[str, str]" and json_name in _QUANTITY_MAPS:
        return {"type": "object", "additionalProperties": {"$ref": f"#/components/schemas/{_QUANTITY}"}}
    if typ == "object":
        if json_name in _INT_OR_STRING_FIELDS:
            return {"$ref": f"#/components/schemas/{_INT_OR_STRING}"}
        return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    if match := re.fullmatch(r"List\[(.+)\]", typ):
        return {"type": "array", "items": field_schema(match.group(1), names, json_name)}
    if match := re.fullmatch(r"Dict\[str, (.+)\]", typ):
        return {"type": "object", "additionalProperties": field_schema(match.group(1), names, json_name)}
    if typ in names:
        return {"$ref": f"#/components/schemas/{names[typ]}"}
    return {"type": "object"}


def patch_meta(component: str, json_name: str) -> smp.FieldMeta | None:
    short = component.rsplit(".", 1)[-1]
    meta = smp.STRUCTS.get(short, {}).get(json_name)
    if meta is None and short == "EphemeralContainer":
        meta = smp.STRUCTS["Container"].get(json_name)
    if meta is None and json_name == "conditions" and short.endswith("Status"):
        meta = smp.STRUCTS["ConditionsStatus"]["conditions"]
    if meta is None:
        for (_, kind), fields in smp.KIND_ROOTS.items():
            if kind == short and json_name in fields and json_name not in ("metadata", "spec", "status"):
                meta = fields[json_name]
    return meta


def build() -> dict[str, Any]:
    kinds = resource_kinds()
    names = assign_components(kinds)
    # As in kube-apiserver's v3 documents these two have no single "type" (oneOf), which is also
    # what makes kubectl explain print <IntOrString> and <Quantity>.
    schemas: dict[str, Any] = {
        _INT_OR_STRING: {
            "description": "IntOrString is a type that can hold an int32 or a string. In JSON or YAML it is "
            "written as the inner type, so a field can accept a name or a number.",
            "oneOf": [{"type": "integer"}, {"type": "string"}],
            "format": "int-or-string",
            "x-kubernetes-int-or-string": True,
        },
        _QUANTITY: {
            "description": "Quantity is a fixed-point representation of a number, written with an optional "
            "SI or binary suffix: 100m CPU is a tenth of a core, 64Mi is 64 mebibytes, 1G is 10^9.",
            "oneOf": [{"type": "string"}, {"type": "number"}],
        },
    }
    for model, component in sorted(names.items()):
        cls = getattr(models, model)
        properties: dict[str, Any] = {}
        required = []
        fields = getattr(cls, "model_fields", {})
        for attribute, typ in cls.openapi_types.items():
            json_name = cls.attribute_map[attribute]
            schema = field_schema(typ, names, json_name)
            info = fields.get(attribute)
            description = clean_description(info.description if info else "")
            if "$ref" in schema:
                schema = {"allOf": [schema]}
            if description:
                schema["description"] = description
            meta = patch_meta(component, json_name)
            if meta is not None and (meta.merge_key or meta.strategy):
                if meta.merge_key:
                    schema["x-kubernetes-patch-merge-key"] = meta.merge_key
                schema["x-kubernetes-patch-strategy"] = meta.strategy
            properties[json_name] = schema
            if info is not None and info.is_required():
                required.append(json_name)
        schema = {"description": clean_description(cls.__doc__), "type": "object", "properties": properties}
        if required:
            schema["required"] = required
        if model in kinds:
            group, version, kind = kinds[model]
            schema["x-kubernetes-group-version-kind"] = [{"group": group, "version": version, "kind": kind}]
        schemas[component] = schema
    kind_index = {f"{g}/{v}/{k}": names[m] for m, (g, v, k) in sorted(kinds.items())}
    return {"kubernetesClient": kubernetes.__version__, "kinds": kind_index, "schemas": schemas}


def main() -> None:
    data = build()
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    raw = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
    OUTPUT.write_bytes(gzip.compress(raw, 9, mtime=0))
    print(
        f"{len(data['schemas'])} schemas, {len(data['kinds'])} kinds, {len(raw)} bytes -> {OUTPUT} ({OUTPUT.stat().st_size} bytes)"
    )


if __name__ == "__main__":
    main()
