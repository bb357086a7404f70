"""The AppSpec: component inventory, description for agents, manifests, images, workload."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sregym_appkit import appspec as kit

from .config import CACHED_SERVICES, DATA_SERVICES, DEFAULT_PORTS, PEERS, SERVICES
from .images import local_images as local_images  # read by sregym_appkit.appspec.app_record
from .manifests import DEFAULT_PARAMS, render_yaml  # noqa: F401 - render_yaml: kit.app_record makes it AppSpec.render

if TYPE_CHECKING:
    from sregym_core.types import AppSpec, ComponentSpec

NAME = "hotel-reservation"
NAMESPACE = "hotel-reservation"
WORKLOAD_NAMESPACE = "hotel-workload"
ADMIN_PORT = 9090
SERVICE_ENV = ("HOTEL_CONFIG", "RPC_TIMEOUT_MS", "RPC_RETRIES", "RPC_BACKOFF_MS", "RPC_BACKOFF_MAX_MS",
               "BACKEND_RATE_LIMIT", "QUEUE_DEPTH", "SERVER_WORKERS", "LOG_LEVEL", "OTEL_EXPORTER_OTLP_ENDPOINT",
               "OTEL_SERVICE_NAME")

DISPLAY_NAME = "Hotel Reservation"


def _knobs(service: str) -> tuple[str, ...]:
    """What app-specific faults can really turn on ``service`` (ComponentSpec.knobs)."""
    return kit.knobs(
        ("retry-policy", bool(PEERS[service])),  # an RPC client: RPC_TIMEOUT_MS/RPC_RETRIES/RPC_BACKOFF_MS (rpc.py)
        ("rate-limit", service != "frontend"),  # a gRPC server: BACKEND_RATE_LIMIT token bucket, QUEUE_DEPTH admission
        ("feature-flags", service == "recommendation"),  # FEATURE_RECOMMEND_V2 turns on the dormant value-score defect
        ("buggy-image", service == "reservation"),  # the published 1.0-buggy build breaks month-end stays here only
        ("load-entrypoint", service == "frontend"),  # user requests enter here; load-burst's default path is a search
        ("ingress", service == "frontend"))  # users arrive through the Ingress of the same name (manifests/55-ingress.yaml)


def components() -> tuple[ComponentSpec, ...]:
    from sregym_core.types import ComponentSpec

    out = []
    for s in SERVICES:
        roles: tuple[str, ...] = ("frontend", "service:http") if s == "frontend" else ("service:grpc",)
        env: tuple[str, ...] = SERVICE_ENV
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
    out += [kit.postgres_component(f"postgres-{s}") for s in DATA_SERVICES]
    out += [kit.memcached_component(f"memcached-{s}") for s in CACHED_SERVICES]
    return tuple(out)


def app_spec() -> AppSpec:
    from .deploy import deploy_app

    return kit.app_record(
        __name__, params=DEFAULT_PARAMS, deploy=deploy_app, deploy_timeout=180.0,
        summary="Hotel Reservation (DeathStarBench topology): 8 gRPC/HTTP services, 6 PostgreSQL, 3 memcached",
        workload=kit.workload_spec(WORKLOAD_NAMESPACE, "workload-generator"))
