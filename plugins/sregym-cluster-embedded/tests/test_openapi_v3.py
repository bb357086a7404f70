"""OpenAPI v3 documents: shape, self-containment, patch metadata, and the real ``kubectl explain``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _fixtures_patch import CaptureServer, discovery_resources, kubectl_path
from sregym_cluster_embedded.apiserver.openapi import build_openapi_v3, component_name, load_schemas

CRONTAB = {
    "group": "stable.example.com",
    "version": "v1",
    "kind": "CronTab",
    "plural": "crontabs",
    "namespaced": True,
    "schema": {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "description": "Desired crontab.",
                "properties": {
                    "cronSpec": {"type": "string", "description": "When to run, in cron syntax."},
                    "replicas": {"type": "integer", "description": "How many copies."},
                },
            }
        },
    },
}
RESOURCES = [
    *discovery_resources(),
    CRONTAB,
    {"group": "", "version": "v1", "kind": "Gizmo", "plural": "gizmos", "namespaced": False},
]


def _refs(value: Any) -> set[str]:
    if isinstance(value, dict):
        found = {value["$ref"]} if isinstance(value.get("$ref"), str) else set()
        return found.union(*(_refs(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_refs(v) for v in value))
    return set()


def test_index_points_at_every_group_version() -> None:
    index, documents = build_openapi_v3(RESOURCES)
    assert set(index["paths"]) == set(documents)
    assert {
        "api/v1",
        "apis/apps/v1",
        "apis/stable.example.com/v1",
        "apis/rbac.authorization.k8s.io/v1",
    } <= set(documents)
    url = index["paths"]["apis/apps/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/apis/apps/v1?hash=") and len(url.split("=")[1]) == 128


def test_documents_are_self_contained() -> None:
    _, documents = build_openapi_v3(RESOURCES)
    for gv, document in documents.items():
        schemas = document["components"]["schemas"]
        for ref in _refs(document):
            assert ref.startswith("#/components/schemas/"), ref
            assert ref.split("/")[-1] in schemas, f"{gv}: dangling {ref}"


def test_patch_operations_let_kubectl_validate_server_side() -> None:
    _, documents = build_openapi_v3(RESOURCES)
    item = documents["apis/apps/v1"]["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]
    patch = item["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {
        "group": "apps",
        "version": "v1",
        "kind": "Deployment",
    }
    assert "fieldValidation" in {p["name"] for p in patch["parameters"]}
    assert set(patch["requestBody"]["content"]) >= {
        "application/strategic-merge-patch+json",
        "application/apply-patch+yaml",
    }
    namespaces = documents["api/v1"]["paths"]["/api/v1/namespaces/{name}"]
    assert namespaces["patch"]["x-kubernetes-group-version-kind"]["kind"] == "Namespace"


def test_schemas_look_like_kube_apiserver_ones() -> None:
    _, documents = build_openapi_v3(RESOURCES)
    schemas = documents["apis/apps/v1"]["components"]["schemas"]
    deployment = schemas["io.k8s.api.apps.v1.Deployment"]
    assert deployment["x-kubernetes-group-version-kind"] == [
        {"group": "apps", "version": "v1", "kind": "Deployment"}
    ]
    assert deployment["description"] == "Deployment enables declarative updates for Pods and ReplicaSets."
    containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    assert containers["items"] == {"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"}
    volumes = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["volumes"]
    assert volumes["x-kubernetes-patch-strategy"] == "merge,retainKeys"
    assert "Attributes:" not in str(schemas)  # client docstring boilerplate is cleaned
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in schemas
    target_port = documents["api/v1"]["components"]["schemas"]["io.k8s.api.core.v1.ServicePort"][
        "properties"
    ]["targetPort"]
    assert target_port["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.util.intstr.IntOrString"}
    ]


def test_crd_and_unknown_kinds() -> None:
    _, documents = build_openapi_v3(RESOURCES)
    crd = documents["apis/stable.example.com/v1"]["components"]["schemas"]["com.example.stable.v1.CronTab"]
    assert crd["x-kubernetes-group-version-kind"] == [
        {"group": "stable.example.com", "version": "v1", "kind": "CronTab"}
    ]
    assert crd["properties"]["spec"]["properties"]["cronSpec"]["type"] == "string"
    assert "metadata" in crd["properties"]
    gizmo = documents["api/v1"]["components"]["schemas"][component_name("", "v1", "Gizmo")]
    assert gizmo["x-kubernetes-group-version-kind"][0]["kind"] == "Gizmo"
    assert CRONTAB["schema"]["properties"].keys() == {"spec"}  # input not mutated


def test_bad_resource_entries_are_skipped() -> None:
    index, documents = build_openapi_v3(
        [{"group": "x"}, "nonsense", {"version": "v1", "kind": "K", "plural": "ks"}]
    )  # type: ignore[list-item]
    assert list(documents) == ["api/v1"]
    assert index["paths"]["api/v1"]["serverRelativeURL"].startswith("/openapi/v3/api/v1?hash=")


def test_build_is_cached_per_resource_set() -> None:
    # (how fast a build is: benchmarks/bench_apiserver.py; here, that the second one is not a build)
    load_schemas()
    resources = [*RESOURCES, {"group": "", "version": "v1", "kind": "Pod", "plural": "pods", "namespaced": True}]
    first = build_openapi_v3(resources)
    again = build_openapi_v3([dict(r) for r in resources])  # an equal set, other objects
    assert again is first
    other = build_openapi_v3(resources[:-1])
    assert other is not first


def test_generated_data_covers_common_kinds() -> None:
    kinds = load_schemas()["kinds"]
    for gvk in ("/v1/Pod", "/v1/Service", "apps/v1/Deployment", "apps/v1/StatefulSet", "batch/v1/CronJob",
                "networking.k8s.io/v1/NetworkPolicy", "autoscaling/v2/HorizontalPodAutoscaler", "autoscaling/v1/Scale",
                "authorization.k8s.io/v1/SelfSubjectAccessReview", "apiextensions.k8s.io/v1/CustomResourceDefinition"):  # fmt: skip
        assert gvk in kinds, gvk
    assert kinds["apps/v1/Deployment"] == "io.k8s.api.apps.v1.Deployment"
    assert kinds["apiextensions.k8s.io/v1/CustomResourceDefinition"].startswith(
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1."
    )


@pytest.fixture(scope="module")
def explain_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    if not kubectl_path():
        pytest.skip("kubectl not installed")
    crd = {("stable.example.com", "v1"): [("crontabs", "CronTab", True, ["get", "list", "patch"])]}
    server = CaptureServer(
        tmp_path_factory.mktemp("openapi"), openapi=build_openapi_v3(RESOURCES), extra_discovery=crd
    ).start()
    yield server
    server.stop()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["explain", "pod.spec.containers"],
            ["FIELD: containers <[]Container>", "image\t<string>", "List of containers belonging to the pod"],
        ),
        (
            ["explain", "pod.spec.restartPolicy"],
            ["FIELD: restartPolicy <string>", "One of Always, OnFailure"],
        ),
        (["explain", "svc.spec.ports.targetPort"], ["FIELD: targetPort <IntOrString>"]),
        (
            ["explain", "deployment", "--recursive"],
            [
                "GROUP:      apps",
                "KIND:       Deployment",
                "containers\t<[]Container> -required-",
                "maxSurge\t<IntOrString>",
            ],
        ),
        (["explain", "deploy.spec.strategy.type"], ["FIELD: type <string>"]),
        (
            ["explain", "crontab.spec"],
            ["GROUP:      stable.example.com", "cronSpec\t<string>", "When to run, in cron syntax."],
        ),
        (["explain", "cm"], ["KIND:       ConfigMap", "data\t<map[string]string>"]),
        (["explain", "pod.spec.containers.resources.limits"], ["FIELD: limits <map[string]Quantity>"]),
    ],
)
def test_kubectl_explain(explain_server: CaptureServer, args: list[str], expected: list[str]) -> None:
    output = explain_server.kubectl(*args).stdout
    for text in expected:
        assert text in output, f"{text!r} not in:\n{output[:3000]}"


@pytest.mark.slow
def test_kubectl_explain_unknown_field(explain_server: CaptureServer, tmp_path: Path) -> None:
    proc = explain_server.kubectl("explain", "pod.spec.nonsense", check=False)
    assert proc.returncode != 0
    assert 'field "nonsense" does not exist' in proc.stderr
