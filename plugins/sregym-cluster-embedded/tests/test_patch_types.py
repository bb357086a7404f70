"""JSON patch, merge patch, server-side apply and error handling of ``patching.apply_patch``."""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any

import pytest
from _fixtures_patch import kubectl_local_patch, kubectl_path, prune_empty
from hypothesis import given, settings
from hypothesis import strategies as st
from sregym_cluster_embedded.apiserver.patching import CONTENT_TYPES, PatchError, apply_patch, merge_patch

JSON_PATCH = "application/json-patch+json"
MERGE = "application/merge-patch+json"
APPLY = "application/apply-patch+yaml"

DEPLOY: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}, "annotations": {"a": "1"}},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "containers": [{"name": "web", "image": "nginx:1.25", "env": [{"name": "A", "value": "1"}]}]
            },
        },
    },
}


def _patch(body: Any, content_type: str, obj: dict[str, Any] | None = None, **kw: str) -> dict[str, Any]:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return apply_patch(
        copy.deepcopy(obj if obj is not None else DEPLOY),
        raw,
        content_type,
        kind=kw.get("kind", "Deployment"),
        group=kw.get("group", "apps"),
    )


# --------------------------------------------------------------------------- JSON patch


def test_json_patch_rollout_undo_shape() -> None:
    template = copy.deepcopy(DEPLOY["spec"]["template"])
    template["spec"]["containers"][0]["image"] = "nginx:1.24"
    ops = [
        {"op": "replace", "path": "/spec/template", "value": template},
        {
            "op": "replace",
            "path": "/metadata/annotations",
            "value": {"deployment.kubernetes.io/revision": "3"},
        },
    ]
    out = _patch(ops, JSON_PATCH)
    assert out["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.24"
    assert out["metadata"]["annotations"] == {"deployment.kubernetes.io/revision": "3"}
    assert DEPLOY["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25"


def test_json_patch_test_failure_is_422_with_cause() -> None:
    with pytest.raises(PatchError) as info:
        _patch(
            [
                {"op": "test", "path": "/spec/replicas", "value": 3},
                {"op": "replace", "path": "/spec/replicas", "value": 4},
            ],
            JSON_PATCH,
        )
    err = info.value
    assert (err.code, err.reason) == (422, "Invalid")
    assert err.message == "the server rejected our request due to an error in our request"
    assert err.causes[0]["message"] == "testing value /spec/replicas failed: test failed"
    status = err.to_status()
    assert status["kind"] == "Status" and status["code"] == 422 and status["details"]["causes"]


@pytest.mark.parametrize(
    ("ops", "fragment"),
    [
        ([{"op": "remove", "path": "/metadata/labels/missing"}], "Unable to remove nonexistent key: missing"),
        ([{"op": "replace", "path": "/spec/nope", "value": 1}], "replace operation does not apply"),
        ([{"op": "add", "path": "/spec/a/b", "value": 1}], "add operation does not apply"),
        ([{"op": "jump", "path": "/spec"}], "Unexpected kind: jump"),
        ([{"op": "move", "from": "/nope", "path": "/x"}], "error in move"),
    ],
)
def test_json_patch_failed_operations(ops: list[dict[str, Any]], fragment: str) -> None:
    with pytest.raises(PatchError) as info:
        _patch(ops, JSON_PATCH)
    assert info.value.code == 422
    assert fragment in info.value.causes[0]["message"]


def test_json_patch_must_be_a_list() -> None:
    with pytest.raises(PatchError) as info:
        _patch({"op": "add"}, JSON_PATCH)
    assert info.value.code == 400
    assert info.value.message == "json: cannot unmarshal object into Go value of type jsonpatch.Patch"


def test_json_patch_replacing_root_with_non_object() -> None:
    with pytest.raises(PatchError) as info:
        _patch([{"op": "replace", "path": "", "value": [1]}], JSON_PATCH)
    assert info.value.code == 400
    assert info.value.message.startswith("couldn't get version/kind; json parse error")


# --------------------------------------------------------------------------- merge patch

# RFC 7386 appendix A examples (target, patch, result).
RFC7386 = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("target", "patch", "expected"), RFC7386)
def test_merge_patch_rfc7386_examples(target: Any, patch: Any, expected: Any) -> None:
    before = copy.deepcopy(target)
    assert merge_patch(target, patch) == expected
    assert target == before


def test_merge_patch_scale_label_and_lists_replaced() -> None:
    out = _patch({"spec": {"replicas": 3}, "metadata": {"labels": {"team": "sre", "app": None}}}, MERGE)
    assert out["spec"]["replicas"] == 3
    assert out["metadata"]["labels"] == {"team": "sre"}
    out = _patch({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "x"}]}}}}, MERGE)
    assert out["spec"]["template"]["spec"]["containers"] == [{"name": "web", "image": "x"}]  # no merge keys


def test_merge_patch_works_for_custom_resources() -> None:
    cr = {
        "apiVersion": "x.example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {"size": 1, "keep": True},
    }
    out = _patch({"spec": {"size": 2}}, MERGE, cr, kind="Widget", group="x.example.com")
    assert out["spec"] == {"size": 2, "keep": True}


@given(
    target=st.recursive(
        st.none() | st.integers() | st.text(max_size=3),
        lambda c: st.dictionaries(st.text(max_size=2), c, max_size=3),
        max_leaves=8,
    ),
    patch=st.recursive(
        st.none() | st.integers() | st.text(max_size=3),
        lambda c: st.dictionaries(st.text(max_size=2), c, max_size=3),
        max_leaves=8,
    ),
)
@settings(max_examples=200, deadline=None)
def test_merge_patch_is_idempotent(target: Any, patch: Any) -> None:
    once = merge_patch(target, patch)
    assert merge_patch(once, patch) == once


# --------------------------------------------------------------------------- server-side apply


def test_apply_creates_from_empty_object() -> None:
    body = json.dumps(DEPLOY).encode()
    assert _patch(body, APPLY, {}) == DEPLOY


def test_apply_merges_and_keeps_unmentioned_fields() -> None:
    applied = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {tier: front}
  managedFields: [{manager: x}]
spec:
  template:
    spec:
      containers:
      - name: web
        image: nginx:1.26
      - name: side
        image: busybox
"""
    out = _patch(applied.encode(), APPLY)
    assert out["metadata"]["labels"] == {"app": "web", "tier": "front"}
    assert "managedFields" not in out["metadata"]
    assert out["spec"]["replicas"] == 1
    containers = out["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["web", "side"]
    assert containers[0]["image"] == "nginx:1.26"
    assert containers[0]["env"] == [{"name": "A", "value": "1"}]  # field not in the config is untouched


def test_apply_custom_resource_deep_merges() -> None:
    cr = {
        "apiVersion": "x.example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {"a": {"b": 1}, "l": [1]},
    }
    body = b'{"apiVersion":"x.example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"a":{"c":2},"l":[2]}}'
    out = _patch(body, APPLY, cr, kind="Widget", group="x.example.com")
    assert out["spec"] == {"a": {"b": 1, "c": 2}, "l": [2]}


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (b"kind: [unclosed", "error decoding YAML"),
        (b"- a\n- b\n", "must be an object"),
        (b"apiVersion: apps/v1\nmetadata: {name: web}\n", "Object 'Kind' is missing"),
        (b"apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n", "does not match"),
        (b"apiVersion: v1\nkind: Deployment\nmetadata: {name: web}\n", "does not match"),
    ],
)
def test_apply_bad_configurations(body: bytes, fragment: str) -> None:
    with pytest.raises(PatchError) as info:
        _patch(body, APPLY)
    assert info.value.code == 400
    assert fragment in info.value.message


# --------------------------------------------------------------------------- errors common to all types


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{x", "invalid character 'x' looking for beginning of object key string"),
        (b"", "unexpected end of JSON input"),
        (b'{"a":1} x', "invalid character 'x' after top-level value"),
        (b'{"a" 1}', "invalid character '1' after object key"),
        (b"[1 2]", "invalid character '2' after array element"),
        (b'{"a":1 "b":2}', "invalid character '\"' after object key:value pair"),
    ],
)
def test_invalid_json_is_400_with_go_wording(body: bytes, message: str) -> None:
    for content_type in (JSON_PATCH, MERGE, "application/strategic-merge-patch+json"):
        with pytest.raises(PatchError) as info:
            _patch(body, content_type)
        assert (info.value.code, info.value.message) == (400, message)


def test_unknown_content_type_is_415() -> None:
    with pytest.raises(PatchError) as info:
        _patch({}, "application/xml")
    assert info.value.code == 415
    assert info.value.reason == "UnsupportedMediaType"


def test_content_type_parameters_are_ignored() -> None:
    out = _patch({"spec": {"replicas": 2}}, "application/merge-patch+json; charset=utf-8")
    assert out["spec"]["replicas"] == 2


@pytest.mark.parametrize("field", ["name", "namespace"])
def test_patch_may_not_rename(field: str) -> None:
    with pytest.raises(PatchError) as info:
        _patch({"metadata": {field: "other"}}, MERGE)
    assert info.value.code == 400
    assert f"the {field} of the object (other) does not match" in info.value.message


@given(
    body=st.binary(max_size=64) | st.from_regex(r'[\[\]{}":,a-z0-9$ ]{0,40}', fullmatch=True).map(str.encode)
)
@settings(max_examples=300, deadline=None)
def test_garbage_never_raises_anything_but_patch_error(body: bytes) -> None:
    for content_type in CONTENT_TYPES:
        try:
            out = apply_patch(DEPLOY, body, content_type, kind="Deployment", group="apps")
        except PatchError as exc:
            assert 400 <= exc.code < 600 and exc.message
        else:
            assert isinstance(out, dict)


@pytest.mark.slow
def test_json_and_merge_patch_match_live_kubectl(tmp_path: Path) -> None:
    if not kubectl_path():
        pytest.skip("kubectl not installed")
    cases = [
        (
            "json",
            [
                {"op": "add", "path": "/metadata/labels/x", "value": "y"},
                {"op": "remove", "path": "/metadata/annotations"},
            ],
        ),
        ("json", [{"op": "copy", "from": "/metadata/labels", "path": "/spec/template/metadata/annotations"}]),
        (
            "merge",
            {"spec": {"replicas": 4, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}},
        ),
        ("merge", {"metadata": {"labels": None, "annotations": {"b": "2"}}}),
    ]
    for patch_type, patch in cases:
        expected = kubectl_local_patch(DEPLOY, patch, patch_type, tmp_path)
        assert isinstance(expected, dict), expected
        content_type = JSON_PATCH if patch_type == "json" else MERGE
        assert prune_empty(_patch(patch, content_type)) == prune_empty(expected)


def test_apply_yaml_alias_bomb_is_refused_quickly() -> None:
    lines = [
        "apiVersion: apps/v1",
        "kind: Deployment",
        "metadata: {name: web}",
        "a0: &a0 [x, x, x, x, x, x, x, x, x, x]",
    ]
    lines += [
        f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]"
        for i in range(1, 9)
    ]
    started = time.perf_counter()
    with pytest.raises(PatchError) as info:
        _patch("\n".join(lines).encode(), APPLY)
    assert info.value.code == 400 and "too many nodes" in info.value.message
    assert time.perf_counter() - started < 60  # suite-rules: outer-bound (unguarded, the aliases expand to 10**8 nodes)


def test_deeply_nested_json_is_a_clean_error() -> None:
    body = b"[" * 100_000 + b"]" * 100_000
    for content_type in (JSON_PATCH, MERGE, "application/strategic-merge-patch+json"):
        with pytest.raises(PatchError) as info:
            _patch(body, content_type)
        assert info.value.code == 400
    nested = b'{"a":' * 5000 + b"1" + b"}" * 5000
    with pytest.raises(PatchError):
        _patch(nested, "application/strategic-merge-patch+json")
