"""Store semantics through LocalClient: bookkeeping, concurrency, selectors, deletion, watch, snapshots."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sregym_cluster_embedded.apiserver.errors import ApiError
from sregym_cluster_embedded.apiserver.selectors import parse_field_selector, parse_label_selector
from sregym_cluster_embedded.client import LocalClient, new_local_cluster


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def deployment(name: str = "web", replicas: int = 1, labels: dict[str, str] | None = None) -> dict:
    return {
        "metadata": {"name": name, "labels": labels or {"app": name}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": name, "image": "nginx"}]}}},
    }


def pod(name: str, labels: dict[str, str] | None = None, node: str | None = None, phase: str | None = None) -> dict:
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": spec}


@pytest.fixture()
def c() -> LocalClient:
    return new_local_cluster()


def test_bootstrap_objects(c: LocalClient) -> None:
    names = [n["metadata"]["name"] for n in run(c.list("namespaces"))]
    assert names == ["default", "kube-node-lease", "kube-public", "kube-system"]
    svc = run(c.get("services", "kubernetes", "default"))
    assert svc["spec"]["clusterIP"].startswith(c.settings.service_cidr_prefix + ".")
    assert run(c.get("serviceaccounts", "default", "kube-system"))["metadata"]["uid"]
    assert run(c.get("clusterroles.rbac.authorization.k8s.io", "cluster-admin"))["rules"]


def test_create_bookkeeping_and_generation(c: LocalClient) -> None:
    d = run(c.create("deployments.apps", deployment(), "default"))
    meta = d["metadata"]
    assert meta["uid"] and meta["creationTimestamp"].endswith("Z") and meta["generation"] == 1
    assert int(meta["resourceVersion"]) > 1
    assert d["apiVersion"] == "apps/v1" and d["kind"] == "Deployment"
    # metadata-only change: generation stays; spec change: generation bumps
    d2 = run(c.patch("deployments.apps", "web", {"metadata": {"labels": {"x": "y"}}}, "default"))
    assert d2["metadata"]["generation"] == 1
    d3 = run(c.patch("deployments.apps", "web", {"spec": {"replicas": 4}}, "default"))
    assert d3["metadata"]["generation"] == 2
    assert int(d3["metadata"]["resourceVersion"]) > int(d2["metadata"]["resourceVersion"])
    # status writes go through the subresource and never bump generation
    d4 = run(c.patch("deployments.apps", "web", {"status": {"replicas": 4}}, "default", subresource="status"))
    assert d4["status"] == {"replicas": 4} and d4["metadata"]["generation"] == 2
    # ... and a main-resource update cannot change status
    d4["status"] = {"replicas": 99}
    d5 = run(c.update("deployments.apps", d4))
    assert d5["status"] == {"replicas": 4}


def test_noop_update_keeps_resource_version(c: LocalClient) -> None:
    cm = run(c.create("configmaps", {"metadata": {"name": "c"}, "data": {"a": "1"}}, "default"))
    again = run(c.update("configmaps", cm))
    assert again["metadata"]["resourceVersion"] == cm["metadata"]["resourceVersion"]


def test_optimistic_concurrency(c: LocalClient) -> None:
    cm = run(c.create("configmaps", {"metadata": {"name": "c"}, "data": {"a": "1"}}, "default"))
    cm["data"]["a"] = "2"
    run(c.update("configmaps", cm))
    cm["data"]["a"] = "3"
    with pytest.raises(ApiError) as err:
        run(c.update("configmaps", cm))
    assert err.value.code == 409
    assert "the object has been modified" in err.value.message
    assert err.value.status["reason"] == "Conflict"


def test_generate_name_and_already_exists(c: LocalClient) -> None:
    a = run(c.create("configmaps", {"metadata": {"generateName": "job-"}}, "default"))
    assert a["metadata"]["name"].startswith("job-") and len(a["metadata"]["name"]) == 9
    run(c.create("configmaps", {"metadata": {"name": "x"}}, "default"))
    with pytest.raises(ApiError) as err:
        run(c.create("configmaps", {"metadata": {"name": "x"}}, "default"))
    assert err.value.code == 409 and err.value.reason == "AlreadyExists"
    assert err.value.message == 'configmaps "x" already exists'


def test_invalid_names_and_missing_namespace(c: LocalClient) -> None:
    with pytest.raises(ApiError) as err:
        run(c.create("configmaps", {"metadata": {"name": "Bad_Name"}}, "default"))
    assert err.value.code == 422 and 'ConfigMap "Bad_Name" is invalid: metadata.name' in err.value.message
    with pytest.raises(ApiError) as err:
        run(c.create("configmaps", {"metadata": {"name": "ok"}}, "nope"))
    assert err.value.code == 404 and err.value.message == 'namespaces "nope" not found'
    with pytest.raises(ApiError) as err:
        run(c.create("configmaps", {"metadata": {}}, "default"))
    assert err.value.code == 422


def test_finalizers_hold_deletion(c: LocalClient) -> None:
    run(c.create("configmaps", {"metadata": {"name": "f", "finalizers": ["example.com/hold"]}}, "default"))
    run(c.delete("configmaps", "f", "default"))
    held = run(c.get("configmaps", "f", "default"))
    assert held["metadata"]["deletionTimestamp"]
    held["metadata"]["finalizers"] = []
    run(c.update("configmaps", held))
    with pytest.raises(ApiError) as err:
        run(c.get("configmaps", "f", "default"))
    assert err.value.code == 404


def test_pod_graceful_deletion(c: LocalClient) -> None:
    run(c.create("nodes", {"metadata": {"name": "node-1"}}))
    run(c.create("pods", pod("unscheduled"), "default"))
    run(c.delete("pods", "unscheduled", "default"))
    assert run(c.list("pods", "default", field_selector="metadata.name=unscheduled")) == []
    run(c.create("pods", pod("bound", node="node-1"), "default"))
    run(c.delete("pods", "bound", "default"))
    p = run(c.get("pods", "bound", "default"))
    assert p["metadata"]["deletionGracePeriodSeconds"] == 30 and p["metadata"]["deletionTimestamp"]
    # the kubelet finishes the deletion with grace 0
    run(c.delete("pods", "bound", "default", grace_period=0))
    assert run(c.list("pods", "default")) == []


def test_pod_spec_is_mostly_immutable(c: LocalClient) -> None:
    run(c.create("pods", pod("p"), "default"))
    with pytest.raises(ApiError) as err:
        run(c.patch("pods", "p", {"spec": {"restartPolicy": "Never"}}, "default"))
    assert err.value.code == 422 and "pod updates may not change fields" in err.value.message
    p = run(c.patch("pods", "p", {"spec": {"containers": [{"name": "main", "image": "busybox:2"}]}}, "default",
                    patch_type="strategic"))
    assert p["spec"]["containers"][0]["image"] == "busybox:2"


def test_namespace_deletion_sets_terminating(c: LocalClient) -> None:
    run(c.create("namespaces", {"metadata": {"name": "gone"}}))
    run(c.delete("namespaces", "gone"))
    ns = run(c.get("namespaces", "gone"))
    assert ns["status"]["phase"] == "Terminating"
    with pytest.raises(ApiError) as err:
        run(c.create("configmaps", {"metadata": {"name": "x"}}, "gone"))
    assert err.value.code == 403 and "is being terminated" in err.value.message


def test_label_and_field_selectors(c: LocalClient) -> None:
    for name, labels in (("a", {"app": "web", "tier": "fe"}), ("b", {"app": "web"}), ("c", {"app": "db"})):
        run(c.create("pods", pod(name, labels), "default"))
    names = lambda **kw: [p["metadata"]["name"] for p in run(c.list("pods", "default", **kw))]  # noqa: E731
    assert names(label_selector="app=web") == ["a", "b"]
    assert names(label_selector="app==web,tier") == ["a"]
    assert names(label_selector="app!=web") == ["c"]
    assert names(label_selector="app in (db, web),!tier") == ["b", "c"]
    assert names(label_selector="app notin (web)") == ["c"]
    assert names(field_selector="metadata.name!=a,status.phase=Pending") == ["b", "c"]
    assert names(field_selector="spec.nodeName=") == ["a", "b", "c"]
    with pytest.raises(ApiError) as err:
        names(field_selector="spec.bogus=1")
    assert err.value.code == 400 and "field label not supported: spec.bogus" in err.value.message
    for bad in ("app in (web", "a=b=c,", "=x", "app in (Bad Value)"):
        with pytest.raises(ApiError) as err:
            parse_label_selector(bad)
        assert err.value.code == 400
    assert parse_field_selector("involvedObject.name=x,involvedObject.uid=u", "events") is not None


def test_limit_and_continue(c: LocalClient) -> None:
    for i in range(7):
        run(c.create("configmaps", {"metadata": {"name": f"cm-{i}"}}, "default"))
    rt = c.core.registry.by_key("configmaps")
    seen, token = [], None
    while True:
        items, _, token, remaining = c.core.list(rt, "default", limit=3, continue_token=token)
        seen += [o["metadata"]["name"] for o in items]
        if not token:
            break
        assert remaining and remaining > 0
    assert seen == [f"cm-{i}" for i in range(7)]
    with pytest.raises(ApiError):
        c.core.list(rt, "default", limit=3, continue_token="!!!not-a-token")


def test_dry_run_stores_nothing(c: LocalClient) -> None:
    rt = c.core.registry.by_key("configmaps")
    out = c.core.create(rt, "default", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dry"}},
                        dry_run=True)
    assert out["metadata"]["name"] == "dry"
    assert c.core.store.get("configmaps", "default", "dry") is None


def test_watch_semantics(c: LocalClient) -> None:
    async def scenario() -> list[tuple[str, str]]:
        await c.create("configmaps", {"metadata": {"name": "pre", "labels": {"w": "1"}}}, "default")
        events: list[tuple[str, str]] = []

        async def consume() -> None:
            async for event_type, obj in c.watch("configmaps", "default", label_selector="w=1"):
                events.append((event_type, obj["metadata"]["name"]))

        task = asyncio.create_task(consume())
        await asyncio.sleep(0)
        await c.create("configmaps", {"metadata": {"name": "new", "labels": {"w": "1"}}}, "default")
        await c.create("configmaps", {"metadata": {"name": "other"}}, "default")
        await c.patch("configmaps", "new", {"data": {"k": "v"}}, "default")
        await c.patch("configmaps", "new", {"metadata": {"labels": {"w": "2"}}}, "default")  # leaves the selection
        await c.delete("configmaps", "pre", "default")
        deadline = asyncio.get_running_loop().time() + 30  # the watcher's turn comes: the bound only catches a hang
        while len(events) < 5 and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)  # and nothing more arrives
        task.cancel()
        return events

    assert run(scenario()) == [("ADDED", "pre"), ("ADDED", "new"), ("MODIFIED", "new"), ("DELETED", "new"),
                               ("DELETED", "pre")]


def test_watch_resumes_from_resource_version(c: LocalClient) -> None:
    async def scenario() -> list[str]:
        first = await c.create("configmaps", {"metadata": {"name": "one"}}, "default")
        await c.create("configmaps", {"metadata": {"name": "two"}}, "default")
        out = []
        async for event_type, obj in c.watch("configmaps", "default",
                                             resource_version=first["metadata"]["resourceVersion"]):
            out.append(f"{event_type} {obj['metadata']['name']}")
            break
        return out

    assert run(scenario()) == ["ADDED two"]


def test_events_aggregate(c: LocalClient) -> None:
    d = run(c.create("deployments.apps", deployment(), "default"))
    for _ in range(3):
        run(c.create_event(d, "ScalingReplicaSet", "Scaled up replica set web-1 to 1",
                           component="deployment-controller"))
    events = run(c.list("events", "default", field_selector=f"involvedObject.uid={d['metadata']['uid']}"))
    assert len(events) == 1 and events[0]["count"] == 3
    assert events[0]["involvedObject"]["kind"] == "Deployment"
    # the same event seen through events.k8s.io/v1
    v1 = run(c.list("events.events.k8s.io", "default"))
    assert v1[0]["regarding"]["name"] == "web" and v1[0]["note"].startswith("Scaled up")


def test_crd_served_generically(c: LocalClient) -> None:
    crd = {
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.size",
                                                                        "statusReplicasPath": ".status.size"}},
                               "schema": {"openAPIV3Schema": {"type": "object"}}}]},
    }
    created = run(c.create("customresourcedefinitions.apiextensions.k8s.io", crd))
    conds = {x["type"]: x["status"] for x in created["status"]["conditions"]}
    assert conds["Established"] == "True"
    w = run(c.create("widgets.example.com", {"metadata": {"name": "w1"}, "spec": {"size": 2}}, "default"))
    assert w["apiVersion"] == "example.com/v1" and w["metadata"]["generation"] == 1
    rt = c.core.registry.by_key("widgets.example.com")
    assert c.core.get_scale(rt, "default", "w1")["spec"]["replicas"] == 2
    run(c.delete("customresourcedefinitions.apiextensions.k8s.io", "widgets.example.com"))
    with pytest.raises(ApiError):
        c.core.registry.by_key("widgets.example.com")


def test_snapshot_restore_is_a_diff(c: LocalClient) -> None:
    run(c.create("configmaps", {"metadata": {"name": "keep"}, "data": {"a": "1"}}, "default"))
    blob = c.core.store.snapshot()
    run(c.patch("configmaps", "keep", {"data": {"a": "2"}}, "default"))
    run(c.create("configmaps", {"metadata": {"name": "extra"}}, "default"))
    rv_before = c.core.store.rv
    c.core.store.restore(blob)
    assert run(c.get("configmaps", "keep", "default"))["data"] == {"a": "1"}
    assert not run(c.list("configmaps", "default", field_selector="metadata.name=extra"))
    assert c.core.store.rv > rv_before  # resourceVersions keep growing for watchers
    with pytest.raises(ValueError):
        c.core.store.restore(b"garbage")


def test_service_cluster_ip_allocation(c: LocalClient) -> None:
    a = run(c.create("services", {"metadata": {"name": "a"}, "spec": {"ports": [{"port": 80}]}}, "default"))
    b = run(c.create("services", {"metadata": {"name": "b"}, "spec": {"ports": [{"port": 80}]}}, "default"))
    assert a["spec"]["clusterIP"] != b["spec"]["clusterIP"]
    with pytest.raises(ApiError) as err:
        run(c.create("services", {"metadata": {"name": "c"}, "spec": {"clusterIP": a["spec"]["clusterIP"],
                                                                      "ports": [{"port": 80}]}}, "default"))
    assert err.value.code == 422 and "already allocated" in err.value.message
    headless = run(c.create("services", {"metadata": {"name": "h"}, "spec": {"clusterIP": "None"}}, "default"))
    assert headless["spec"]["clusterIP"] == "None"
    run(c.delete("services", "a", "default"))
    again = run(c.create("services", {"metadata": {"name": "d"}, "spec": {"ports": [{"port": 80}]}}, "default"))
    assert again["spec"]["clusterIP"] == a["spec"]["clusterIP"]  # freed addresses are reused


def test_secret_string_data(c: LocalClient) -> None:
    s = run(c.create("secrets", {"metadata": {"name": "s"}, "stringData": {"pw": "hunter2"}}, "default"))
    assert s["data"] == {"pw": "aHVudGVyMg=="} and "stringData" not in s and s["type"] == "Opaque"
    with pytest.raises(ApiError) as err:
        run(c.create("secrets", {"metadata": {"name": "t"}, "data": {"x": "%%%"}}, "default"))
    assert err.value.code == 400


def test_quota_usage_is_recounted() -> None:
    pytest.importorskip("sregym_cluster_embedded.apiserver.admission")

    async def scenario() -> list[str]:
        c = new_local_cluster()
        seen = []
        await c.create("resourcequotas", {"metadata": {"name": "q"}, "spec": {"hard": {"pods": "5"}}}, "default")
        await asyncio.sleep(0)
        seen.append((await c.get("resourcequotas", "q", "default"))["status"]["used"]["pods"])
        for name in ("a", "b"):
            await c.create("pods", pod(name), "default")
        seen.append((await c.get("resourcequotas", "q", "default"))["status"]["used"]["pods"])
        await c.delete("pods", "a", "default")
        await asyncio.sleep(0)
        seen.append((await c.get("resourcequotas", "q", "default"))["status"]["used"]["pods"])
        return seen

    assert run(scenario()) == ["0", "2", "1"]


def test_field_validation_messages(c: LocalClient) -> None:
    d = deployment()
    d["spec"]["replicas"] = -1
    d["spec"]["template"]["spec"]["containers"].append({"name": "web", "image": "x", "resources": {
        "requests": {"memory": "64Mi"}, "limits": {"memory": "10Mi"}}})
    with pytest.raises(ApiError) as err:
        run(c.create("deployments.apps", d, "default"))
    assert err.value.code == 422
    assert err.value.message == (
        'Deployment.apps "web" is invalid: [spec.template.spec.containers[1].name: Duplicate value: "web", '
        'spec.template.spec.containers[1].resources.requests: Invalid value: "64Mi": must be less than or equal '
        "to memory limit of 10Mi, spec.replicas: Invalid value: -1: must be greater than or equal to 0]")
    assert [cause["field"] for cause in err.value.status["details"]["causes"]][-1] == "spec.replicas"
    run(c.create("deployments.apps", deployment(), "default"))
    with pytest.raises(ApiError) as err:
        run(c.patch("deployments.apps", "web", {"spec": {"template": {"spec": {"containers": [
            {"name": "web", "resources": {"limits": {"cpu": "lots"}}}]}}}}, "default", patch_type="strategic"))
    assert err.value.code == 400 and "quantities must match the regular expression" in err.value.message
    with pytest.raises(ApiError) as err:
        run(c.create("services", {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 70000}]}}, "default"))
    assert err.value.message == ('Service "s" is invalid: spec.ports[0].port: Invalid value: 70000: must be between '
                                 "1 and 65535, inclusive")


MALFORMED = [
    ("services", {"spec": "x"}), ("services", {"spec": {"ports": "x"}}),
    ("services", {"spec": {"clusterIP": 5, "ports": [{"port": 80}]}}), ("pods", {"spec": "x"}),
    ("pods", {"spec": {"containers": "x"}}),
    ("pods", {"spec": {"containers": [{"name": "a", "image": "b", "resources": {"requests": {"cpu": [1]}}}]}}),
    ("deployments.apps", {"spec": {"selector": {"matchLabels": "x"}, "template": 5}}),
    ("deployments.apps", {"spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": "x"}}}}),
    ("secrets", {"data": {"a": 5}}), ("secrets", {"stringData": "x"}),
    ("customresourcedefinitions.apiextensions.k8s.io", {"spec": "x"}),
    ("customresourcedefinitions.apiextensions.k8s.io",
     {"spec": {"group": "y", "names": {"plural": "xs", "kind": "X"}, "versions": [{"storage": True}]}}),
    ("namespaces", {"spec": "x"}), ("resourcequotas", {"spec": {"hard": "x"}}),
    ("events", {"involvedObject": "x"}), ("poddisruptionbudgets.policy", {"spec": {"selector": "x"}}),
    ("clusterrolebindings.rbac.authorization.k8s.io", {"subjects": "x", "roleRef": 5}),
    ("clusterroles.rbac.authorization.k8s.io", {"rules": "x"}),
    ("clusterroles.rbac.authorization.k8s.io", {"rules": [5, {"verbs": 3}]}),
]


@pytest.mark.parametrize(("resource", "body"), MALFORMED)
def test_malformed_shapes_are_rejected_not_crashed(c: LocalClient, resource: str, body: dict) -> None:
    body = {"metadata": {"name": "xs.y" if "customresource" in resource else "bad"}, **body}
    with pytest.raises(ApiError) as err:
        run(c.create(resource, body, "default"))
    assert err.value.code in (400, 422), err.value.message
    # authorization keeps working whatever is stored
    from sregym_cluster_embedded.apiserver.rbac import Attributes, Authorizer, UserInfo

    assert Authorizer(c.core).allowed(UserInfo(name="u"), Attributes(verb="get", resource="pods")) is False
