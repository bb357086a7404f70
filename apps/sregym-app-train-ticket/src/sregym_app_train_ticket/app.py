"""The AppSpec: inventory, description for agents, manifests, images, workload, deploy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from . import IMAGE_REPO
from .manifests import DEFAULT_PARAMS, MARIADB_IMAGE, MYSQL_PVC, WORKLOAD_TIMEOUT_S, render_yaml, service_env
from .topology import (
    ADMIN_PORT,
    FLAGD_SERVICE,
    GATEWAY,
    MYSQL_PORT,
    MYSQL_SERVICE,
    NAMESPACE,
    SERVICES,
    WORKLOAD_NAMESPACE,
    FLAGS,
    flags_of,
)

NAME = "train-ticket"
STABLE_TAGS = ("1.0", "1.0.0", "latest")

#: What the agent is told about the app (``/get_app`` ``descriptions``): what it is and does, in
#: one paragraph as upstream's are; no ports, knobs or metric names (those are for it to find).
DISPLAY_NAME = "Train Ticket"
DESCRIPTION = (
    "Train Ticket is a railway ticketing system built as microservices: travellers log in, search trains and "
    "routes, book seats with food, insurance and consignment options, pay, and change or cancel their orders, "
    "through a web dashboard in front of dozens of services that speak JSON over HTTP and keep their data in "
    "a MySQL-compatible database."
)


def _knobs(service: str) -> tuple[str, ...]:
    knobs = []
    if any(FLAGS[f][1] for f in flags_of(service)):
        knobs.append("tt-flag")  # a flag in flagd-config turns a faulty code path of this service on
    if service == GATEWAY:
        knobs.append("load-entrypoint")
        knobs.append("ingress")  # users arrive through the Ingress of the same name (manifests/55-ingress.yaml)
    return tuple(knobs)


def components() -> tuple[Any, ...]:
    from sregym_core.types import ComponentSpec

    out = []
    for name, (port, _peers, schema, _prefix) in SERVICES.items():
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


def local_images() -> tuple[Any, ...]:
    from sregym_core.types import LocalImage

    entry = (sys.executable, "-m", "sregym_app_train_ticket.serve")
    return tuple(LocalImage(image=f"{IMAGE_REPO}:{tag}", argv=entry, cmd=(GATEWAY,), env={"PYTHONUNBUFFERED": "1"},
                            summary="TrainTicket services (argv[1] chooses the service)") for tag in STABLE_TAGS)


def deploy(ctx: Any) -> None:
    """Apply the manifests rendered with the run's params; the conductor then waits for Ready."""
    manifests = render_yaml(ctx.params)
    proc = subprocess.run([ctx.kubectl_path, "--kubeconfig", str(ctx.kubeconfig), "apply", "-f", "-"],
                          input=manifests, capture_output=True, text=True, timeout=ctx.timeout)
    if proc.returncode != 0:
        from sregym_core.errors import DeployError
        raise DeployError(f"kubectl apply failed: {proc.stderr.strip()[-1500:]}",
                          hints=("check the kubeconfig and that the cluster is up",
                                 f"the datastore image {MARIADB_IMAGE} needs Debian's mariadb-server on the node"))
    # the Ingress's TLS certificate, from the app's CA in the load generator's (hidden) namespace
    from sregym_appkit.deploy import Kubectl
    from sregym_appkit.ingress import ensure_tls

    ensure_tls(Kubectl(ctx.kubeconfig, ctx.kubectl_path), manifests, WORKLOAD_NAMESPACE)


def problems_dir() -> Path:
    return Path(__file__).parent / "problems"


def app_spec() -> Any:
    from sregym_core.types import AppSpec, WorkloadSpec

    from .manifests import manifest_files

    return AppSpec(
        name=NAME, namespace=NAMESPACE, description=DESCRIPTION, display_name=DISPLAY_NAME,
        summary="TrainTicket: 25 ts-* services on the booking path, MariaDB schemas per service, flagd flags",
        manifests=manifest_files(), components=components(),
        workload=WorkloadSpec(name="load-generator", namespace=WORKLOAD_NAMESPACE, service="load-generator",
                              port=8089, query_path="/stats", control_path="/control",
                              max_request_s=WORKLOAD_TIMEOUT_S + 1.0),
        images=local_images(), hidden_namespaces=(WORKLOAD_NAMESPACE,), problems_dir=problems_dir(),
        params=dict(DEFAULT_PARAMS), deploy=deploy, deploy_timeout=240.0,
    )
