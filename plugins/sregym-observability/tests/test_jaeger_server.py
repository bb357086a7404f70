"""The trace store over real HTTP: the OTel SDK's OTLP/HTTP exporter in, the Jaeger API out."""

from __future__ import annotations

import json
import time

import httpx
import psutil
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode

pytestmark = pytest.mark.slow


def _emit(url: str, count: int, *, fail_every: int = 0) -> None:
    tracers = {}
    providers = []
    for service in ("frontend", "reservation"):
        provider = TracerProvider(resource=Resource.create({"service.name": service}))
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=url + "/v1/traces")))
        providers.append(provider)
        tracers[service] = provider.get_tracer("test")
    for i in range(count):
        with tracers["frontend"].start_as_current_span("POST /reservation", kind=SpanKind.SERVER):
            with tracers["reservation"].start_as_current_span("MakeReservation", kind=SpanKind.SERVER) as span:
                if fail_every and i % fail_every == 0:
                    span.set_status(Status(StatusCode.ERROR, "date out of range"))
    for provider in providers:
        provider.shutdown()


def test_sdk_exporter_to_jaeger_queries(start_component) -> None:
    server = start_component("traces")
    _emit(server.url, 6, fail_every=3)
    assert httpx.get(server.url + "/api/services").json() == {
        "data": ["frontend", "reservation"], "total": 2, "limit": 0, "offset": 0, "errors": None}
    ops = httpx.get(server.url + "/api/services/reservation/operations").json()
    assert ops["data"] == ["MakeReservation"]
    kinds = httpx.get(server.url + "/api/operations", params={"service": "frontend"}).json()
    assert kinds["data"] == [{"name": "POST /reservation", "spanKind": "server"}]

    body = httpx.get(server.url + "/api/traces", params={
        "service": "reservation", "tags": json.dumps({"error": "true"}), "lookback": "1h", "limit": "10"}).json()
    assert body["errors"] is None and len(body["data"]) == 2
    trace = body["data"][0]
    assert {p["serviceName"] for p in trace["processes"].values()} == {"frontend", "reservation"}
    trace_id = trace["traceID"]
    one = httpx.get(server.url + f"/api/traces/{trace_id}").json()
    assert one["data"][0]["traceID"] == trace_id and len(one["data"][0]["spans"]) == 2

    end_ms = int(time.time() * 1000) + 1000
    deps = httpx.get(server.url + "/api/dependencies", params={"endTs": str(end_ms), "lookback": "3600000"}).json()
    assert deps["data"] == [{"parent": "frontend", "child": "reservation", "callCount": 6}]

    # JSON encoding is accepted too.
    payload = {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "geo"}}]},
                                  "scopeSpans": [{"spans": [{"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "Nearby",
                                                             "startTimeUnixNano": str(time.time_ns() - 10**6),
                                                             "endTimeUnixNano": str(time.time_ns())}]}]}]}
    reply = httpx.post(server.url + "/v1/traces", json=payload)
    assert reply.status_code == 200 and reply.json() == {}
    assert "geo" in httpx.get(server.url + "/api/services").json()["data"]

    assert httpx.post(server.url + "/admin/clear").json() == {"cleared": True}
    assert httpx.get(server.url + "/api/services").json()["data"] == []
    assert httpx.get(server.url + f"/api/traces/{trace_id}").status_code == 404


@pytest.mark.parametrize(("method", "path", "kwargs", "status", "fragment"), [
    ("GET", "/api/traces", {}, 400, "parameter 'service' is required"),
    ("GET", "/api/traces", {"params": {"service": "x", "minDuration": "soon"}}, 400, "minDuration"),
    ("GET", "/api/traces/not-hex!", {}, 400, "malformed trace ID"),
    ("GET", "/api/traces/" + "0" * 31 + "1", {}, 404, "trace not found"),
    ("GET", "/api/dependencies", {"params": {"endTs": "yesterday"}}, 400, "endTs"),
    ("POST", "/v1/traces", {"content": b"\xff\xff", "headers": {"Content-Type": "application/x-protobuf"}}, 400,
     "not a valid OTLP"),
    ("POST", "/v1/traces", {"content": b"{", "headers": {"Content-Type": "application/json"}}, 400, "not valid JSON"),
    ("POST", "/v1/traces", {"content": b"x", "headers": {"Content-Type": "text/plain"}}, 415, "Content-Type"),
])
def test_malformed_requests_get_clear_errors(shared_traces, method, path, kwargs, status, fragment) -> None:
    server = shared_traces
    reply = httpx.request(method, server.url + path, **kwargs)
    assert reply.status_code == status
    assert fragment in reply.text


@pytest.fixture(scope="module")
def shared_traces(module_server_factory):
    return module_server_factory("traces")


def test_large_volume_keeps_spans_and_memory_bounded(start_component) -> None:
    max_spans = 10_000
    server = start_component("traces", "--max-spans", str(max_spans))
    process = psutil.Process(server.pid)
    baseline = process.memory_info().rss
    now = time.time_ns()
    for batch in range(16):  # 16 * 2500 = 40k spans into a 10k-span store
        spans = [{"traceId": f"{batch:016x}{i:016x}", "spanId": f"{i + 1:016x}", "name": f"op{i % 7}",
                  "startTimeUnixNano": str(now + i), "endTimeUnixNano": str(now + i + 1000),
                  "attributes": [{"key": "payload", "value": {"stringValue": "p" * 200}}]} for i in range(2500)]
        payload = {"resourceSpans": [{"resource": {"attributes": [
            {"key": "service.name", "value": {"stringValue": f"svc{batch % 4}"}}]}, "scopeSpans": [{"spans": spans}]}]}
        assert httpx.post(server.url + "/v1/traces", json=payload, timeout=30).status_code == 200
    stats = httpx.get(server.url + "/stats").json()
    assert stats["spans"] <= max_spans and stats["dropped_spans"] >= 30_000
    grown = process.memory_info().rss - baseline
    assert grown < 200 * 2**20, f"RSS grew {grown / 2**20:.0f} MiB"
    newest = httpx.get(server.url + "/api/traces", params={"service": "svc3", "limit": "1"}).json()
    assert newest["data"][0]["traceID"].startswith(f"{15:016x}")
