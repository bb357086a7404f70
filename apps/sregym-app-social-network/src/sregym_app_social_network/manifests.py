"""The Kubernetes manifests: plain YAML files (valid as they are) plus a tiny parameter renderer.

Parameters (all optional):

``image_tag``        tag of ``sregym/social-network`` for every app container (default ``1.0``)
``replicas``         replicas of the stateless services: an int for all, or ``{service: n}``
``otlp_endpoint``    ``OTEL_EXPORTER_OTLP_ENDPOINT`` for every service (empty disables tracing)
``workload_rate``    the workload generator's requests per second
``workload_target``  the URL the workload generator calls
``workload_secret``  the workload generator's post-signing key (default: a fresh random key per render)
"""

from __future__ import annotations

import copy
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sregym_appkit import manifests as kit

from . import IMAGE_REPO, IMAGE_TAG
from .config import SERVICES

DEFAULT_PARAMS: dict[str, Any] = {"image_tag": IMAGE_TAG, "replicas": 1, "otlp_endpoint": "",
                                  "workload_rate": 5, "workload_target": "", "workload_secret": ""}


def manifest_dir() -> Path:
    return kit.manifest_dir(__package__)


def manifest_files() -> tuple[Path, ...]:
    return kit.manifest_files(__package__)


def load_documents() -> list[dict[str, Any]]:
    return kit.load_documents(manifest_files())


def render(params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The manifests with ``params`` applied, in apply order. Unknown parameters raise ValueError."""
    merged = kit.merge_params(params, DEFAULT_PARAMS)
    per_service = kit.replicas_per_service(merged["replicas"], SERVICES)
    docs = copy.deepcopy(load_documents())
    for doc in docs:
        name = doc.get("metadata", {}).get("name")
        if doc.get("kind") == "Secret" and name == "workload-signing-key":
            doc["stringData"]["key"] = str(merged["workload_secret"]) or secrets.token_hex(24)
        if doc.get("kind") == "Deployment" and name in per_service:
            doc["spec"]["replicas"] = per_service[name]
        for container in kit.containers(doc):
            if str(container.get("image", "")).startswith(IMAGE_REPO + ":"):
                container["image"] = f"{IMAGE_REPO}:{merged['image_tag']}"
                if name in SERVICES and container["name"] in (name, "thrift-gateway"):
                    kit.set_env(container, "OTEL_EXPORTER_OTLP_ENDPOINT", str(merged["otlp_endpoint"]))
            if name == "workload-generator":
                kit.set_env(container, "WORKLOAD_RATE", str(merged["workload_rate"]))
                if merged["workload_target"]:
                    kit.set_env(container, "WORKLOAD_TARGET", str(merged["workload_target"]))
    return docs


def render_yaml(params: Mapping[str, Any] | None = None) -> str:
    return kit.dump(render(params))
