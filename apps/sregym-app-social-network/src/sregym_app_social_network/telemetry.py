"""Social Network's Prometheus metrics (``sn_*``) and its tracer.

Tracing itself (exporter, propagation) is sregym_appkit.tracing; the context crosses Thrift hops in
each call's ``carrier`` argument.
"""

from __future__ import annotations

from opentelemetry import trace
from prometheus_client import Counter, Gauge, Histogram
from sregym_appkit import tracing
from sregym_appkit.tracing import carrier, extract, shutdown_tracing

__all__ = ["carrier", "extract", "setup_tracing", "shutdown_tracing", "tracer"]

_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

RPC_SERVER_REQUESTS = Counter("sn_rpc_server_requests_total", "Thrift requests served", ["service", "method", "code"])
RPC_SERVER_LATENCY = Histogram("sn_rpc_server_latency_seconds", "Thrift handling time", ["service", "method"],
                               buckets=_BUCKETS)
RPC_SERVER_INFLIGHT = Gauge("sn_rpc_server_inflight", "Thrift requests being handled", ["service"])
RPC_CLIENT_REQUESTS = Counter("sn_rpc_client_requests_total", "Thrift calls to peers (one per attempt)",
                              ["service", "peer", "method", "code"])
RPC_CLIENT_ERRORS = Counter("sn_rpc_client_errors_total", "Thrift calls to peers that failed after retries",
                            ["service", "peer", "method", "code"])
RPC_CLIENT_RETRIES = Counter("sn_rpc_client_retries_total", "Thrift retries to peers", ["service", "peer", "method"])
RPC_CLIENT_LATENCY = Histogram("sn_rpc_client_latency_seconds", "Thrift call time including retries",
                               ["service", "peer", "method"], buckets=_BUCKETS)
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
