"""Decode OTLP/HTTP trace exports (protobuf or JSON) into flat :class:`Span` records.

Protobuf uses the ``opentelemetry-proto`` messages. OTLP/JSON differs from protobuf's canonical
JSON mapping (trace and span ids are hex, not base64; enums are integers), so it is read by hand.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

import attrs
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

SPAN_KINDS = {0: "unspecified", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
STATUS_UNSET, STATUS_OK, STATUS_ERROR = 0, 1, 2


class OtlpDecodeError(ValueError):
    """An OTLP body that cannot be decoded."""


@attrs.frozen(kw_only=True)
class SpanEvent:
    time_ns: int
    name: str
    attributes: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class Span:
    """One span, with its resource's service name and attributes folded in."""

    trace_id: str  # 32 lowercase hex digits
    span_id: str  # 16 lowercase hex digits
    parent_span_id: str = ""
    name: str
    kind: int = 0
    start_ns: int
    end_ns: int
    service: str
    attributes: Mapping[str, Any] = attrs.field(factory=dict)
    resource: Mapping[str, Any] = attrs.field(factory=dict)
    scope: str = ""
    status_code: int = STATUS_UNSET
    status_message: str = ""
    events: tuple[SpanEvent, ...] = ()

    @property
    def duration_ns(self) -> int:
        return max(0, self.end_ns - self.start_ns)

    @property
    def is_error(self) -> bool:
        return self.status_code == STATUS_ERROR


# -- protobuf ------------------------------------------------------------------------------------


def _pb_value(value: Any) -> Any:
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [_pb_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _pb_value(kv.value) for kv in value.kvlist_value.values}
    if which == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    return getattr(value, which)


def _pb_attrs(items: Any) -> dict[str, Any]:
    return {kv.key: _pb_value(kv.value) for kv in items}


def decode_protobuf(body: bytes) -> list[Span]:
    request = trace_service_pb2.ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except DecodeError as err:
        raise OtlpDecodeError(f"body is not a valid OTLP ExportTraceServiceRequest protobuf: {err}") from None
    spans: list[Span] = []
    for resource_spans in request.resource_spans:
        resource = _pb_attrs(resource_spans.resource.attributes)
        service = str(resource.get("service.name") or "unknown_service")
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope.name
            for s in scope_spans.spans:
                if len(s.trace_id) != 16 or len(s.span_id) != 8:
                    raise OtlpDecodeError("span with an invalid trace_id (need 16 bytes) or span_id (need 8 bytes)")
                spans.append(Span(
                    trace_id=s.trace_id.hex(), span_id=s.span_id.hex(), parent_span_id=s.parent_span_id.hex(),
                    name=s.name, kind=int(s.kind), start_ns=int(s.start_time_unix_nano),
                    end_ns=int(s.end_time_unix_nano), service=service, attributes=_pb_attrs(s.attributes),
                    resource=resource, scope=scope, status_code=int(s.status.code),
                    status_message=s.status.message,
                    events=tuple(SpanEvent(time_ns=int(e.time_unix_nano), name=e.name,
                                           attributes=_pb_attrs(e.attributes)) for e in s.events),
                ))
    return spans


# -- JSON ----------------------------------------------------------------------------------------


def _json_value(value: Mapping[str, Any]) -> Any:
    if not isinstance(value, Mapping) or not value:
        return None
    if "stringValue" in value:
        return str(value["stringValue"])
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "intValue" in value:
        return int(value["intValue"])  # int64 is a JSON string in OTLP/JSON
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "arrayValue" in value:
        return [_json_value(v) for v in value["arrayValue"].get("values", [])]
    if "kvlistValue" in value:
        return {kv["key"]: _json_value(kv.get("value", {})) for kv in value["kvlistValue"].get("values", [])}
    if "bytesValue" in value:
        return str(value["bytesValue"])
    return None


def _json_attrs(items: Any) -> dict[str, Any]:
    return {str(kv["key"]): _json_value(kv.get("value", {})) for kv in items or []}


def _json_id(raw: Any, size: int, what: str) -> str:
    if raw in (None, ""):
        return ""
    text = str(raw)
    try:
        if len(text) == size * 2:
            bytes.fromhex(text)
            return text.lower()
        # Tolerate exporters that used protobuf's canonical mapping (base64).
        decoded = base64.b64decode(text, validate=True)
    except (ValueError, binascii.Error):
        raise OtlpDecodeError(f"{what} {text!r} is not {size * 2} hex digits") from None
    if len(decoded) != size:
        raise OtlpDecodeError(f"{what} {text!r} is not {size * 2} hex digits")
    return decoded.hex()


def _enum(raw: Any, names: Mapping[str, int]) -> int:
    if isinstance(raw, str) and not raw.isdigit():
        return names.get(raw, 0)
    return int(raw or 0)


_KIND_NAMES = {f"SPAN_KIND_{v.upper()}": k for k, v in SPAN_KINDS.items()}
_STATUS_NAMES = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}


def decode_json(payload: Any) -> list[Span]:
    if not isinstance(payload, Mapping) or not isinstance(payload.get("resourceSpans", []), list):
        raise OtlpDecodeError('OTLP/JSON body must be an object with a "resourceSpans" list')
    spans: list[Span] = []
    try:
        for resource_spans in payload.get("resourceSpans", []):
            resource = _json_attrs((resource_spans.get("resource") or {}).get("attributes"))
            service = str(resource.get("service.name") or "unknown_service")
            for scope_spans in resource_spans.get("scopeSpans", []) or resource_spans.get("instrumentationLibrarySpans", []):
                scope = str((scope_spans.get("scope") or scope_spans.get("instrumentationLibrary") or {}).get("name", ""))
                for s in scope_spans.get("spans", []):
                    trace_id = _json_id(s.get("traceId"), 16, "traceId")
                    span_id = _json_id(s.get("spanId"), 8, "spanId")
                    if not trace_id or not span_id:
                        raise OtlpDecodeError("every span needs traceId and spanId")
                    status = s.get("status") or {}
                    spans.append(Span(
                        trace_id=trace_id, span_id=span_id,
                        parent_span_id=_json_id(s.get("parentSpanId"), 8, "parentSpanId"),
                        name=str(s.get("name", "")), kind=_enum(s.get("kind"), _KIND_NAMES),
                        start_ns=int(s.get("startTimeUnixNano", 0)), end_ns=int(s.get("endTimeUnixNano", 0)),
                        service=service, attributes=_json_attrs(s.get("attributes")), resource=resource,
                        scope=scope, status_code=_enum(status.get("code"), _STATUS_NAMES),
                        status_message=str(status.get("message", "")),
                        events=tuple(SpanEvent(time_ns=int(e.get("timeUnixNano", 0)), name=str(e.get("name", "")),
                                               attributes=_json_attrs(e.get("attributes")))
                                     for e in s.get("events", []) or []),
                    ))
    except OtlpDecodeError:
        raise
    except (TypeError, ValueError, AttributeError, KeyError) as err:
        raise OtlpDecodeError(f"malformed OTLP/JSON trace export: {err}") from None
    return spans
