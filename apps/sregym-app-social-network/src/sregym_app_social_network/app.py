"""The AppSpec: component inventory, description for agents, manifests, images, workload."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sregym_appkit import appspec as kit

from .config import (
    ADMIN_PORT,
    DB_OWNERS,
    GATEWAY_PORT,
    MEDIA_FRONTEND_PORT,
    MEMCACHED,
    NGINX_PORT,
    PERSISTENT_REDIS,
    REDIS,
    THRIFT_PORT,
    TOPOLOGY,
)
from .images import local_images as local_images  # read by sregym_appkit.appspec.app_record
from .manifests import DEFAULT_PARAMS, render_yaml  # noqa: F401 - render_yaml: kit.app_record makes it AppSpec.render

if TYPE_CHECKING:
    from sregym_core.types import AppSpec, ComponentSpec

NAME = "social-network"
NAMESPACE = "social-network"
WORKLOAD_NAMESPACE = "social-network-workload"
SERVICE_ENV = ("SN_CONFIG", "RPC_TIMEOUT_MS", "RPC_RETRIES", "RPC_BACKOFF_MS", "SERVER_WORKERS", "LOG_LEVEL",
               "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_SERVICE_NAME")

DISPLAY_NAME = "Social Network"


def _knobs(service: str) -> tuple[str, ...]:
    """What app-specific faults can really turn on ``service`` (ComponentSpec.knobs)."""
    return kit.knobs(
        # a Thrift client: RPC_TIMEOUT_MS/RPC_RETRIES/RPC_BACKOFF_MS (rpc.py)
        ("retry-policy", bool(TOPOLOGY[service].peers)),
        ("load-entrypoint", service == "nginx-thrift"),  # user requests enter here
        ("ingress", service == "nginx-thrift"))  # users arrive through the Ingress of the same name


def components() -> tuple[ComponentSpec, ...]:
    from sregym_core.types import ComponentSpec

    out = []
    for s, topo in TOPOLOGY.items():
        env = SERVICE_ENV + (("DB_USER", "DB_PASSWORD") if topo.postgres else ())
        if s == "nginx-thrift":
            roles: tuple[str, ...] = ("frontend", "service:http")
            ports: tuple[int, ...] = (NGINX_PORT, GATEWAY_PORT, ADMIN_PORT)
            container = "thrift-gateway"
        elif s == "media-frontend":
            roles, ports, container = ("service:http",), (MEDIA_FRONTEND_PORT, ADMIN_PORT), s
        else:
            roles, ports, container = ("service:thrift",), (THRIFT_PORT, ADMIN_PORT), s
        out.append(ComponentSpec(name=s, kind="Deployment", roles=roles, ports=ports, container=container,
                                 config_map=f"{s}-config", env=env, service=s,
                                 labels={"app.kubernetes.io/name": s}, knobs=_knobs(s)))
    out += [kit.postgres_component(f"{db}-postgres") for db in DB_OWNERS]
    for r in REDIS:
        name = f"{r}-redis"
        persistent = r in PERSISTENT_REDIS  # the only copy of its data, on a PVC
        out.append(ComponentSpec(name=name, kind="Deployment",
                                 roles=("cache:redis", "stateful") if persistent else ("cache:redis",), ports=(6379,),
                                 pvcs=(f"{name}-data",) if persistent else (), container="redis", service=name,
                                 labels={"app.kubernetes.io/name": name}))
    out += [kit.memcached_component(f"{m}-memcached") for m in MEMCACHED]
    return tuple(out)


def app_spec() -> AppSpec:
    from .deploy import deploy_app

    return kit.app_record(
        __name__, params=DEFAULT_PARAMS, deploy=deploy_app, deploy_timeout=180.0,
        summary=("Social Network (DeathStarBench topology): nginx + 12 Thrift/HTTP services, 6 PostgreSQL, "
                 "3 Redis, 4 memcached"),
        workload=kit.workload_spec(WORKLOAD_NAMESPACE, "workload-generator"))
