"""OpenTelemetry tracing for a service: real only when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set.

Then the SDK and the OTLP/HTTP exporter are imported (lazily: they cost memory in every pod) and
spans are batched to ``<endpoint>/v1/traces``; otherwise the API's no-op tracer is used. The trace
context crosses hops as W3C ``traceparent``: :func:`carrier` gives it as a dict for gRPC metadata,
HTTP headers, a Thrift call's carrier argument or a queue message's fields; :func:`extract` reads
it back from any of those.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry import propagate, trace

from . import logs

_provider: Any = None


def setup_tracing(service: str, namespace: str, *, export_delay_ms: int | None = None) -> bool:
    """Install the OTLP/HTTP exporter when an endpoint is configured; return whether tracing is on.

    ``service`` becomes ``service.name`` (``OTEL_SERVICE_NAME`` wins) and ``namespace`` the app's
    ``service.namespace``; ``export_delay_ms`` overrides the batch processor's export interval (the
    SDK's default is 5 s).
    """
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
                                "service.namespace": namespace})
    provider = TracerProvider(resource=resource)
    # The exporter itself reads OTEL_EXPORTER_OTLP_* and appends /v1/traces to the base endpoint.
    exporter = OTLPSpanExporter()
    provider.add_span_processor(BatchSpanProcessor(exporter) if export_delay_ms is None
                                else BatchSpanProcessor(exporter, schedule_delay_millis=export_delay_ms))
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


def carrier() -> dict[str, str]:
    """The current trace context as a dict (``traceparent``, and ``tracestate`` when set)."""
    out: dict[str, str] = {}
    propagate.inject(out)
    return out


def extract(headers: Iterable[tuple[str, Any]] | Mapping[str, Any] | None) -> Any:
    """A context from incoming gRPC metadata, HTTP headers or a carrier dict (keys in any case)."""
    if headers is None:
        return propagate.extract({})
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    return propagate.extract({str(k).lower(): v for k, v in pairs if isinstance(v, str)})
