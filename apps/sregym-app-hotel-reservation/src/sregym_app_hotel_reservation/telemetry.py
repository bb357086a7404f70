"""Hotel Reservation's Prometheus metrics (``hotel_*``) and its tracer.

Tracing itself (exporter, propagation) is sregym_appkit.tracing; the context crosses gRPC hops as
W3C ``traceparent`` metadata.
"""

from __future__ import annotations

from opentelemetry import trace
from prometheus_client import Counter, Gauge, Histogram
from sregym_appkit import tracing
from sregym_appkit.metrics import FINE_LATENCY_BUCKETS, rpc_client_metrics
from sregym_appkit.tracing import carrier, extract, shutdown_tracing

__all__ = ["carrier", "extract", "setup_tracing", "shutdown_tracing", "tracer"]

_BUCKETS = FINE_LATENCY_BUCKETS

RPC_SERVER_REQUESTS = Counter("hotel_rpc_server_requests_total", "gRPC requests served",
                              ["service", "method", "code"])
RPC_SERVER_LATENCY = Histogram("hotel_rpc_server_latency_seconds", "gRPC server handling time",
                               ["service", "method"], buckets=_BUCKETS)
RPC_SERVER_REJECTED = Counter("hotel_rpc_server_rejected_total",
                              "gRPC requests rejected by admission control", ["service", "reason"])
RPC_SERVER_INFLIGHT = Gauge("hotel_rpc_server_inflight", "gRPC requests being handled", ["service"])
_CLIENT = rpc_client_metrics("hotel", "gRPC")
RPC_CLIENT_REQUESTS, RPC_CLIENT_ERRORS = _CLIENT.requests, _CLIENT.errors
RPC_CLIENT_RETRIES, RPC_CLIENT_LATENCY = _CLIENT.retries, _CLIENT.latency
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


def setup_tracing(service: str) -> bool:
    """Traces over OTLP/HTTP when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set (see sregym_appkit.tracing)."""
    return tracing.setup_tracing(service, namespace="hotel-reservation")


def tracer() -> trace.Tracer:
    return trace.get_tracer(__package__)
