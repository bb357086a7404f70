"""The AppSpec: component inventory, description for agents, manifests, images, workload."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .config import CACHED_SERVICES, DATA_SERVICES, DEFAULT_PORTS, PEERS, SERVICES
from .manifests import DEFAULT_PARAMS, manifest_files

NAME = "hotel-reservation"
NAMESPACE = "hotel-reservation"
WORKLOAD_NAMESPACE = "hotel-workload"
ADMIN_PORT = 9090
SERVICE_ENV = ("HOTEL_CONFIG", "RPC_TIMEOUT_MS", "RPC_RETRIES", "RPC_BACKOFF_MS", "RPC_BACKOFF_MAX_MS",
               "BACKEND_RATE_LIMIT", "QUEUE_DEPTH", "SERVER_WORKERS", "LOG_LEVEL", "OTEL_EXPORTER_OTLP_ENDPOINT",
               "OTEL_SERVICE_NAME")

DESCRIPTION = f"""\
Hotel Reservation: a microservice application for searching, recommending and booking hotels,
modelled on the DeathStarBench Hotel Reservation benchmark. Everything runs in the Kubernetes
namespace `{NAMESPACE}`.

Services (Deployments, one Service each, all from the image sregym/hotel-reservation):
- frontend (HTTP on port 5000): GET /hotels, GET /recommendations, GET /user, POST /reservation.
- search (gRPC 8082): finds nearby hotels with rates; calls geo and rate.
- geo (gRPC 8083), rate (8084), profile (8081), recommendation (8085), user (8086),
  reservation (8087): gRPC services, each owning its data.
The frontend calls search, reservation (availability), profile, recommendation and user over gRPC.

Datastores: one PostgreSQL StatefulSet per data-owning service (postgres-geo, postgres-rate,
postgres-profile, postgres-recommendation, postgres-user, postgres-reservation; port 5432; data on
PersistentVolumeClaims postgres-<service>-data), and memcached Deployments in front of profile, rate
and reservation (memcached-profile, memcached-rate, memcached-reservation; port 11211).

Configuration: each service reads /etc/hotel/config.yaml from the ConfigMap <service>-config
(listen port, peer addresses, datastore addresses) and environment variables (database credentials
from the Secret <service>-db; RPC_TIMEOUT_MS, RPC_RETRIES, RPC_BACKOFF_MS, BACKEND_RATE_LIMIT,
QUEUE_DEPTH, DB_POOL_MAX, CACHE_* and feature flags such as FEATURE_RECOMMEND_V2; frontend and search
also get their peers' addresses as <PEER>_ADDR, which override the file). Data services run
a `migrate` init container that creates their database role, schema and seed data once.

Observability: every service writes JSON logs to stdout (errors name the peer, address and cause),
serves Prometheus metrics at :9090/metrics (hotel_rpc_*, hotel_http_*, hotel_db_*, hotel_cache_*),
health at :9090/healthz and readiness at :9090/readyz, and exports OpenTelemetry traces.
"""


def _knobs(service: str) -> tuple[str, ...]:
    """What app-specific faults can really turn on ``service`` (ComponentSpec.knobs)."""
    knobs = []
    if PEERS[service]:
        knobs.append("retry-policy")  # an RPC client: RPC_TIMEOUT_MS/RPC_RETRIES/RPC_BACKOFF_MS (rpc.py)
    if service != "frontend":
        knobs.append("rate-limit")  # a gRPC server: BACKEND_RATE_LIMIT token bucket, QUEUE_DEPTH admission
    if service == "recommendation":
        knobs.append("feature-flags")  # FEATURE_RECOMMEND_V2 turns on the dormant value-score defect
    if service == "reservation":
        knobs.append("buggy-image")  # the published 1.0-buggy build breaks month-end stays here only
    if service == "frontend":
        knobs.append("load-entrypoint")  # user requests enter here; load-burst's default path is a search
        knobs.append("ingress")  # users arrive through the Ingress of the same name (manifests/55-ingress.yaml)
    return tuple(knobs)


def components() -> tuple[Any, ...]:
    from sregym_core.types import ComponentSpec

    out = []
    for s in SERVICES:
        roles: tuple[str, ...] = ("frontend", "service:http") if s == "frontend" else ("service:grpc",)
        env = SERVICE_ENV
        if s in DATA_SERVICES:
            env += ("DB_USER", "DB_PASSWORD", "DB_POOL_MAX", "DB_POOL_TIMEOUT_MS")
        if s in CACHED_SERVICES:
            env += ("CACHE_ENABLED", "CACHE_TTL_S")
        if s == "recommendation":
            env += ("FEATURE_RECOMMEND_V2",)
        # peer addresses also come as <PEER>_ADDR env vars (they override the config file's peers)
        env += tuple(f"{peer.upper()}_ADDR" for peer in PEERS[s])
        out.append(ComponentSpec(name=s, kind="Deployment", roles=roles, ports=(DEFAULT_PORTS[s], ADMIN_PORT),
                                 container=s, config_map=f"{s}-config", env=env, service=s,
                                 labels={"app.kubernetes.io/name": s}, knobs=_knobs(s)))
    for s in DATA_SERVICES:
        name = f"postgres-{s}"
        out.append(ComponentSpec(name=name, kind="StatefulSet", roles=("db:postgres", "stateful"), ports=(5432,),
                                 pvcs=(f"{name}-data",), container="postgres",
                                 env=("POSTGRES_USER", "POSTGRES_PASSWORD", "POSTGRES_DB", "PGDATA"),
                                 service=name, labels={"app.kubernetes.io/name": name}))
    for s in CACHED_SERVICES:
        name = f"memcached-{s}"
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
        summary="Hotel Reservation (DeathStarBench topology): 8 gRPC/HTTP services, 6 PostgreSQL, 3 memcached",
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
