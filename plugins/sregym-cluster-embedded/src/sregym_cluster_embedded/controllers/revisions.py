"""ControllerRevisions for StatefulSets and DaemonSets (what `kubectl rollout history/undo` reads)."""

from __future__ import annotations

import copy
from typing import Any

from .informer import Informer
from .util import Obj, is_controlled_by, name_of, owner_ref
from .writes import api_error_code


async def ensure_revision(client: Any, cache: Informer, owner: Obj, name: str, hash_value: str) -> None:
    """Record the owner's current template as ControllerRevision `name`; reverting to an old template
    gives its existing revision the next number, as the apps controllers do."""
    ns = owner["metadata"].get("namespace", "")
    mine = [r for r in cache.list(ns) if is_controlled_by(r, owner)]
    top = max((int(r.get("revision") or 0) for r in mine), default=0)
    existing = cache.get(ns, name)
    if existing is not None:
        if int(existing.get("revision") or 0) < top:
            try:
                cache.upsert(await client.patch("controllerrevisions.apps", name, {"revision": top + 1}, ns))
            except Exception as exc:
                if api_error_code(exc) != 404:
                    raise
        return
    template = copy.deepcopy(owner.get("spec", {}).get("template") or {})
    template["$patch"] = "replace"  # kubectl rollout undo applies `data` as a strategic merge patch
    labels = dict((owner.get("spec", {}).get("selector") or {}).get("matchLabels") or {})
    labels["controller-revision-hash"] = hash_value
    body = {"apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": {"name": name, "namespace": ns, "labels": labels, "ownerReferences": [owner_ref(owner)]},
            "data": {"spec": {"template": template}}, "revision": top + 1}
    try:
        cache.upsert(await client.create("controllerrevisions.apps", body, ns))
    except Exception as exc:
        if api_error_code(exc) not in (409, 404):
            raise


__all__ = ["ensure_revision", "name_of"]
