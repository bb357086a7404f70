"""Wire-level behaviour of the protobuf decoder, using bodies built by a tiny test-side encoder."""

from __future__ import annotations

import json

import pytest
from _fixtures_patch import DATA_DIR
from hypothesis import given, settings
from hypothesis import strategies as st
from sregym_cluster_embedded.apiserver.pbtables import KINDS, MESSAGES
from sregym_cluster_embedded.apiserver.protobuf import (
    ProtobufError,
    decode_message,
    decode_object,
    go_duration,
)


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def vint(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def ld(number: int, payload: bytes | str) -> bytes:
    data = payload.encode() if isinstance(payload, str) else payload
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    return b"k8s\x00" + ld(1, ld(1, api_version) + ld(2, kind)) + ld(2, raw)


def test_delete_options_drain_fallback() -> None:
    body = envelope("v1", "DeleteOptions", vint(1, 0) + ld(4, "Foreground") + ld(5, "All") + vint(3, 0))
    assert decode_object(body) == {
        "kind": "DeleteOptions",
        "apiVersion": "v1",
        "gracePeriodSeconds": 0,  # pointer: an explicit zero grace period is kept
        "propagationPolicy": "Foreground",
        "dryRun": ["All"],
        "orphanDependents": False,
    }


def test_eviction_with_nested_delete_options() -> None:
    meta = ld(1, "web-1") + ld(3, "default")
    body = envelope("policy/v1", "Eviction", ld(1, meta) + ld(2, vint(1, 30)))
    assert decode_object(body) == {
        "kind": "Eviction",
        "apiVersion": "policy/v1",
        "metadata": {"name": "web-1", "namespace": "default"},
        "deleteOptions": {"gracePeriodSeconds": 30},
    }


def test_times_negative_numbers_and_unknown_fields() -> None:
    time = vint(1, 1_700_000_000) + vint(2, 123_456_789)
    meta = ld(1, "x") + ld(8, time) + ld(9, time) + vint(7, 3) + ld(99, "from the future")
    container = ld(1, "c") + ld(2, "img")
    pod_spec = ld(2, container) + vint(4, -5 & 0xFFFFFFFFFFFFFFFF)  # terminationGracePeriodSeconds -5
    obj = decode_object(envelope("v1", "Pod", ld(1, meta) + ld(2, pod_spec)))
    assert obj["metadata"] == {
        "name": "x",
        "creationTimestamp": "2023-11-14T22:13:20Z",
        "deletionTimestamp": "2023-11-14T22:13:20Z",
        "generation": 3,
    }
    assert obj["spec"]["terminationGracePeriodSeconds"] == -5
    assert obj["spec"]["containers"] == [{"name": "c", "image": "img"}]


def test_inlined_structs_join_their_parent() -> None:
    volume = ld(1, "data") + ld(2, ld(2, b""))  # VolumeSource.emptyDir {}
    probe_handler = ld(1, ld(1, "true"))  # ProbeHandler.exec.command
    container = ld(1, "c") + ld(10, ld(1, probe_handler) + vint(4, 5))  # livenessProbe, periodSeconds
    spec = decode_message(ld(1, volume) + ld(2, container), "core.PodSpec")
    assert spec["volumes"] == [{"name": "data", "emptyDir": {}}]
    assert spec["containers"][0]["livenessProbe"] == {"exec": {"command": ["true"]}, "periodSeconds": 5}


def test_quantity_maps_and_int_or_string() -> None:
    limits = ld(1, ld(1, "cpu") + ld(2, ld(1, "250m"))) + ld(1, ld(1, "memory") + ld(2, ld(1, "64Mi")))
    container = ld(1, "c") + ld(8, limits)
    port = vint(3, 80) + ld(4, vint(1, 1) + ld(3, "http"))  # ServicePort port/targetPort
    assert decode_message(container, "core.Container")["resources"] == {
        "limits": {"cpu": "250m", "memory": "64Mi"}
    }
    assert decode_message(port, "core.ServicePort") == {"port": 80, "targetPort": "http"}


def test_packed_repeated_numbers() -> None:
    # ResourceQuota has no repeated numbers; PodSecurityContext.supplementalGroups (int64, field 4) does.
    packed = ld(4, _varint(1000) + _varint(2000))
    assert decode_message(packed, "core.PodSecurityContext") == {"supplementalGroups": [1000, 2000]}
    assert decode_message(vint(4, 1) + vint(4, 2), "core.PodSecurityContext") == {
        "supplementalGroups": [1, 2]
    }


def test_raw_extension_and_fields_v1() -> None:
    managed = ld(1, "kubectl") + ld(7, ld(1, json.dumps({"f:data": {}})))
    meta = ld(1, "m") + ld(17, managed)
    assert decode_message(meta, "meta.ObjectMeta")["managedFields"] == [
        {"manager": "kubectl", "fieldsV1": {"f:data": {}}}
    ]


@pytest.mark.parametrize(
    ("nanos", "text"),
    [
        (0, "0s"),
        (3_600_000_000_000, "1h0m0s"),
        (90_000_000_000, "1m30s"),
        (1_500_000_000, "1.5s"),
        (2_000_000, "2ms"),
        (-1_000_000_000, "-1s"),
    ],
)
def test_go_duration_format(nanos: int, text: str) -> None:
    assert go_duration(nanos) == text


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (b"", "does not appear to be a protobuf message"),
        (b'{"kind":"ConfigMap"}', "does not appear to be a protobuf message"),
        (b"k8s\x00" + b"\x0a\x05ab", "unexpected EOF"),
        (envelope("v1", "Frobnicator", b""), 'no kind "Frobnicator" is registered for version "v1"'),
        (b"k8s\x00", "Kind' is missing"),
        (envelope("v1", "ConfigMap", b"\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"), "varint"),
        (envelope("v1", "ConfigMap", ld(1, ld(1, b"\xff\xfe"))), "UTF-8"),
        (envelope("v1", "ConfigMap", vint(1, 7)), "wire type"),
        (envelope("v1", "ConfigMap", b"\x0b"), "wire type 3"),
    ],
)
def test_bad_bodies_raise_protobuf_error(body: bytes, fragment: str) -> None:
    with pytest.raises(ProtobufError) as info:
        decode_object(body)
    assert fragment in str(info.value)


def test_every_kind_and_message_reference_is_in_the_table() -> None:
    well_known = {
        "Time",
        "MicroTime",
        "Duration",
        "Quantity",
        "IntOrString",
        "RawExtension",
        "FieldsV1",
        "StringList",
    }
    scalars = {"string", "bytes", "bool", "int32", "int64"}
    assert set(KINDS.values()) <= set(MESSAGES)
    for name, spec in MESSAGES.items():
        for token in filter(None, (t.strip() for t in spec.split(";"))):
            number, field = token.split(" ", 1)
            assert int(number) > 0, name
            typ = field.split(":", 1)[1].strip("[]{}")
            assert typ in scalars | well_known | set(MESSAGES), f"{name}: {token}"


_RECORDED = sorted((DATA_DIR / "protobuf").glob("*.pb"))


@given(
    index=st.integers(0, len(_RECORDED) - 1),
    cut=st.integers(0, 4000),
    flip=st.integers(0, 4000),
    bit=st.integers(0, 7),
)
@settings(max_examples=400, deadline=None)
def test_corrupted_recorded_bodies_never_crash(index: int, cut: int, flip: int, bit: int) -> None:
    body = bytearray(_RECORDED[index].read_bytes())
    if len(body) > 4:
        position = 4 + flip % (len(body) - 4)
        body[position] ^= 1 << bit
    body = body[: 4 + cut % max(1, len(body) - 3)]
    try:
        decoded = decode_object(bytes(body))
    except ProtobufError:
        return
    assert isinstance(decoded, dict) and "kind" in decoded


@given(st.binary(max_size=200))
@settings(max_examples=300, deadline=None)
def test_random_bytes_never_crash(data: bytes) -> None:
    for body in (
        data,
        b"k8s\x00" + data,
        envelope("v1", "ConfigMap", data),
        envelope("apps/v1", "Deployment", data),
    ):
        try:
            decode_object(body)
        except ProtobufError:
            pass
