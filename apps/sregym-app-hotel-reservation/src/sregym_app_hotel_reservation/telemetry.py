"""Prometheus metrics and OpenTelemetry tracing shared by every service.

Tracing is real only when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set: then the SDK and the OTLP/HTTP
exporter are imported and spans are batched to ``<endpoint>/v1/traces``. Otherwise the OpenTelemetry
API's no-op tracer is used and the SDK is never imported (it costs memory in every pod).
Context crosses gRPC hops as W3C ``traceparent`` metadata.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry import propagate, trace
from prometheus_client import Counter, Gauge, Histogram

from . import logs

_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

RPC_SERVER_REQUESTS = Counter("hotel_rpc_server_requests_total", "gRPC requests served",
                              ["service", "method", "code"])
RPC_SERVER_LATENCY = Histogram("hotel_rpc_server_latency_seconds", "gRPC server handling time",
                               ["service", "method"], buckets=_BUCKETS)
RPC_SERVER_REJECTED = Counter("hotel_rpc_server_rejected_total",
                              "gRPC requests rejected by admission control", ["service", "reason"])
RPC_SERVER_INFLIGHT = Gauge("hotel_rpc_server_inflight", "gRPC requests being handled", ["service"])
RPC_CLIENT_REQUESTS = Counter("hotel_rpc_client_requests_total", "gRPC calls to peers (one per attempt)",
                              ["service", "peer", "method", "code"])
RPC_CLIENT_ERRORS = Counter("hotel_rpc_client_errors_total", "gRPC calls to peers that failed after retries",
                            ["service", "peer", "method", "code"])
RPC_CLIENT_RETRIES = Counter("hotel_rpc_client_retries_total", "gRPC retries to peers", ["service", "peer", "method"])
RPC_CLIENT_LATENCY = Histogram("hotel_rpc_client_latency_seconds", "gRPC call time including retries",
                               ["service", "peer", "method"], buckets=_BUCKETS)
HTTP_REQUESTS = Counter("hotel_http_requests_total", "frontend HTTP requests", ["service", "endpoint", "code"])
HTTP_LATENCY = Histogram("hotel_http_latency_seconds", "frontend HTTP latency", ["service", "endpoint"],
                         buckets=_BUCKETS)
DB_QUERIES = Counter("hotel_db_queries_total", "database queries", ["service", "db", "status"])
DB_ERRORS = Counter("hotel_db_errors_total", "database errors by kind", ["service", "db", "kind"])
DB_LATENCY = Histogram("hotel_db_query_latency_seconds", "database query time", ["service", "db"], buckets=_BUCKETS)
DB_POOL_SIZE = Gauge("hotel_db_pool_connections", "connections held by the pool", ["service", "db"])
DB_POOL_AVAILABLE = Gauge("hotel_db_pool_available", "idle connections in the pool", ["service", "db"])
DB_POOL_WAITING = Gauge("hotel_db_pool_waiting", "requests waiting for a connection", ["service", "db"])
DB_POOL_MAX = Gauge("hotel_db_pool_max", "configured pool maximum", ["service", "db"])
CACHE_REQUESTS = Counter("hotel_cache_requests_total", "memcached lookups", ["service", "cache", "result"])
CACHE_ERRORS = Counter("hotel_cache_errors_total", "memcached errors", ["service", "cache", "op"])
UP = Gauge("hotel_service_info", "build information", ["service", "version", "variant"])

_provider: Any = None


def setup_tracing(service: str) -> bool:
    """Install the OTLP/HTTP exporter when an endpoint is configured; return whether tracing is on."""
    global _provider
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    if not endpoint or os.environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        logs.info("tracing_disabled", reason="OTEL_EXPORTER_OTLP_ENDPOINT is not set")
        return False
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", service),
                                "service.namespace": "hotel-reservation"})
    provider = TracerProvider(resource=resource)
    # The exporter itself reads OTEL_EXPORTER_OTLP_* and appends /v1/traces to the base endpoint.
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    _provider = provider
    logs.info("tracing_enabled", endpoint=endpoint)
    return True


def shutdown_tracing() -> None:
    """Flush and stop the exporter (graceful shutdown)."""
    if _provider is not None:
        try:
            _provider.shutdown()
        except Exception as exc:  # noqa: BLE001 - shutdown must not fail the exit path
            logs.warning("tracing_shutdown_failed", error=str(exc))


def tracer() -> trace.Tracer:
    return trace.get_tracer("sregym_app_hotel_reservation")


def inject_metadata() -> list[tuple[str, str]]:
    """The current trace context as gRPC metadata."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return list(carrier.items())


def extract_context(metadata: Iterable[tuple[str, Any]] | Mapping[str, str] | None) -> Any:
    """A context extracted from incoming gRPC metadata or HTTP headers."""
    if metadata is None:
        return propagate.extract({})
    if isinstance(metadata, Mapping):
        return propagate.extract(dict(metadata))
    return propagate.extract({k: v for k, v in metadata if isinstance(v, str)})
