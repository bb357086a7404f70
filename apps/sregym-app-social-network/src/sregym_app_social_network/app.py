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

DESCRIPTION = f"""\
Social Network: a microservice social network (compose posts, read timelines), modelled on the
DeathStarBench Social Network benchmark. Everything runs in the Kubernetes namespace `{NAMESPACE}`.

Services (Deployments, one Service each, all from the image sregym/social-network; Apache Thrift,
binary protocol over framed transport, on port {THRIFT_PORT}):
- nginx-thrift (HTTP on port {NGINX_PORT}): nginx in front of the thrift-gateway container (port {GATEWAY_PORT}), which
  serves POST /wrk2-api/post/compose, GET /wrk2-api/home-timeline/read, GET /wrk2-api/user-timeline/read,
  POST /wrk2-api/user/login, /wrk2-api/user/follow, /wrk2-api/user/register by calling the services below.
- compose-post-service: builds a post by calling unique-id-service, user-service, text-service and
  media-service, then stores it (post-storage-service) and writes it to the author's timeline
  (user-timeline-service) and to the followers' home timelines (home-timeline-service).
- text-service: finds URLs and @mentions in a post; calls url-shorten-service and user-mention-service.
- user-mention-service (reads user-postgres, user-memcached), url-shorten-service (url-shorten-postgres,
  url-shorten-memcached), media-service, unique-id-service.
- user-service (user-postgres, user-memcached; calls social-graph-service on registration).
- social-graph-service (social-graph-postgres, social-graph-redis): followers and followees.
- post-storage-service (post-storage-postgres, post-storage-memcached).
- user-timeline-service (user-timeline-postgres, user-timeline-redis; reads posts from post-storage-service).
- home-timeline-service (home-timeline-redis; asks social-graph-service for followers, reads posts
  from post-storage-service).
- media-frontend (HTTP on port {MEDIA_FRONTEND_PORT}): POST /upload-media, GET /get-media (media-postgres, media-memcached).

Datastores: PostgreSQL StatefulSets holding document collections where the original uses MongoDB
(user-postgres, url-shorten-postgres, social-graph-postgres, post-storage-postgres,
user-timeline-postgres, media-postgres; port 5432; data on PVCs <name>-data; credentials in the
Secrets <database>-db), Redis Deployments (social-graph-redis, user-timeline-redis,
home-timeline-redis; port 6379) and memcached Deployments (user-memcached, url-shorten-memcached,
post-storage-memcached, media-memcached; port 11211). home-timeline-redis holds the only copy of the
home timelines, so it keeps them in an append-only file on the PVC home-timeline-redis-data (mounted
at /data); social-graph-redis and user-timeline-redis are caches refilled from PostgreSQL.

Configuration: each service reads /etc/social-network/service-config.json from the ConfigMap
<service>-config (its port, peer addresses, datastore addresses) and environment variables
(DB_USER/DB_PASSWORD from its database's Secret, RPC_TIMEOUT_MS, RPC_RETRIES, RPC_BACKOFF_MS).
Database owners (user-service, url-shorten-service, social-graph-service, post-storage-service,
user-timeline-service, media-frontend) run a `migrate` init container that creates the role, the
collections and the seed data (120 users and their social graph).

Observability: every service writes JSON logs to stdout (errors name the peer, its address and the
cause), serves Prometheus metrics at :{ADMIN_PORT}/metrics (sn_rpc_*, sn_http_*, sn_store_*, sn_cache_*),
health at :{ADMIN_PORT}/healthz and readiness at :{ADMIN_PORT}/readyz, and exports OpenTelemetry traces
(the trace context travels in every Thrift call's carrier argument).
"""


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
        description=DESCRIPTION,
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
