"""The agents' tools against this package's log and trace servers over real HTTP."""

from __future__ import annotations

import time

import httpx
import pytest
from obs_helpers import free_port
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode
from sregym_observability import tools
from sregym_observability.tools import Endpoints

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def stack(module_server_factory):
    logs = module_server_factory("logs", "--no-collector")
    traces = module_server_factory("traces")
    now = time.time_ns()
    streams = [
        {"stream": {"namespace": "hotel", "app": "geo", "pod": "geo-5d8-abc", "container": "geo"},
         "values": [[str(now - 5_000_000_000 + i), f'{{"level":"info","event":"served","n":{i}}}'] for i in range(3)]
         + [[str(now - 1_000_000_000), '{"level":"error","event":"db_failed","error":"connection refused",'
                                       '"addr":"mongodb-geo:27017"}']]},
        {"stream": {"namespace": "hotel", "app": "frontend", "pod": "frontend-1", "container": "frontend"},
         "values": [[str(now - 2_000_000_000), "GET /hotels 200"]]},
    ]
    assert httpx.post(logs.url + "/loki/api/v1/push", json={"streams": streams}).status_code == 204
    tracers, providers = {}, []
    for service in ("frontend", "search", "geo"):
        provider = TracerProvider(resource=Resource.create({"service.name": service}))
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=traces.url + "/v1/traces")))
        providers.append(provider)
        tracers[service] = provider.get_tracer("t")
    for i in range(4):
        with tracers["frontend"].start_as_current_span("GET /hotels", kind=SpanKind.SERVER):
            with tracers["search"].start_as_current_span("Nearby", kind=SpanKind.SERVER):
                with tracers["geo"].start_as_current_span("geo.Nearby", kind=SpanKind.SERVER) as span:
                    if i % 2:
                        span.set_status(Status(StatusCode.ERROR, "mongodb-geo: connection refused"))
    for provider in providers:
        provider.shutdown()
    return Endpoints(loki_url=logs.url, jaeger_url=traces.url, prometheus_url=None)


def test_get_logs_by_service_name_and_logql(stack: Endpoints) -> None:
    text = tools.get_logs(stack, "geo", 10)
    assert "4 lines" in text and "1 look like errors" in text
    assert "hotel/geo-5d8-abc" in text and "connection refused" in text
    assert text.index('"n":0') < text.index("db_failed")  # oldest first
    only_errors = tools.get_logs(stack, '{namespace="hotel"} |= "error"', 10)
    assert "db_failed" in only_errors and "GET /hotels" not in only_errors
    assert "db_failed" in tools.get_logs(stack, "geo db_failed", 10)
    assert "No log lines" in tools.get_logs(stack, "payments", 10)


def test_get_labels_and_label_values(stack: Endpoints) -> None:
    labels = tools.get_labels(stack)
    assert labels.startswith("Available labels:\n") and "  - app" in labels.splitlines()
    values = tools.get_label_values(stack, "app")
    assert values.splitlines()[1:] == ["  - frontend", "  - geo"]
    assert "get_labels lists" in tools.get_label_values(stack, "no such label")
    assert "Give a label name" in tools.get_label_values(stack, "app} |= x")


def test_get_logs_explains_bad_queries(stack: Endpoints) -> None:
    text = tools.get_logs(stack, '{app="geo"', 10)
    assert "rejected the request (HTTP 400)" in text and "parse error" in text
    assert "neither a LogQL query" in tools.get_logs(stack, "geo|bad name", 10)
    assert "whole numbers" in tools.get_logs(stack, "geo", "ten")  # type: ignore[arg-type]


def test_trace_tools_find_the_failing_service(stack: Endpoints) -> None:
    assert tools.get_services(stack) == "3 services with traces: frontend, geo, search"
    assert tools.get_operations(stack, "geo") == "1 operations of geo:\ngeo.Nearby"
    summary = tools.get_traces(stack, "frontend", 10)
    assert summary.startswith("4 traces through frontend") and "(2 with errors" in summary
    error_section = summary.split("Error spans")[1].split("Slowest spans")[0]
    assert "geo / geo.Nearby / otel.status_description=mongodb-geo: connection refused: 2x" in error_section
    per_op = summary.split("Per operation")[1]
    assert per_op.splitlines()[1].strip().startswith("geo / geo.Nearby: 4, 2 errors")
    graph = tools.get_dependency_graph(stack, 10)
    assert "frontend -> search: 4" in graph and "search -> geo: 4" in graph
    assert "No traces through 'nope'" in tools.get_traces(stack, "nope", 10)


def test_answers_are_bounded(stack: Endpoints, module_server_factory) -> None:
    logs = module_server_factory("logs", "--no-collector")
    now = time.time_ns()
    values = [[str(now - 10**9 + i), f"line {i} " + "x" * 100] for i in range(3000)]
    httpx.post(logs.url + "/loki/api/v1/push", json={"streams": [{"stream": {"app": "chatty"}, "values": values}]})
    small = Endpoints(loki_url=logs.url, max_chars=2000)
    text = tools.get_logs(small, "chatty", 5, limit=1000)
    assert len(text) <= 2000 and "truncated" in text
    assert "line 2999 " in text  # the newest lines are kept


def test_unreachable_and_unconfigured_endpoints_are_explained() -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    nowhere = Endpoints(prometheus_url=dead, loki_url=dead, jaeger_url=dead, timeout_s=2)
    assert tools.get_metrics(nowhere, "up").startswith(f"Prometheus is not reachable at {dead}")
    assert "not reachable" in tools.get_alerts(nowhere)
    assert "The log store (Loki API) is not reachable" in tools.get_logs(nowhere, "geo")
    assert "not reachable" in tools.get_traces(nowhere, "geo")
    assert "not reachable" in tools.get_dependency_graph(nowhere)
    assert tools.get_services(Endpoints()) == ("The trace store (Jaeger API) is not configured for this "
                                               "environment (no URL was given).")
