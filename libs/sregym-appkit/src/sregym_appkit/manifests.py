"""Helpers for an app's Kubernetes manifests: plain YAML files shipped in the app's package, rendered
with a few parameters (image tag, replicas, environment) before ``kubectl apply``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import yaml


def manifest_dir(package: str) -> Path:
    """The ``manifests`` folder of ``package`` (an importable package name)."""
    return Path(str(resources.files(package) / "manifests"))


def manifest_files(package: str) -> tuple[Path, ...]:
    """The package's manifests in apply order (their file names sort in that order)."""
    return tuple(sorted(manifest_dir(package).glob("*.yaml")))


def load_documents(paths: tuple[Path, ...]) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in paths:
        docs.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    return docs


def merge_params(params: Mapping[str, Any] | None, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """``defaults`` updated with ``params``; an unknown parameter raises ValueError naming the known ones."""
    unknown = set(params or {}) - set(defaults)
    if unknown:
        raise ValueError(f"unknown manifest parameters: {', '.join(sorted(unknown))}; "
                         f"known: {', '.join(sorted(defaults))}")
    return {**defaults, **(params or {})}


def replicas_per_service(replicas: int | Mapping[str, Any], services: tuple[str, ...] | Mapping[str, Any]) -> dict[str, int]:
    """The ``replicas`` parameter (one int for all, or ``{service: n}``) as ``{service: n}``."""
    if isinstance(replicas, Mapping):
        per_service = {k: int(v) for k, v in replicas.items()}
    else:
        per_service = {s: int(replicas) for s in services}
    if any(n < 0 for n in per_service.values()):
        raise ValueError("replicas must be >= 0")
    return per_service


def containers(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The init containers and containers of a workload document's pod template."""
    pod = doc.get("spec", {}).get("template", {}).get("spec", {})
    yield from pod.get("initContainers", [])
    yield from pod.get("containers", [])


def set_env(container: dict[str, Any], name: str, value: str) -> None:
    """Set (or add) the environment variable ``name`` of a container to a literal ``value``."""
    for var in container.setdefault("env", []):
        if var.get("name") == name:
            var.pop("valueFrom", None)
            var["value"] = value
            return
    container["env"].append({"name": name, "value": value})


def dump(docs: list[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(docs, sort_keys=False)
