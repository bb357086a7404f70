"""Which manifest documents a deploy applies again on a kept cluster (sregym_core.unchanged): only
the ones a live object does not already hold as written; a doubt applies."""

from __future__ import annotations

import base64
import copy

from sregym_core.unchanged import LAST_APPLIED, covers, document_covered, documents_to_apply

DEPLOYMENT = {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "geo", "namespace": "hotel", "labels": {"tier": "service"}},
    "spec": {"replicas": 1, "template": {"spec": {"containers": [
        {"name": "geo", "image": "geo:1.0", "args": ["geo"], "env": [{"name": "A", "value": "1"}]}]}}},
}


def _live(document):
    """The document as the server returns it: defaults and bookkeeping added."""
    live = copy.deepcopy(document)
    live["metadata"].update(uid="u-1", resourceVersion="7", labels={**document["metadata"]["labels"], "extra": "x"})
    container = live["spec"]["template"]["spec"]["containers"][0]
    container.update(imagePullPolicy="IfNotPresent", terminationMessagePath="/dev/termination-log")
    live["spec"]["strategy"] = {"type": "RollingUpdate"}
    live["status"] = {"replicas": 1}
    return live


def test_a_live_object_with_defaults_and_extra_keys_covers_its_document():
    assert document_covered(DEPLOYMENT, _live(DEPLOYMENT))


def test_every_changed_value_is_seen():
    live = _live(DEPLOYMENT)
    for path, value in ((("spec", "replicas"), 2), (("metadata", "labels", "tier"), "db"),
                        (("spec", "template", "spec", "containers", 0, "image"), "geo:9.9"),
                        (("spec", "template", "spec", "containers", 0, "args", 0), "rate")):
        changed = copy.deepcopy(live)
        node = changed
        for step in path[:-1]:
            node = node[step]
        node[path[-1]] = value
        assert not document_covered(DEPLOYMENT, changed), path


def test_lists_must_match_item_by_item_and_types_must_match():
    live = _live(DEPLOYMENT)
    live["spec"]["template"]["spec"]["containers"][0]["env"].append({"name": "B", "value": "2"})
    assert not document_covered(DEPLOYMENT, live)  # the apply would leave B, but a doubt applies
    assert not covers({"port": 80}, {"port": "80"})
    assert not covers({"enabled": True}, {"enabled": 1})
    assert not covers({"enabled": 1}, {"enabled": True})
    assert covers({"weight": 1}, {"weight": 1.0})


def test_a_null_field_is_covered_only_where_the_live_object_lacks_it():
    assert covers({"spec": {"replicas": None}}, {"spec": {}})
    assert not covers({"spec": {"replicas": None}}, {"spec": {"replicas": 3}})


def test_a_missing_object_or_one_carrying_a_last_applied_record_is_applied():
    assert not document_covered(DEPLOYMENT, None)
    live = _live(DEPLOYMENT)
    live["metadata"]["annotations"] = {LAST_APPLIED: "{}"}
    assert not document_covered(DEPLOYMENT, live)


def test_a_secrets_string_data_is_compared_as_the_server_stores_it():
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "hotel"},
              "stringData": {"password": "s3cret"}}
    stored = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "hotel", "uid": "u"},
              "data": {"password": base64.b64encode(b"s3cret").decode()}, "type": "Opaque"}
    assert document_covered(secret, stored)
    stored["data"]["password"] = base64.b64encode(b"other").decode()
    assert not document_covered(secret, stored)


def test_documents_to_apply_keeps_order_and_matches_by_group_kind_namespace_and_name():
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "geo", "namespace": "hotel"},
              "data": {"k": "v"}}
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "hotel"}}
    other_ns = copy.deepcopy(config)
    other_ns["metadata"]["namespace"] = "elsewhere"
    live = [_live(DEPLOYMENT), {**namespace, "metadata": {"name": "hotel", "uid": "n"}}, other_ns]
    assert documents_to_apply([namespace, DEPLOYMENT, config], live) == [config]
    # a document without a namespace matches the one live object of its kind and name
    bare = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "geo"}, "data": {"k": "v"}}
    assert documents_to_apply([bare], [other_ns]) == []
    assert documents_to_apply([bare], [other_ns, {**copy.deepcopy(config)}]) == [bare]
