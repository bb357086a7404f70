"""Social Network's Prometheus metrics (``sn_*``) and its tracer.

Tracing itself (exporter, propagation) is sregym_appkit.tracing; the context crosses Thrift hops in
each call's ``carrier`` argument.
"""

from __future__ import annotations

from opentelemetry import trace
from prometheus_client import Counter, Gauge, Histogram
from sregym_appkit import tracing
from sregym_appkit.metrics import FINE_LATENCY_BUCKETS, rpc_client_metrics
from sregym_appkit.tracing import carrier, extract, shutdown_tracing

__all__ = ["carrier", "extract", "setup_tracing", "shutdown_tracing", "tracer"]

_BUCKETS = FINE_LATENCY_BUCKETS

RPC_SERVER_REQUESTS = Counter("sn_rpc_server_requests_total", "Thrift requests served", ["service", "method", "code"])
RPC_SERVER_LATENCY = Histogram("sn_rpc_server_latency_seconds", "Thrift handling time", ["service", "method"],
                               buckets=_BUCKETS)
RPC_SERVER_INFLIGHT = Gauge("sn_rpc_server_inflight", "Thrift requests being handled", ["service"])
_CLIENT = rpc_client_metrics("sn", "Thrift")
RPC_CLIENT_REQUESTS, RPC_CLIENT_ERRORS = _CLIENT.requests, _CLIENT.errors
RPC_CLIENT_RETRIES, RPC_CLIENT_LATENCY = _CLIENT.retries, _CLIENT.latency
HTTP_REQUESTS = Counter("sn_http_requests_total", "HTTP requests", ["service", "endpoint", "code"])
HTTP_LATENCY = Histogram("sn_http_latency_seconds", "HTTP latency", ["service", "endpoint"], buckets=_BUCKETS)
STORE_OPS = Counter("sn_store_operations_total", "datastore operations", ["service", "store", "status"])
STORE_LATENCY = Histogram("sn_store_latency_seconds", "datastore operation time", ["service", "store"],
                          buckets=_BUCKETS)
CACHE_REQUESTS = Counter("sn_cache_requests_total", "memcached lookups", ["service", "cache", "result"])
UP = Gauge("sn_service_info", "build information", ["service", "version"])


def setup_tracing(service: str) -> bool:
    """Traces over OTLP/HTTP when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set (see sregym_appkit.tracing)."""
    return tracing.setup_tracing(service, namespace="social-network")


def tracer() -> trace.Tracer:
    return trace.get_tracer(__package__)
