"""The app's Prometheus metrics (prefix ``myapp_``) and its tracer.

Tracing itself (the OTLP exporter, W3C propagation) is ``sregym_appkit.tracing``: spans leave only
when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set (the manifests' ``otlp_endpoint`` parameter).
"""

from __future__ import annotations

from opentelemetry import trace
from prometheus_client import Counter, Gauge, Histogram
from sregym_appkit import tracing
from sregym_appkit.metrics import FINE_LATENCY_BUCKETS

from .topology import NAMESPACE

HTTP_REQUESTS = Counter("myapp_http_requests_total", "HTTP requests served", ["service", "route", "code"])
HTTP_LATENCY = Histogram("myapp_http_latency_seconds", "HTTP handling time", ["service", "route"],
                         buckets=FINE_LATENCY_BUCKETS)
PEER_CALLS = Counter("myapp_peer_calls_total", "calls to another service", ["service", "peer", "code"])
DB_QUERIES = Counter("myapp_db_queries_total", "database queries", ["service", "outcome"])
INFO = Gauge("myapp_service_info", "build information", ["service", "version"])


def setup_tracing(service: str) -> bool:
    return tracing.setup_tracing(service, NAMESPACE)


def tracer() -> trace.Tracer:
    return trace.get_tracer(__package__)
