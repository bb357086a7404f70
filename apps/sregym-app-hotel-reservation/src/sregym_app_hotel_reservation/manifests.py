"""The Kubernetes manifests: plain YAML files (valid as they are) plus a tiny parameter renderer.

Parameters (all optional):

``image_tag``        tag of ``sregym/hotel-reservation`` for every app container (default ``1.0``;
                     ``1.0-buggy`` is the buggy variant)
``replicas``         replicas of the stateless services: an int for all, or ``{service: n}``
``otlp_endpoint``    ``OTEL_EXPORTER_OTLP_ENDPOINT`` for every service (empty disables tracing)
``workload_rate``    the workload generator's requests per second
``workload_target``  the URL the workload generator calls
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from . import IMAGE_REPO, IMAGE_TAG
from .config import SERVICES

DEFAULT_PARAMS: dict[str, Any] = {"image_tag": IMAGE_TAG, "replicas": 1, "otlp_endpoint": "",
                                  "workload_rate": 5, "workload_target": ""}


def manifest_dir() -> Path:
    return Path(str(resources.files(__package__) / "manifests"))


def manifest_files() -> tuple[Path, ...]:
    return tuple(sorted(manifest_dir().glob("*.yaml")))


def load_documents() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in manifest_files():
        docs.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    return docs


def _containers(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    pod = doc.get("spec", {}).get("template", {}).get("spec", {})
    yield from pod.get("initContainers", [])
    yield from pod.get("containers", [])


def _set_env(container: dict[str, Any], name: str, value: str) -> None:
    for var in container.setdefault("env", []):
        if var.get("name") == name:
            var.pop("valueFrom", None)
            var["value"] = value
            return
    container["env"].append({"name": name, "value": value})


def render(params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The manifests with ``params`` applied, in apply order. Unknown parameters raise ValueError."""
    merged = dict(DEFAULT_PARAMS)
    unknown = set(params or {}) - set(DEFAULT_PARAMS)
    if unknown:
        raise ValueError(f"unknown manifest parameters: {', '.join(sorted(unknown))}; "
                         f"known: {', '.join(sorted(DEFAULT_PARAMS))}")
    merged.update(params or {})
    replicas = merged["replicas"]
    if isinstance(replicas, Mapping):
        per_service = {k: int(v) for k, v in replicas.items()}
    else:
        per_service = {s: int(replicas) for s in SERVICES}
    if any(n < 0 for n in per_service.values()):
        raise ValueError("replicas must be >= 0")
    docs = copy.deepcopy(load_documents())
    for doc in docs:
        name = doc.get("metadata", {}).get("name")
        if doc.get("kind") == "Deployment" and name in per_service:
            doc["spec"]["replicas"] = per_service[name]
        for container in _containers(doc):
            if str(container.get("image", "")).startswith(IMAGE_REPO + ":"):
                container["image"] = f"{IMAGE_REPO}:{merged['image_tag']}"
                if name in SERVICES and container["name"] == name:
                    _set_env(container, "OTEL_EXPORTER_OTLP_ENDPOINT", str(merged["otlp_endpoint"]))
            if name == "workload-generator":
                _set_env(container, "WORKLOAD_RATE", str(merged["workload_rate"]))
                if merged["workload_target"]:
                    _set_env(container, "WORKLOAD_TARGET", str(merged["workload_target"]))
    return docs


def render_yaml(params: Mapping[str, Any] | None = None) -> str:
    return yaml.safe_dump_all(render(params), sort_keys=False)
