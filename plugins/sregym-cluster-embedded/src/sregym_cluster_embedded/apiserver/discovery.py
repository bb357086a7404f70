"""Discovery documents: legacy (/api, /apis, /api/v1, /apis/<g>/<v>) and aggregated v2/v2beta1."""

from __future__ import annotations

import hashlib
from typing import Any

from .registry import Registry, ResourceType

AGG_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGG_V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"


def wants_aggregated(accept: str) -> str | None:
    """The aggregated discovery version the Accept header asks for first, if any."""
    for part in accept.split(","):
        params = {p.strip().split("=", 1)[0]: p.strip().split("=", 1)[-1] for p in part.split(";")[1:]}
        if params.get("g") == "apidiscovery.k8s.io" and params.get("as") == "APIGroupDiscoveryList":
            if params.get("v") in ("v2", "v2beta1"):
                return params["v"]
    return None


def _hash(rt: ResourceType) -> str:
    return hashlib.sha256(f"{rt.group}/{rt.version}/{rt.kind}".encode()).digest()[:8].hex()


def api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group_entry(group: str, versions: list[str]) -> dict[str, Any]:
    vs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": vs, "preferredVersion": vs[0]}


def api_group_list(registry: Registry) -> dict[str, Any]:
    groups = [_group_entry(g, vs) for g, vs in registry.group_versions().items() if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry: Registry, group: str) -> dict[str, Any] | None:
    versions = registry.group_versions().get(group)
    if not versions or not group:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(group, versions)}


def api_resource_list(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    types = registry.in_group_version(group, version)
    if not types:
        return None
    resources: list[dict[str, Any]] = []
    for rt in sorted(types, key=lambda t: t.plural):
        entry: dict[str, Any] = {
            "name": rt.plural,
            "singularName": rt.singular_name,
            "namespaced": rt.namespaced,
            "kind": rt.kind,
            "verbs": list(rt.verbs),
        }
        if rt.short_names:
            entry["shortNames"] = list(rt.short_names)
        if rt.categories:
            entry["categories"] = list(rt.categories)
        entry["storageVersionHash"] = _hash(rt)
        resources.append(entry)
        for sub in rt.subresources:
            sub_entry: dict[str, Any] = {
                "name": f"{rt.plural}/{sub.name}",
                "singularName": "",
                "namespaced": rt.namespaced,
                "kind": sub.kind or rt.kind,
                "verbs": list(sub.verbs),
            }
            if sub.group or sub.version:
                sub_entry["group"], sub_entry["version"] = sub.group, sub.version
            resources.append(sub_entry)
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}


def _agg_resource(rt: ResourceType) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "resource": rt.plural,
        "responseKind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
        "scope": "Namespaced" if rt.namespaced else "Cluster",
        "singularResource": rt.singular_name,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    subs = []
    for sub in rt.subresources:
        subs.append({
            "subresource": sub.name,
            "responseKind": {"group": sub.group if sub.kind else rt.group,
                             "version": sub.version if sub.kind else rt.version,
                             "kind": sub.kind or rt.kind},
            "verbs": list(sub.verbs),
        })
    if subs:
        entry["subresources"] = subs
    return entry


def aggregated(registry: Registry, legacy: bool, version: str) -> dict[str, Any]:
    """The APIGroupDiscoveryList for /api (legacy=True) or /apis."""
    items = []
    for group, versions in registry.group_versions().items():
        if (group == "") != legacy:
            continue
        item: dict[str, Any] = {"metadata": {"name": group} if group else {}, "versions": []}
        for v in versions:
            resources = [_agg_resource(rt) for rt in sorted(registry.in_group_version(group, v),
                                                             key=lambda t: t.plural)]
            item["versions"].append({"version": v, "resources": resources, "freshness": "Current"})
        items.append(item)
    return {"kind": "APIGroupDiscoveryList", "apiVersion": f"apidiscovery.k8s.io/{version}", "metadata": {},
            "items": items}
