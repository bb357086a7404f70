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

import secrets
from collections.abc import Mapping
from typing import Any

from sregym_appkit import manifests as kit

from . import IMAGE_REPO, IMAGE_TAG
from .config import SERVICES

DEFAULT_PARAMS: dict[str, Any] = {"image_tag": IMAGE_TAG, "replicas": 1, "otlp_endpoint": "",
                                  "workload_rate": 5, "workload_target": "", "workload_secret": ""}


SHIPPED = kit.ShippedManifests(__package__, IMAGE_REPO, DEFAULT_PARAMS)
manifest_dir, manifest_files, load_documents = SHIPPED.directory, SHIPPED.files, SHIPPED.documents


def render(params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The manifests with ``params`` applied, in apply order. Unknown parameters raise ValueError."""
    merged = kit.merge_params(params, DEFAULT_PARAMS)
    docs = load_documents()
    for doc in docs:
        if doc.get("kind") == "Secret" and doc["metadata"].get("name") == "workload-signing-key":
            doc["stringData"]["key"] = str(merged["workload_secret"]) or secrets.token_hex(24)
    # the gateway container of nginx-thrift sends the traces of the front end
    return kit.render_replicated(docs, merged, image_repo=IMAGE_REPO, services=SERVICES,
                                 traced_containers=("thrift-gateway",))


def render_yaml(params: Mapping[str, Any] | None = None) -> str:
    return kit.dump(render(params))
