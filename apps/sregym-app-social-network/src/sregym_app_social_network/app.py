"""The AppSpec: component inventory, description for agents, manifests, images, workload."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .config import (ADMIN_PORT, DB_OWNERS, GATEWAY_PORT, MEDIA_FRONTEND_PORT, MEMCACHED, NGINX_PORT,
                     PERSISTENT_REDIS, REDIS, THRIFT_PORT, TOPOLOGY)
from .manifests import DEFAULT_PARAMS, manifest_files

NAME = "social-network"
NAMESPACE = "social-network"
WORKLOAD_NAMESPACE = "social-network-workload"
SERVICE_ENV = ("SN_CONFIG", "RPC_TIMEOUT_MS", "RPC_RETRIES", "RPC_BACKOFF_MS", "SERVER_WORKERS", "LOG_LEVEL",
               "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_SERVICE_NAME")

#: What the agent is told about the app (``/get_app`` ``descriptions``): what it is and does, in
#: one paragraph as upstream's are; no ports, knobs or metric names (those are for it to find).
DISPLAY_NAME = "Social Network"
DESCRIPTION = (
    "Social Network is a microservice social network, modelled on the DeathStarBench social network "
    "benchmark, where users register, follow one another, compose posts with text, mentions, links and media, "
    "and read their home and user timelines: an nginx front end calls Thrift services that store posts, "
    "users, the social graph and timelines in databases, caches and Redis."
)


def _knobs(service: str) -> tuple[str, ...]:
    """What app-specific faults can really turn on ``service`` (ComponentSpec.knobs)."""
    knobs = []
    if TOPOLOGY[service].peers:
        knobs.append("retry-policy")  # a Thrift client: RPC_TIMEOUT_MS/RPC_RETRIES/RPC_BACKOFF_MS (rpc.py)
    if service == "nginx-thrift":
        knobs.append("load-entrypoint")  # user requests enter here
        knobs.append("ingress")  # users arrive through the Ingress of the same name (manifests/55-ingress.yaml)
    return tuple(knobs)


def components() -> tuple[Any, ...]:
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
    for db in DB_OWNERS:
        name = f"{db}-postgres"
        out.append(ComponentSpec(name=name, kind="StatefulSet", roles=("db:postgres", "stateful"), ports=(5432,),
                                 pvcs=(f"{name}-data",), container="postgres",
                                 env=("POSTGRES_USER", "POSTGRES_PASSWORD", "POSTGRES_DB", "PGDATA"),
                                 service=name, labels={"app.kubernetes.io/name": name}))
    for r in REDIS:
        name = f"{r}-redis"
        persistent = r in PERSISTENT_REDIS  # the only copy of its data, on a PVC
        out.append(ComponentSpec(name=name, kind="Deployment",
                                 roles=("cache:redis", "stateful") if persistent else ("cache:redis",), ports=(6379,),
                                 pvcs=(f"{name}-data",) if persistent else (), container="redis", service=name,
                                 labels={"app.kubernetes.io/name": name}))
    for m in MEMCACHED:
        name = f"{m}-memcached"
        out.append(ComponentSpec(name=name, kind="Deployment", roles=("cache:memcached",), ports=(11211,),
                                 container="memcached", service=name, labels={"app.kubernetes.io/name": name}))
    return tuple(out)


def problems_dir() -> Path:
    return Path(__file__).parent / "problems"


def app_spec() -> Any:
    from sregym_core.types import AppSpec, WorkloadSpec

    from .deploy import deploy_app
    from .images import local_images

    return AppSpec(
        name=NAME,
        summary="Social Network (DeathStarBench topology): nginx + 12 Thrift/HTTP services, 6 PostgreSQL, "
                "3 Redis, 4 memcached",
        namespace=NAMESPACE,
        description=DESCRIPTION, display_name=DISPLAY_NAME,
        manifests=manifest_files(),
        components=components(),
        workload=WorkloadSpec(name="workload-generator", namespace=WORKLOAD_NAMESPACE, service="workload-generator",
                              port=8089, query_path="/stats", control_path="/control"),
        images=local_images(),
        hidden_namespaces=(WORKLOAD_NAMESPACE,),
        problems_dir=problems_dir(),
        params=dict(DEFAULT_PARAMS),
        deploy=deploy_app,
        deploy_timeout=180.0,
    )
