"""The AppSpec: inventory, description for agents, manifests, images, workload, deploy."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sregym_appkit import appspec as kit

from . import IMAGE_REPO
from .manifests import DEFAULT_PARAMS, MARIADB_IMAGE, MYSQL_PVC, WORKLOAD_TIMEOUT_S, render_yaml, service_env
from .topology import (
    ADMIN_PORT,
    FLAGD_SERVICE,
    FLAGS,
    GATEWAY,
    MYSQL_PORT,
    MYSQL_SERVICE,
    SERVICES,
    WORKLOAD_NAMESPACE,
    flags_of,
)
from .topology import NAMESPACE as NAMESPACE  # read by sregym_appkit.appspec.app_record

if TYPE_CHECKING:
    from sregym_core.types import AppSpec, ComponentSpec, DeployContext, LocalImage

NAME = "train-ticket"
DISPLAY_NAME = "Train Ticket"


def _knobs(service: str) -> tuple[str, ...]:
    return kit.knobs(
        # a flag in flagd-config turns a faulty code path of this service on
        ("tt-flag", any(FLAGS[f][1] for f in flags_of(service))),
        ("load-entrypoint", service == GATEWAY),
        ("ingress", service == GATEWAY))  # users arrive through the Ingress of the same name


def components() -> tuple[ComponentSpec, ...]:
    from sregym_core.types import ComponentSpec

    out = []
    for name, (port, _peers, _schema, _prefix) in SERVICES.items():
        roles: tuple[str, ...] = ("frontend", "service:http") if name == GATEWAY else ("service:http",)
        if name == FLAGD_SERVICE:
            roles = ("service:http", "flags:flagd")
        out.append(ComponentSpec(
            name=name, kind="Deployment", roles=roles, ports=(port, ADMIN_PORT), container=name,
            config_map="flagd-config" if name == FLAGD_SERVICE else None,
            env=tuple(e["name"] for e in service_env(name)), service=name,
            labels={"app.kubernetes.io/name": name}, knobs=_knobs(name)))
    out.append(ComponentSpec(name=MYSQL_SERVICE, kind="Deployment", roles=("db:mysql", "stateful"), ports=(MYSQL_PORT,),
                             pvcs=(MYSQL_PVC,),
                             container="mariadb", env=("MARIADB_ROOT_PASSWORD",), service=MYSQL_SERVICE,
                             labels={"app.kubernetes.io/name": MYSQL_SERVICE}))
    return tuple(out)


def local_images() -> tuple[LocalImage, ...]:
    return kit.service_images(IMAGE_REPO, __package__, GATEWAY, "TrainTicket services (argv[1] chooses the service)")


def deploy(ctx: DeployContext) -> None:
    """Apply the manifests rendered with the run's params (and the Ingress's TLS certificate, from the
    app's CA in the load generator's hidden namespace); the conductor then waits for Ready."""
    kit.apply_manifests(ctx, render_yaml(ctx.params), WORKLOAD_NAMESPACE,
                        hints=(f"the datastore image {MARIADB_IMAGE} needs Debian's mariadb-server on the node",))


def app_spec() -> AppSpec:
    return kit.app_record(
        __name__, params=DEFAULT_PARAMS, deploy=deploy, deploy_timeout=240.0,
        summary="TrainTicket: 25 ts-* services on the booking path, MariaDB schemas per service, flagd flags",
        workload=kit.workload_spec(WORKLOAD_NAMESPACE, "load-generator", max_request_s=WORKLOAD_TIMEOUT_S + 1.0))
