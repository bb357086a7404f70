"""The AppSpec: the inventory faults and agents act on, what agents are told, images, workload, deploy.

``sregym_appkit.appspec.app_record`` reads the names below and fills in the conventions: what
agents are told from ``description.md``, the manifests in ``manifests/``, the problems in
``problems/``, the workload namespace hidden.
"""

from __future__ import annotations

from typing import Any

from sregym_appkit import appspec as kit

from . import IMAGE_REPO
from .manifests import DEFAULT_PARAMS, render_yaml
from .topology import (
    ADMIN_PORT,
    BACKEND,
    BACKEND_PORT,
    DATASTORE,
    FRONTEND,
    FRONTEND_PORT,
    LOAD_GENERATOR,
    LOAD_GENERATOR_PORT,
    WORKLOAD_NAMESPACE,
)
from .topology import NAMESPACE as NAMESPACE  # read by app_record, as NAME and DISPLAY_NAME below

NAME = "myapp"
DISPLAY_NAME = "My App"


def components() -> tuple[Any, ...]:
    """Every Deployment and StatefulSet as faults see it (tests check it against the manifests)."""
    return (
        kit.component(FRONTEND, ("frontend", "service:http"), (FRONTEND_PORT, ADMIN_PORT),
                      env=("PORT", "ADMIN_PORT", "BACKEND_ADDR"),
                      # users' requests enter here, through the Ingress of the same name
                      knobs=kit.knobs(("load-entrypoint", True), ("ingress", True))),
        kit.component(BACKEND, ("service:http",), (BACKEND_PORT, ADMIN_PORT),
                      env=("PORT", "ADMIN_PORT", "DB_HOST", "DB_PORT", "DB_NAME", "DB_USER", "DB_PASSWORD")),
        kit.postgres_component(DATASTORE),
    )


def local_images() -> tuple[Any, ...]:
    """How the embedded cluster runs the app's image (``python -m sregym_app_myapp.serve <service>``)."""
    return kit.service_images(IMAGE_REPO, __package__, FRONTEND, "My App (argv[1]: frontend, backend or load-generator)")


def deploy(ctx: Any) -> None:
    """Apply the manifests (and issue the Ingress's certificate); the runner waits for Ready."""
    kit.apply_manifests(ctx, render_yaml(ctx.params), WORKLOAD_NAMESPACE)


def app_spec() -> Any:
    return kit.app_record(
        __name__, params=DEFAULT_PARAMS, deploy=deploy, deploy_timeout=180.0,
        summary="My App: a frontend and a backend over HTTP, the backend's data in PostgreSQL",
        workload=kit.workload_spec(WORKLOAD_NAMESPACE, LOAD_GENERATOR, port=LOAD_GENERATOR_PORT, max_request_s=6.0))

