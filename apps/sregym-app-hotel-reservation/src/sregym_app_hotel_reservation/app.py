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

#: What the agent is told about the app (``/get_app`` ``descriptions``): what it is and does, in
#: one paragraph as upstream's are; no ports, knobs or metric names (those are for it to find).
DISPLAY_NAME = "Hotel Reservation"
DESCRIPTION = (
    "Hotel Reservation is a microservice application, modelled on the DeathStarBench hotel reservation "
    "benchmark, where users search for hotels near a location, get recommendations, log in and book rooms: a "
    "web frontend calls gRPC services for search, geography, rates, hotel profiles, recommendations, users "
    "and reservations, each keeping its own data in a database, with caches in front of the busiest ones."
)


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
