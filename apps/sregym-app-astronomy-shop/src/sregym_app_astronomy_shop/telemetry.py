"""Astronomy Shop's Prometheus metrics (``shop_*``) and its tracer.

Tracing itself (exporter, propagation) is sregym_appkit.tracing. The context crosses gRPC hops as
``traceparent`` metadata, HTTP hops as headers and the order queue as a field of each message, so
one trace runs from the edge proxy through checkout into the queue consumers.
"""

from __future__ import annotations

from opentelemetry import trace
from prometheus_client import Counter, Gauge, Histogram
from sregym_appkit import tracing
from sregym_appkit.tracing import carrier, extract, shutdown_tracing

__all__ = ["carrier", "extract", "setup_tracing", "shutdown_tracing", "tracer"]

_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

RPC_SERVER = Counter("shop_rpc_server_requests_total", "requests served", ["service", "method", "code"])
RPC_SERVER_LATENCY = Histogram("shop_rpc_server_latency_seconds", "request handling time", ["service", "method"],
                               buckets=_BUCKETS)
RPC_CLIENT = Counter("shop_rpc_client_requests_total", "calls to peers", ["service", "peer", "method", "code"])
RPC_CLIENT_LATENCY = Histogram("shop_rpc_client_latency_seconds", "call time to peers", ["service", "peer", "method"],
                               buckets=_BUCKETS)
FLAG_EVALUATIONS = Counter("shop_feature_flag_evaluations_total", "feature flag evaluations",
                           ["service", "flag", "variant"])
QUEUE_PUBLISHED = Counter("shop_queue_messages_published_total", "messages published", ["service", "stream"])
QUEUE_CONSUMED = Counter("shop_queue_messages_consumed_total", "messages consumed", ["service", "stream", "outcome"])
QUEUE_LAG = Gauge("shop_queue_consumer_lag", "messages in the stream not yet delivered to this consumer group",
                  ["service", "stream", "group"])
QUEUE_PENDING = Gauge("shop_queue_consumer_pending", "messages delivered but not acknowledged",
                      ["service", "stream", "group"])
CACHE_KEYS = Gauge("shop_cache_entries", "entries in an in-process cache", ["service", "cache"])
INFO = Gauge("shop_service_info", "build information", ["service", "version"])


def setup_tracing(service: str) -> bool:
    """Traces over OTLP/HTTP when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set (see sregym_appkit.tracing)."""
    return tracing.setup_tracing(service, namespace="astronomy-shop")


def tracer() -> trace.Tracer:
    return trace.get_tracer(__package__)
