"""The official ``kubernetes`` Python client against the embedded API server."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from kubernetes import client, dynamic, watch
from kubernetes.client.rest import ApiException
from kubernetes.stream import stream

from conftest import ThreadedApiServer, python_client, running_pod


def deployment(name: str) -> client.V1Deployment:
    return client.V1Deployment(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1DeploymentSpec(
            replicas=1,
            selector=client.V1LabelSelector(match_labels={"app": name}),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels={"app": name}),
                spec=client.V1PodSpec(containers=[client.V1Container(
                    name=name, image="nginx:1.25", env=[client.V1EnvVar(name="A", value="1")])]))))


def test_version_and_typed_crud(k8s_client: Any, namespace: str) -> None:
    assert client.VersionApi(k8s_client).get_code().git_version.startswith("v1.")
    core = client.CoreV1Api(k8s_client)
    apps = client.AppsV1Api(k8s_client)
    core.create_namespaced_config_map(namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c"),
                                                                    data={"k": "v"}))
    assert core.read_namespaced_config_map("c", namespace).data == {"k": "v"}
    apps.create_namespaced_deployment(namespace, deployment("web"))
    d = apps.read_namespaced_deployment("web", namespace)
    assert d.spec.strategy.type == "RollingUpdate" and d.spec.revision_history_limit == 10  # defaulted
    # a dict body is sent as a strategic merge patch: env merges by name, the image is kept
    apps.patch_namespaced_deployment("web", namespace, {"spec": {"template": {"spec": {"containers": [
        {"name": "web", "env": [{"name": "B", "value": "2"}]}]}}}})
    c = apps.read_namespaced_deployment("web", namespace).spec.template.spec.containers[0]
    assert c.image == "nginx:1.25" and sorted(e.name for e in c.env) == ["A", "B"]
    # a list body is a JSON patch
    apps.patch_namespaced_deployment("web", namespace, [{"op": "replace", "path": "/spec/replicas", "value": 2}])
    scale = apps.read_namespaced_deployment_scale("web", namespace)
    assert scale.spec.replicas == 2 and scale.status.selector == "app=web"
    apps.patch_namespaced_deployment_scale("web", namespace, {"spec": {"replicas": 5}})
    assert apps.read_namespaced_deployment("web", namespace).spec.replicas == 5
    with pytest.raises(ApiException) as err:
        apps.read_namespaced_deployment("missing", namespace)
    assert err.value.status == 404 and json.loads(err.value.body)["reason"] == "NotFound"
    stale = apps.read_namespaced_deployment("web", namespace)
    apps.patch_namespaced_deployment("web", namespace, {"metadata": {"labels": {"x": "1"}}})
    stale.spec.replicas = 1
    with pytest.raises(ApiException) as err:
        apps.replace_namespaced_deployment("web", namespace, stale)
    assert err.value.status == 409
    apps.delete_namespaced_deployment("web", namespace)
    assert apps.list_namespaced_deployment(namespace).items == []


def test_watch_with_timeout(k8s_client: Any, namespace: str) -> None:
    core = client.CoreV1Api(k8s_client)
    core.create_namespaced_config_map(namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="w1")))
    started = time.monotonic()
    events = [(e["type"], e["object"].metadata.name)
              for e in watch.Watch().stream(core.list_namespaced_config_map, namespace, timeout_seconds=1)]
    assert events == [("ADDED", "w1")]
    assert time.monotonic() - started < 60  # suite-rules: outer-bound (a watch ignoring timeout_seconds never ends)


def test_logs_and_exec(k8s_client: Any, namespace: str, api_server: ThreadedApiServer) -> None:
    running_pod(api_server, namespace, "solo")
    core = client.CoreV1Api(k8s_client)
    assert core.read_namespaced_pod_log("solo", namespace, tail_lines=1) == "log line 5\n"
    out = stream(core.connect_get_namespaced_pod_exec, "solo", namespace, command=["echo", "hello-from-exec"],
                 stderr=True, stdin=False, stdout=True, tty=False)
    assert out == "hello-from-exec\n"


def test_access_reviews(k8s_client: Any, api_server: ThreadedApiServer, namespace: str) -> None:
    authz = client.AuthorizationV1Api(k8s_client)
    review = client.V1SelfSubjectAccessReview(spec=client.V1SelfSubjectAccessReviewSpec(
        resource_attributes=client.V1ResourceAttributes(verb="delete", resource="pods", namespace=namespace)))
    assert authz.create_self_subject_access_review(review).status.allowed is True
    agent = python_client(api_server.agent_kubeconfig)
    try:
        agent_authz = client.AuthorizationV1Api(agent)
        assert agent_authz.create_self_subject_access_review(review).status.allowed is False
        with pytest.raises(ApiException) as err:
            client.CoreV1Api(agent).list_namespaced_pod(namespace)
        assert err.value.status == 403
        sar = client.V1SubjectAccessReview(spec=client.V1SubjectAccessReviewSpec(
            user="sregym-agent", groups=["sregym:agents"],
            resource_attributes=client.V1ResourceAttributes(verb="list", resource="nodes")))
        assert authz.create_subject_access_review(sar).status.allowed is True
        with pytest.raises(ApiException) as err:
            client.AuthorizationV1Api(agent).create_subject_access_review(sar)
        assert err.value.status == 403
    finally:
        agent.close()


def test_service_account_token_authenticates(k8s_client: Any, api_server: ThreadedApiServer, namespace: str,
                                             tmp_path: Any) -> None:
    core = client.CoreV1Api(k8s_client)
    core.create_namespaced_service_account(namespace, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="bot")))
    rbac = client.RbacAuthorizationV1Api(k8s_client)
    rbac.create_namespaced_role(namespace, client.V1Role(
        metadata=client.V1ObjectMeta(name="cm-reader"),
        rules=[client.V1PolicyRule(api_groups=[""], resources=["configmaps"], verbs=["get", "list"],
                                   resource_names=None)]))
    rbac.create_namespaced_role_binding(namespace, client.V1RoleBinding(
        metadata=client.V1ObjectMeta(name="bot-reads"),
        role_ref=client.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="Role", name="cm-reader"),
        subjects=[client.RbacV1Subject(kind="ServiceAccount", name="bot", namespace=namespace)]))
    tr = core.create_namespaced_service_account_token("bot", namespace, client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600)))
    cfg = client.Configuration()
    cfg.host = api_server.url
    cfg.ssl_ca_cert = str(api_server.state_dir / "pki" / "ca.crt")
    cfg.api_key = {"authorization": f"Bearer {tr.status.token}"}
    bot = client.ApiClient(cfg)
    try:
        who = client.AuthenticationV1Api(bot).create_self_subject_review(client.V1SelfSubjectReview())
        assert who.status.user_info.username == f"system:serviceaccount:{namespace}:bot"
        assert "system:serviceaccounts" in who.status.user_info.groups
        assert client.CoreV1Api(bot).list_namespaced_config_map(namespace).items is not None
        with pytest.raises(ApiException) as err:
            client.CoreV1Api(bot).list_namespaced_secret(namespace)
        assert err.value.status == 403
        assert 'User "system:serviceaccount:' in json.loads(err.value.body)["message"]
        # deleting the service account revokes its tokens
        core.delete_namespaced_service_account("bot", namespace)
        with pytest.raises(ApiException) as err:
            client.CoreV1Api(bot).list_namespaced_config_map(namespace)
        assert err.value.status == 401
    finally:
        bot.close()


def test_dynamic_client_and_crd(k8s_client: Any, namespace: str) -> None:
    dyn = dynamic.DynamicClient(k8s_client)
    crds = dyn.resources.get(api_version="apiextensions.k8s.io/v1", kind="CustomResourceDefinition")
    group = f"{namespace}.example.org"
    crds.create(body={
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"things.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": "things", "singular": "thing", "kind": "Thing"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {"type": "object",
                                                              "x-kubernetes-preserve-unknown-fields": True}}}]},
    })
    dyn = dynamic.DynamicClient(k8s_client)  # fresh discovery
    things = dyn.resources.get(api_version=f"{group}/v1", kind="Thing")
    things.create(namespace=namespace, body={"apiVersion": f"{group}/v1", "kind": "Thing",
                                             "metadata": {"name": "t1"}, "spec": {"color": "red"}})
    things.patch(namespace=namespace, name="t1", body={"spec": {"color": "blue"}},
                 content_type="application/merge-patch+json")
    got = things.get(namespace=namespace, name="t1")
    assert got.spec.color == "blue" and got.metadata.generation == 2
    assert [i.metadata.name for i in things.get(namespace=namespace).items] == ["t1"]
    crds.delete(name=f"things.{group}")
