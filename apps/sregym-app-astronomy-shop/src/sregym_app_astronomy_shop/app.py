"""The AppSpec: inventory, description for agents, manifests, images, workload, deploy."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from sregym_appkit import appspec as kit

from . import IMAGE_REPO
from .manifests import DEFAULT_PARAMS, NGINX_IMAGE, WORKLOAD_TIMEOUT_S, peer_env, render_yaml
from .topology import ADMIN_PORT, FLAGS, SERVICES, WORKLOAD_NAMESPACE
from .topology import NAMESPACE as NAMESPACE  # read by sregym_appkit.appspec.app_record

if TYPE_CHECKING:
    from sregym_core.types import AppSpec, ComponentSpec, DeployContext, LocalImage

NAME = "astronomy-shop"
DISPLAY_NAME = "OpenTelemetry Demo Astronomy Shop"


def _knobs(service: str) -> tuple[str, ...]:
    return kit.knobs(
        # a flag in flagd-config changes this service's behaviour (faults.py)
        ("flagd", any(owner == service for _v, owner, _on in FLAGS.values())),
        ("load-entrypoint", service == "frontend"))


def components() -> tuple[ComponentSpec, ...]:
    from sregym_core.types import ComponentSpec

    out = []
    for name, (port, protocol, _peers) in SERVICES.items():
        if protocol == "queue-consumer":
            roles: tuple[str, ...] = ("queue-consumer",)
        elif name == "frontend":
            roles = ("frontend", "service:http")
        else:
            roles = (f"service:{protocol}",)
        env = ["OTEL_SERVICE_NAME", "ADMIN_PORT", "FLAGD_OFREP_PORT", *[e["name"] for e in peer_env(name)]]
        if name != "flagd":  # flagd reads its flags from a file and sends no traces
            env += ["FLAGD_HOST", "OTEL_EXPORTER_OTLP_ENDPOINT"]
        else:
            env.append("FLAGD_FILE")
        ports = (ADMIN_PORT,) if port is None else (port, ADMIN_PORT)
        out.append(ComponentSpec(name=name, kind="Deployment", roles=roles, ports=ports, container=name,
                                 config_map="flagd-config" if name == "flagd" else None, env=tuple(env), service=name,
                                 labels={"app.kubernetes.io/name": name}, knobs=_knobs(name)))
    # users arrive through the Ingress of the same name (manifests/55-ingress.yaml)
    out.append(ComponentSpec(name="frontend-proxy", kind="Deployment", roles=("proxy:nginx", "service:http"),
                             ports=(8080,), container="frontend-proxy", config_map="frontend-proxy-config",
                             service="frontend-proxy", labels={"app.kubernetes.io/name": "frontend-proxy"},
                             knobs=("ingress",)))
    out.append(ComponentSpec(name="valkey-cart", kind="Deployment", roles=("cache:redis",), ports=(6379,),
                             container="valkey-cart", service="valkey-cart",
                             labels={"app.kubernetes.io/name": "valkey-cart"}))
    out.append(ComponentSpec(name="queue", kind="Deployment", roles=("queue:redis-streams",), ports=(6379,),
                             container="queue", service="queue", labels={"app.kubernetes.io/name": "queue"}))
    return tuple(out)


def local_images() -> tuple[LocalImage, ...]:
    from sregym_core.types import LocalImage

    edge = LocalImage(image=NGINX_IMAGE, argv=(sys.executable, "-m", "sregym_app_astronomy_shop.edge"),
                      cmd=("-g", "daemon off;"), summary="Debian nginx with the pod's /etc/nginx/nginx.conf")
    return (*kit.service_images(IMAGE_REPO, __package__, "frontend", "Astronomy Shop services (argv[1] chooses the service)"),
            edge)


def deploy(ctx: DeployContext) -> None:
    """Apply the manifests rendered with the run's params (and the Ingress's TLS certificate, from the
    shop's CA in the load generator's hidden namespace); the conductor then waits for Ready."""
    kit.apply_manifests(ctx, render_yaml(ctx.params), WORKLOAD_NAMESPACE)


def app_spec() -> AppSpec:
    return kit.app_record(
        __name__, params=DEFAULT_PARAMS, deploy=deploy, deploy_timeout=240.0,
        summary="Astronomy Shop (OpenTelemetry demo topology): 15 services, nginx edge, flagd, Redis cache and broker",
        # a task is recorded by its deadline at the latest (+1 s for scheduling)
        workload=kit.workload_spec(WORKLOAD_NAMESPACE, "load-generator", max_request_s=WORKLOAD_TIMEOUT_S + 1.0))
