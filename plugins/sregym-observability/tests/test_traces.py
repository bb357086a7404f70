"""OTLP decoding, trace store semantics and Jaeger JSON shapes (no servers)."""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode
from sregym_observability.jaeger_api import BadRequest, parse_trace_query, trace_to_jaeger
from sregym_observability.otlp import OtlpDecodeError, decode_json, decode_protobuf
from sregym_observability.tracestore import TraceQuery, TraceRetention, TraceStore


def _sdk_spans():
    """Real SDK spans: frontend (server) → search (client→server) → geo (error)."""
    exporter = InMemorySpanExporter()
    providers = {}
    for service in ("frontend", "search", "geo"):
        provider = TracerProvider(resource=Resource.create({"service.name": service}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        providers[service] = provider.get_tracer("test")
    with providers["frontend"].start_as_current_span("GET /hotels", kind=SpanKind.SERVER) as root:
        root.set_attribute("http.status_code", 500)
        with providers["search"].start_as_current_span("/search.Search/Nearby", kind=SpanKind.SERVER):
            with providers["geo"].start_as_current_span("/geo.Geo/Nearby", kind=SpanKind.SERVER) as geo:
                geo.add_event("exception", {"exception.message": "db down"})
                geo.set_status(Status(StatusCode.ERROR, "postgres unreachable"))
    return exporter.get_finished_spans()


def test_protobuf_decoding_of_sdk_export() -> None:
    body = encode_spans(_sdk_spans()).SerializeToString()
    spans = decode_protobuf(body)
    by_service = {s.service: s for s in spans}
    assert set(by_service) == {"frontend", "search", "geo"}
    geo, search, frontend = by_service["geo"], by_service["search"], by_service["frontend"]
    assert len({s.trace_id for s in spans}) == 1 and len(geo.trace_id) == 32
    assert geo.parent_span_id == search.span_id and search.parent_span_id == frontend.span_id
    assert geo.is_error and geo.status_message == "postgres unreachable"
    assert geo.events[0].name == "exception" and geo.events[0].attributes["exception.message"] == "db down"
    assert frontend.attributes["http.status_code"] == 500 and frontend.kind == 2
    assert frontend.end_ns >= frontend.start_ns > 0


def test_json_decoding_uses_hex_ids_and_string_ints() -> None:
    payload = {"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "rate"}}]},
        "scopeSpans": [{"scope": {"name": "grpc"}, "spans": [{
            "traceId": "5B8EFFF798038103D269B633813FC60C", "spanId": "EEE19B7EC3C1B174",
            "parentSpanId": "", "name": "GetRates", "kind": 2,
            "startTimeUnixNano": "1544712660000000000", "endTimeUnixNano": "1544712661000000000",
            "attributes": [{"key": "rpc.retries", "value": {"intValue": "3"}},
                           {"key": "cache.hit", "value": {"boolValue": False}}],
            "status": {"code": 2, "message": "timeout"}}]}]}]}
    [span] = decode_json(payload)
    assert span.trace_id == "5b8efff798038103d269b633813fc60c" and span.span_id == "eee19b7ec3c1b174"
    assert span.attributes == {"rpc.retries": 3, "cache.hit": False}
    assert span.duration_ns == 10**9 and span.is_error and span.scope == "grpc"


@pytest.mark.parametrize("payload", [
    [], {"resourceSpans": "nope"},
    {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz", "spanId": "00"}]}]}]},
    {"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "no ids"}]}]}]},
    {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "5b8efff798038103d269b633813fc60c",
                                                   "spanId": "eee19b7ec3c1b174", "startTimeUnixNano": "x"}]}]}]},
])
def test_malformed_json_is_rejected_clearly(payload) -> None:
    with pytest.raises(OtlpDecodeError):
        decode_json(payload)


def test_malformed_protobuf_is_rejected_clearly() -> None:
    with pytest.raises(OtlpDecodeError, match="not a valid OTLP"):
        decode_protobuf(b"\xff\xff\xff garbage")


def test_store_search_operations_dependencies_and_jaeger_shape() -> None:
    store = TraceStore()
    store.add(decode_protobuf(encode_spans(_sdk_spans()).SerializeToString()))
    assert store.services() == ["frontend", "geo", "search"]
    assert store.operations("geo") == [("/geo.Geo/Nearby", "server")]
    found = store.search(TraceQuery(service="geo", tags={"error": "true"}))
    assert len(found) == 1
    assert store.search(TraceQuery(service="frontend", tags={"error": "true"})) == []
    assert store.search(TraceQuery(service="frontend", operation="nope")) == []
    assert store.search(TraceQuery(service="geo", min_duration_ns=10**12)) == []
    assert store.dependencies(0, 2**62) == [("frontend", "search", 1), ("search", "geo", 1)]

    trace = trace_to_jaeger(found[0])
    assert set(trace) == {"traceID", "spans", "processes", "warnings"}
    geo = next(s for s in trace["spans"] if s["operationName"] == "/geo.Geo/Nearby")
    assert trace["processes"][geo["processID"]]["serviceName"] == "geo"
    assert geo["references"][0]["refType"] == "CHILD_OF"
    tags = {t["key"]: t for t in geo["tags"]}
    assert tags["error"] == {"key": "error", "type": "bool", "value": True}
    assert tags["span.kind"]["value"] == "server"
    assert tags["otel.status_description"]["value"] == "postgres unreachable"
    assert geo["logs"][0]["fields"][0] == {"key": "event", "type": "string", "value": "exception"}
    assert isinstance(geo["startTime"], int) and geo["startTime"] > 10**15  # microseconds
    assert geo["duration"] >= 0 and len(geo["traceID"]) == 32 and len(geo["spanID"]) == 16


def test_store_retention_evicts_whole_oldest_traces() -> None:
    from sregym_observability.otlp import Span

    store = TraceStore(TraceRetention(max_spans=100, max_spans_per_trace=10))
    for t in range(50):
        store.add([Span(trace_id=f"{t:032x}", span_id=f"{s + 1:016x}", name="op", start_ns=t, end_ns=t + 5,
                        service=f"svc{t % 3}") for s in range(12)])
        assert store.total_spans <= 100
    assert store.trace_count() == 10
    assert store.get(f"{0:032x}") is None and len(store.get(f"{49:032x}")) == 10
    assert store.dropped_spans > 0


@pytest.mark.parametrize(("params", "fragment"), [
    ({}, "parameter 'service' is required"),
    ({"service": "geo", "limit": "many"}, "unable to parse param 'limit'"),
    ({"service": "geo", "minDuration": "fast"}, "unable to parse param 'minDuration'"),
    ({"service": "geo", "minDuration": "2s", "maxDuration": "1s"}, "greater than 'minDuration'"),
    ({"service": "geo", "tags": "{not json"}, "malformed 'tags'"),
    ({"service": "geo", "lookback": "forever"}, "lookback"),
    ({"service": "geo", "start": "200", "end": "100"}, "start time is after end time"),
])
def test_trace_query_parameters_are_validated(params, fragment) -> None:
    from multidict import MultiDict

    with pytest.raises(BadRequest, match=fragment.replace("(", r"\(")):
        parse_trace_query(MultiDict(params))


def test_trace_query_defaults_and_tags() -> None:
    from multidict import MultiDict

    query = parse_trace_query(MultiDict([("service", "geo"), ("lookback", "15m"), ("tag", "error:true"),
                                         ("tags", '{"http.status_code":"500"}'), ("minDuration", "100ms")]),
                              now_ns=10**18)
    assert query.start_ns == 10**18 - 15 * 60 * 10**9 and query.end_ns == 10**18
    assert query.tags == {"error": "true", "http.status_code": "500"}
    assert query.min_duration_ns == 100_000_000 and query.limit == 20


def _span_payload(service: str, namespace: str, spans: list[tuple[str, int, int, int]]) -> dict:
    """OTLP/JSON for ``spans`` of (name, kind, status code, milliseconds)."""
    return {"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": service}},
                                    {"key": "service.namespace", "value": {"stringValue": namespace}}]},
        "scopeSpans": [{"spans": [{
            "traceId": f"{index + 1:032x}", "spanId": f"{index + 1:016x}", "name": name, "kind": kind,
            "startTimeUnixNano": "1000000000", "endTimeUnixNano": str(1000000000 + millis * 1000000),
            "status": {"code": code}} for index, (name, kind, code, millis) in enumerate(spans)]}]}]}


def test_span_metrics_count_every_span_under_upstreams_names() -> None:
    """traces_span_metrics_calls_total and the duration histogram, as the span-metrics connector
    exports them (service_name, span_name, span_kind, status_code), with the app's namespace."""
    store = TraceStore(TraceRetention(max_spans=1))  # retention drops spans; the counters never do
    store.add(decode_json(_span_payload("frontend", "hotel-reservation", [
        ("GET /hotels", 2, 0, 3), ("GET /hotels", 2, 0, 120), ("GET /hotels", 2, 2, 7), ("search", 3, 0, 1)])))
    store.clear()
    text = store.metrics.render()
    base = 'namespace="hotel-reservation",service_name="frontend",span_name="GET /hotels",span_kind="SPAN_KIND_SERVER"'
    assert f'traces_span_metrics_calls_total{{{base},status_code="STATUS_CODE_UNSET"}} 2' in text
    assert f'traces_span_metrics_calls_total{{{base},status_code="STATUS_CODE_ERROR"}} 1' in text
    assert 'span_kind="SPAN_KIND_CLIENT",status_code="STATUS_CODE_UNSET"} 1' in text
    ok = f'{base},status_code="STATUS_CODE_UNSET"'
    assert f'traces_span_metrics_duration_milliseconds_bucket{{{ok},le="4"}} 1' in text
    assert f'traces_span_metrics_duration_milliseconds_bucket{{{ok},le="100"}} 1' in text
    assert f'traces_span_metrics_duration_milliseconds_bucket{{{ok},le="200"}} 2' in text
    assert f'traces_span_metrics_duration_milliseconds_bucket{{{ok},le="+Inf"}} 2' in text
    assert f'traces_span_metrics_duration_milliseconds_count{{{ok}}} 2' in text
    assert f'traces_span_metrics_duration_milliseconds_sum{{{ok}}} 123' in text
    assert "# TYPE traces_span_metrics_duration_milliseconds histogram" in text
