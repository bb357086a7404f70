"""Pairs a selector matches where a fault of this pack still cannot take effect.

``missing-secret`` deletes the Secret a component's pods read credentials from. Its selector asks for
a service with env vars, which is all a component inventory (:class:`~sregym_core.types.ComponentSpec`)
says; whether one of those vars comes from a Secret is written only in the pod template. Many services
of the shipped apps read none (Hotel Reservation's frontend and search, every Astronomy Shop service,
Train Ticket's services without a database): there injection stops with "reads no Secret". The check
reads the workload from the app's manifests and applies the predicate injection applies to the live
object (:func:`~sregym_fault_k8s.objects.secret_read_by`), so ``sregym list-faults`` does not offer
those pairs and a problem naming one fails validation instead of failing at injection.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from sregym_core.types import AppSpec, ComponentSpec, FaultSpec, Incompatible

from .objects import secret_read_by

MISSING_SECRET = "missing-secret"
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet")
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def check_compatibility(fault: FaultSpec, component: ComponentSpec, app: AppSpec) -> Incompatible | None:
    """Refuse ``missing-secret`` on a component whose pod template reads no Secret; defer otherwise."""
    if fault.name != MISSING_SECRET or not fault.selector.matches(component):
        return None  # not ours, or the selector already refuses it (and says why)
    workload = manifest_workloads(app).get((component.kind, component.name))
    if workload is None:
        return None  # not in the manifests as plain YAML (rendered at deploy time): the selector decides
    if secret_read_by(workload) is None:
        return Incompatible(f"{component.name} reads no Secret (no secretKeyRef or secretRef in its pod template)")
    return None


def manifest_workloads(app: AppSpec) -> Mapping[tuple[str, str], dict[str, Any]]:
    """The workloads of ``app``'s namespace in its manifests, by (kind, name)."""
    return _workloads(tuple(app.manifests), app.namespace)


@functools.lru_cache(maxsize=16)
def _workloads(manifests: tuple[Path, ...], namespace: str) -> Mapping[tuple[str, str], dict[str, Any]]:
    """Parsed once per app: files (or directories of ``*.yaml``/``*.yml``) that are missing or are not
    plain YAML (templates) are skipped, so their workloads are simply unknown."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for path in _files(manifests):
        try:
            docs = list(yaml.load_all(path.read_text(), Loader=_LOADER))
        except (OSError, yaml.YAMLError):
            continue
        for doc in docs:
            if not isinstance(doc, dict) or doc.get("kind") not in WORKLOAD_KINDS:
                continue
            meta = doc.get("metadata") or {}
            if meta.get("namespace", namespace) != namespace or not meta.get("name"):
                continue
            if not isinstance(((doc.get("spec") or {}).get("template") or {}).get("spec"), dict):
                continue
            found.setdefault((doc["kind"], meta["name"]), doc)
    return found


def _files(manifests: tuple[Path, ...]) -> list[Path]:
    files: list[Path] = []
    for path in manifests:
        if path.is_dir():
            files += sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml"))
        else:
            files.append(path)
    return files
