"""Write helpers: status patches that drop vanished fields, and API error text for events."""

from __future__ import annotations

from typing import Any

from .informer import Informer
from .util import Obj, name_of, ns_of


def api_error_message(exc: BaseException) -> str:
    return str(getattr(exc, "message", None) or exc)


def api_error_code(exc: BaseException) -> int:
    code = getattr(exc, "code", None)
    if code is None:
        code = getattr(exc, "status", None)
    return code if isinstance(code, int) else 0


def status_patch(old: Obj | None, new: Obj) -> Obj:
    """A merge patch turning status `old` into `new` (keys that vanish become null)."""
    old = old or {}
    patch: Obj = {k: v for k, v in new.items() if old.get(k) != v}
    for key in old:
        if key not in new:
            patch[key] = None
    return patch


async def write_status(client: Any, resource: str, obj: Obj, new_status: Obj,
                       cache: Informer | None = None) -> Obj:
    """Patch the status subresource only when something changed; keep the cache current."""
    patch = status_patch(obj.get("status"), new_status)
    if not patch:
        return obj
    updated = await client.patch(resource, name_of(obj), {"status": patch}, ns_of(obj), subresource="status")
    if cache is not None and updated:
        cache.upsert(updated)
    return updated or obj


async def write_patch(client: Any, resource: str, obj: Obj, patch: Obj, cache: Informer | None = None) -> Obj:
    updated = await client.patch(resource, name_of(obj), patch, ns_of(obj))
    if cache is not None and updated:
        cache.upsert(updated)
    return updated or obj


def prune_zero(status: Obj, *keys: str) -> Obj:
    """Drop int fields that are zero, as the API's omitempty does (kubectl prints them as blank)."""
    for key in keys:
        if not status.get(key):
            status.pop(key, None)
    return status
