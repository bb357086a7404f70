"""Decode the protobuf request bodies kubectl sends (``application/vnd.kubernetes.protobuf``).

kubectl's typed clients (``create configmap|secret|deployment|...``, ``auth can-i``, ``create
token``, drain's DELETE fallback) send ``"k8s\\x00"`` + ``runtime.Unknown{typeMeta, raw}`` and never
retry in JSON, so the server must understand them. This is a small wire-format decoder driven by
the field tables in ``pbtables.py``; the result is the object's ordinary JSON form.
"""

from __future__ import annotations

import base64
import json
import struct
from datetime import UTC, datetime
from functools import cache
from typing import Any

from .pbtables import KINDS, MESSAGES

__all__ = ["MAGIC", "ProtobufError", "decode_object", "decode_message"]

MAGIC = b"k8s\x00"
_MAX_DEPTH = 64

_VARINT, _FIXED64, _LENGTH, _FIXED32 = 0, 1, 2, 5
_SCALARS = {"string", "bytes", "bool", "int32", "int64"}
_WELL_KNOWN = {
    "Time",
    "MicroTime",
    "Duration",
    "Quantity",
    "IntOrString",
    "RawExtension",
    "FieldsV1",
    "StringList",
}


class ProtobufError(Exception):
    """A body that is not a decodable Kubernetes protobuf object (answer 400 with the message)."""


class _Field:
    __slots__ = ("name", "type", "repeated", "map", "pointer", "inline")

    def __init__(self, spec: str) -> None:
        name, _, typ = spec.partition(":")
        self.inline = name.startswith("^")
        self.pointer = name.endswith("?")
        self.name = name.strip("^?")
        self.repeated = typ.startswith("[")
        self.map = typ.startswith("{")
        self.type = typ.strip("[]{}")


@cache
def _fields(message: str) -> dict[int, _Field]:
    """Parse one message's table entry (lazily: start-up stays cheap)."""
    spec = MESSAGES.get(message)
    if spec is None:
        raise ProtobufError(f"no protobuf field table for message {message}")
    fields = {}
    for token in filter(None, (t.strip() for t in spec.split(";"))):
        number, _, rest = token.partition(" ")
        fields[int(number)] = _Field(rest)
    return fields


def decode_object(body: bytes) -> dict[str, Any]:
    """Decode an enveloped body into the JSON dict form, with ``apiVersion`` and ``kind`` set."""
    if not isinstance(body, (bytes, bytearray, memoryview)):
        raise ProtobufError("protobuf body must be bytes")
    body = bytes(body)
    if not body.startswith(MAGIC):
        raise ProtobufError(
            "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
        )
    envelope = _wire_fields(body[len(MAGIC) :])
    type_meta = _wire_fields(_last_bytes(envelope, 1, "typeMeta"))
    api_version = _text(_last_bytes(type_meta, 1, "apiVersion"))
    kind = _text(_last_bytes(type_meta, 2, "kind"))
    raw = _last_bytes(envelope, 2, "raw")
    encoding = _text(_last_bytes(envelope, 3, "contentEncoding"))
    if encoding:
        raise ProtobufError(f"unsupported protobuf content encoding {encoding!r}")
    message = KINDS.get((api_version, kind))
    if message is None:
        if not kind:
            raise ProtobufError("Object 'Kind' is missing in the protobuf envelope")
        raise ProtobufError(f'no kind "{kind}" is registered for version "{api_version}"')
    obj: dict[str, Any] = {"kind": kind, "apiVersion": api_version}
    obj.update(decode_message(raw, message))
    return obj


def decode_message(data: bytes, message: str) -> dict[str, Any]:
    """Decode one (un-enveloped) message by its table name, e.g. ``"core.ConfigMap"``."""
    try:
        return _decode(data, message, 0)
    except ProtobufError:
        raise
    except (ValueError, TypeError, OverflowError, KeyError, IndexError) as exc:
        raise ProtobufError(f"malformed protobuf body for {message}: {exc}") from None


# --------------------------------------------------------------------------- wire format


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ProtobufError("unexpected EOF in varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise ProtobufError("varint overflow")


def _wire_fields(data: bytes) -> list[tuple[int, int, Any]]:
    """Split a message into ``(field number, wire type, value)``; value is int or bytes."""
    out: list[tuple[int, int, Any]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ProtobufError("illegal field number 0")
        value: int | bytes
        if wire == _VARINT:
            value, pos = _varint(data, pos)
        elif wire == _LENGTH:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise ProtobufError(f"unexpected EOF: field {number} needs {size} bytes")
            value, pos = data[pos : pos + size], pos + size
        elif wire == _FIXED64:
            if pos + 8 > len(data):
                raise ProtobufError("unexpected EOF in fixed64")
            value, pos = struct.unpack_from("<q", data, pos)[0], pos + 8
        elif wire == _FIXED32:
            if pos + 4 > len(data):
                raise ProtobufError("unexpected EOF in fixed32")
            value, pos = struct.unpack_from("<i", data, pos)[0], pos + 4
        else:
            raise ProtobufError(f"unsupported wire type {wire} for field {number}")
        out.append((number, wire, value))
    return out


def _last_bytes(fields: list[tuple[int, int, Any]], number: int, what: str) -> bytes:
    found = b""
    for num, wire, value in fields:
        if num == number:
            if wire != _LENGTH:
                raise ProtobufError(f"{what}: wrong wire type {wire}")
            found = value
    return found


def _text(value: bytes) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise ProtobufError("invalid UTF-8 in a string field") from None


# --------------------------------------------------------------------------- messages


def _decode(data: bytes, message: str, depth: int) -> dict[str, Any]:
    if depth > _MAX_DEPTH:
        raise ProtobufError("protobuf message nested too deeply")
    fields = _fields(message)
    out: dict[str, Any] = {}
    for number, wire, raw in _wire_fields(data):
        field = fields.get(number)
        if field is None:
            continue  # unknown (newer) field: skipped, as the real decoder does
        if field.map:
            key, value = _map_entry(raw, wire, field, depth)
            out.setdefault(field.name, {})[key] = value
        elif field.repeated:
            out.setdefault(field.name, []).extend(_values(raw, wire, field.type, depth))
        elif field.inline:
            out.update(_decode(_need_bytes(raw, wire, field), field.type, depth + 1))
        else:
            out[field.name] = _value(raw, wire, field.type, depth)
    pointers = _pointer_names(message)
    return {k: v for k, v in out.items() if not _omitted(v, k, pointers)}


def _omitted(value: Any, name: str, pointers: frozenset[str]) -> bool:
    """gogo writes Go zero values of non-pointer fields; JSON would omit them (``omitempty``)."""
    if value is _ABSENT:
        return True
    if isinstance(value, (str, int)) and not value:  # "", 0, False
        return name not in pointers
    return False


@cache
def _pointer_names(message: str) -> frozenset[str]:
    return frozenset(f.name for f in _fields(message).values() if f.pointer)


_ABSENT = object()  # a zero Time: JSON null, left out


def _need_bytes(raw: Any, wire: int, field: _Field) -> bytes:
    if wire != _LENGTH:
        raise ProtobufError(f"field {field.name}: expected a length-delimited value, got wire type {wire}")
    return raw


def _map_entry(raw: Any, wire: int, field: _Field, depth: int) -> tuple[str, Any]:
    entry = _wire_fields(_need_bytes(raw, wire, field))
    key, value = "", None
    for number, entry_wire, entry_raw in entry:
        if number == 1:
            key = _text(_need_bytes(entry_raw, entry_wire, field))
        elif number == 2:
            value = _value(entry_raw, entry_wire, field.type, depth)
    if value is None or value is _ABSENT:
        value = _zero(field.type)
    return key, value


def _zero(typ: str) -> Any:
    if typ in ("string", "Quantity"):
        return ""
    if typ == "bytes":
        return ""
    if typ in ("int32", "int64"):
        return 0
    if typ == "bool":
        return False
    if typ == "StringList":
        return []
    return {}


def _values(raw: Any, wire: int, typ: str, depth: int) -> list[Any]:
    """Values of one repeated-field occurrence (several when numbers are packed)."""
    if wire == _LENGTH and typ in ("int32", "int64", "bool"):
        values, pos = [], 0
        while pos < len(raw):
            number, pos = _varint(raw, pos)
            values.append(_scalar(number, _VARINT, typ))
        return values
    value = _value(raw, wire, typ, depth)
    return [] if value is _ABSENT else [value]


def _value(raw: Any, wire: int, typ: str, depth: int) -> Any:
    if typ in _SCALARS:
        return _scalar(raw, wire, typ)
    if wire != _LENGTH:
        raise ProtobufError(f"{typ}: expected a length-delimited value, got wire type {wire}")
    if typ in _WELL_KNOWN:
        return _well_known(raw, typ, depth)
    return _decode(raw, typ, depth + 1)


def _scalar(raw: Any, wire: int, typ: str) -> Any:
    if typ in ("string", "bytes"):
        if wire != _LENGTH:
            raise ProtobufError(f"{typ} field with wire type {wire}")
        return _text(raw) if typ == "string" else base64.b64encode(raw).decode("ascii")
    if wire not in (_VARINT, _FIXED64, _FIXED32):
        raise ProtobufError(f"{typ} field with wire type {wire}")
    if typ == "bool":
        return bool(raw)
    bits = 32 if typ == "int32" else 64
    raw &= (1 << 64) - 1  # negative numbers are sign-extended 64-bit varints
    raw &= (1 << bits) - 1
    return raw - (1 << bits) if raw >> (bits - 1) else raw


def _well_known(data: bytes, typ: str, depth: int) -> Any:
    fields = {number: (wire, value) for number, wire, value in _wire_fields(data)}

    def integer(number: int) -> int:
        wire, value = fields.get(number, (_VARINT, 0))
        return _scalar(value, wire, "int64")

    def text(number: int) -> str:
        wire, value = fields.get(number, (_LENGTH, b""))
        return _scalar(value, wire, "string")

    if typ in ("Time", "MicroTime"):
        seconds, nanos = integer(1), integer(2)
        if seconds == 0 and nanos == 0:
            return _ABSENT
        try:
            moment = datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError):
            raise ProtobufError(f"{typ} out of range: {seconds}") from None
        if typ == "Time":
            return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
        return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{nanos // 1000:06d}Z"
    if typ == "Duration":
        return go_duration(integer(1))
    if typ == "Quantity":
        return text(1)
    if typ == "IntOrString":
        return text(3) if integer(1) == 1 else _scalar(integer(2), _VARINT, "int32")
    if typ == "StringList":
        return [_scalar(v, w, "string") for n, w, v in _wire_fields(data) if n == 1]
    raw = fields.get(1, (_LENGTH, b""))[1]
    if not isinstance(raw, bytes):
        raise ProtobufError(f"{typ}: raw bytes expected")
    return _raw_json(raw, typ, depth)


def _raw_json(raw: bytes, typ: str, depth: int) -> Any:
    """``RawExtension``/``FieldsV1`` carry JSON (or, for RawExtension, a nested protobuf object)."""
    if not raw:
        return {}
    if raw.startswith(MAGIC) and depth < _MAX_DEPTH:
        return decode_object(raw)
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ProtobufError(f"{typ}: embedded value is neither JSON nor a protobuf object") from None


def go_duration(nanoseconds: int) -> str:
    """Format like Go's ``time.Duration.String()`` (``metav1.Duration`` JSON), e.g. ``1h0m0s``."""
    if nanoseconds == 0:
        return "0s"
    sign = "-" if nanoseconds < 0 else ""
    n = abs(nanoseconds)
    if n < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if n >= size:
                return sign + _trim(n, size) + unit
    hours, rest = divmod(n, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    seconds = _trim(rest, 1_000_000_000) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{seconds}"
    if minutes:
        return f"{sign}{minutes}m{seconds}"
    return sign + seconds


def _trim(value: int, unit: int) -> str:
    whole, frac = divmod(value, unit)
    if not frac:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}." + f"{frac:0{digits}d}".rstrip("0")
