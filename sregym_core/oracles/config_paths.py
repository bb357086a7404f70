"""What changed inside an app's ConfigMaps, as paths: ``key`` for a text value, ``key/a/b`` for a leaf of a
JSON value (a flag file, a service's settings).

The reset puts ConfigMaps back, but grading needs more than "changed or not": a fix may change what the
faults changed and nothing else. A flag fault turns one flag on; an agent that turns it off and another one on
(red-team round 12, finding 6) leaves the flag file changed in a path no fault touched, which the service-level
oracle alone caught only when the workload exercised the other flag. Comparing parsed JSON, not text, lets an
editor re-indent or reorder a file without it counting as a change.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

#: a ConfigMap as the paths are keyed: (namespace, name)
ConfigKey = tuple[str, str]
_MISSING = object()


def _parsed(text: Any) -> Any:
    """A JSON object or array as parsed; anything else (plain text, YAML, a scalar) as its text."""
    if isinstance(text, str) and text.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(text)
        except ValueError:
            pass
    return text


def _leaves(value: Any, prefix: str) -> dict[str, Any]:
    """Every leaf of a parsed value under ``prefix`` (an empty object or array is a leaf of its own)."""
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_leaves(v, f"{prefix}/{k}"))
        return out
    if isinstance(value, list) and value:
        out = {}
        for i, v in enumerate(value):
            out.update(_leaves(v, f"{prefix}/{i}"))
        return out
    return {prefix: value}


def changed_paths(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> set[str]:
    """The paths whose value differs between two ConfigMaps' ``data`` (added and removed ones included)."""
    before, after = before or {}, after or {}
    changed: set[str] = set()
    for key in set(before) | set(after):
        old, new = _parsed(before.get(key)), _parsed(after.get(key))
        if old == new:
            continue
        if isinstance(old, (dict, list)) and isinstance(new, (dict, list)):
            was, now = _leaves(old, key), _leaves(new, key)
            changed |= {path for path in set(was) | set(now) if was.get(path, _MISSING) != now.get(path, _MISSING)}
        else:
            changed.add(key)
    return changed


def _covered(path: str, allowed: set[str]) -> bool:
    """Whether a path lies under one the faults changed (a whole text key covers everything in it)."""
    return any(path == a or path.startswith(a + "/") for a in allowed)


def config_maps(objects: list[dict[str, Any]]) -> dict[ConfigKey, dict[str, Any]]:
    """The ConfigMaps among listed objects, by (namespace, name); those a controller owns are left out (their
    controller writes them, not the agent or a fault)."""
    out = {}
    for o in objects:
        meta = o.get("metadata") or {}
        if o.get("kind") != "ConfigMap" or any(r.get("controller") for r in meta.get("ownerReferences") or ()):
            continue
        out[(str(meta.get("namespace", "")), str(meta.get("name", "")))] = o
    return out


def fault_changes(baseline: list[dict[str, Any]], now: list[dict[str, Any]]) -> dict[ConfigKey, set[str]]:
    """What the faults changed in the baseline's ConfigMaps (the listing just after an injection)."""
    before, after = config_maps(baseline), config_maps(now)
    out = {}
    for key, old in before.items():
        paths = changed_paths(old.get("data"), (after.get(key) or {}).get("data"))
        if paths:
            out[key] = paths
    return out


def unexplained_changes(baseline: list[dict[str, Any]], now: list[dict[str, Any]],
                        by_faults: Mapping[ConfigKey, set[str]]) -> dict[ConfigKey, list[str]]:
    """Paths of baseline ConfigMaps that differ from the baseline now and that no fault changed."""
    before, after = config_maps(baseline), config_maps(now)
    out = {}
    for key, old in before.items():
        if key not in after:
            continue  # deleted: baseline_preserved's own "deleted" check says so
        allowed = set(by_faults.get(key, ()))
        extra = sorted(p for p in changed_paths(old.get("data"), after[key].get("data")) if not _covered(p, allowed))
        if extra:
            out[key] = extra
    return out
