"""Subresources beyond the basic verbs: service/pod proxy, ephemeral containers (kubectl debug),
followed logs, binding, status/scale over PUT, the kubernetes Service endpoints, bookmarks."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from conftest import Kubectl, ThreadedApiServer, running_pod


@pytest.fixture()
def upstream() -> Iterator[int]:
    """A tiny HTTP server on 127.0.0.1 standing in for a pod's process."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server API
            body = json.dumps({"path": self.path, "auth": self.headers.get("Authorization")}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()
    thread.join(5)


def test_service_and_pod_proxy(kubectl: Kubectl, namespace: str, api_server: ThreadedApiServer,
                               upstream: int) -> None:
    ns = ["-n", namespace]
    kubectl("create", "service", "clusterip", "web", f"--tcp=80:{upstream}", *ns)
    kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web", "namespace": namespace},
        "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": f"80-{upstream}", "port": upstream}]}],
    }))
    out = json.loads(kubectl("get", "--raw", f"/api/v1/namespaces/{namespace}/services/web:80/proxy/hello?x=1").stdout)
    assert out == {"path": "/hello?x=1", "auth": None}  # the caller's token is never forwarded
    kubectl("create", "service", "clusterip", "empty", "--tcp=80:80", *ns)
    none = kubectl("get", "--raw", f"/api/v1/namespaces/{namespace}/services/empty/proxy/", check=False)
    assert none.returncode == 1 and 'no endpoints available for service "empty"' in none.stderr
    running_pod(api_server, namespace, "solo")
    core = api_server.core

    def point_pod_at_upstream() -> None:
        pods = core.registry.by_key("pods")
        pod = json.loads(json.dumps(core.get(pods, namespace, "solo")))
        pod["status"]["podIP"] = "127.0.0.1"
        core.update(pods, namespace, "solo", pod, subresource="status")

    api_server.call(point_pod_at_upstream)
    out = json.loads(kubectl("get", "--raw", f"/api/v1/namespaces/{namespace}/pods/solo:{upstream}/proxy/p").stdout)
    assert out["path"] == "/p"
    agent = kubectl.as_agent(api_server.agent_kubeconfig)
    denied = agent("get", "--raw", f"/api/v1/namespaces/{namespace}/services/web:80/proxy/", check=False)
    assert denied.returncode == 1 and "forbidden" in denied.stderr


def test_kubectl_debug_adds_ephemeral_container(kubectl: Kubectl, namespace: str,
                                                api_server: ThreadedApiServer) -> None:
    running_pod(api_server, namespace, "solo")
    out = kubectl("debug", "solo", "-n", namespace, "--image=busybox", "--container=dbg", "--", "true")
    assert "Defaulting debug container name" not in out.stdout
    pod = json.loads(kubectl("get", "pod", "solo", "-n", namespace, "-o", "json").stdout)
    eph = pod["spec"]["ephemeralContainers"]
    assert [c["name"] for c in eph] == ["dbg"] and eph[0]["image"] == "busybox"


def test_logs_follow(kubectl: Kubectl, namespace: str, api_server: ThreadedApiServer) -> None:
    running_pod(api_server, namespace, "solo")
    out = kubectl("logs", "-f", "solo", "--tail=1", "-n", namespace, timeout=20).stdout
    assert out.splitlines() == ["log line 5", "followed line"]


def test_binding_status_and_scale_put(k8s_client: Any, namespace: str, api_server: ThreadedApiServer) -> None:
    from kubernetes import client

    core_v1 = client.CoreV1Api(k8s_client)
    core_v1.create_namespaced_pod(namespace, client.V1Pod(
        metadata=client.V1ObjectMeta(name="unbound"),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="busybox")])))
    core_v1.create_namespaced_binding(namespace, client.V1Binding(
        metadata=client.V1ObjectMeta(name="unbound"), target=client.V1ObjectReference(kind="Node", name="node-9")),
        _preload_content=False)
    pod = core_v1.read_namespaced_pod("unbound", namespace)
    assert pod.spec.node_name == "node-9"
    assert any(c.type == "PodScheduled" and c.status == "True" for c in pod.status.conditions)
    pod.status.phase = "Running"
    core_v1.replace_namespaced_pod_status("unbound", namespace, pod)
    assert core_v1.read_namespaced_pod_status("unbound", namespace).status.phase == "Running"
    apps = client.AppsV1Api(k8s_client)
    apps.create_namespaced_stateful_set(namespace, client.V1StatefulSet(
        metadata=client.V1ObjectMeta(name="db"),
        spec=client.V1StatefulSetSpec(
            service_name="db", replicas=1, selector=client.V1LabelSelector(match_labels={"app": "db"}),
            template=client.V1PodTemplateSpec(metadata=client.V1ObjectMeta(labels={"app": "db"}),
                                              spec=client.V1PodSpec(containers=[client.V1Container(
                                                  name="db", image="postgres:16")])))))
    scale = apps.read_namespaced_stateful_set_scale("db", namespace)
    scale.spec.replicas = 3
    apps.replace_namespaced_stateful_set_scale("db", namespace, scale)
    assert apps.read_namespaced_stateful_set("db", namespace).spec.replicas == 3


def test_kubernetes_service_points_at_the_api_server(kubectl: Kubectl, api_server: ThreadedApiServer) -> None:
    ep = json.loads(kubectl("get", "endpoints", "kubernetes", "-n", "default", "-o", "json").stdout)
    assert ep["subsets"][0]["addresses"][0]["ip"] == "127.0.0.1"
    assert ep["subsets"][0]["ports"][0]["port"] == api_server.server.settings.api_port


@pytest.mark.slow
def test_watch_list_bookmark(api_server: ThreadedApiServer, namespace: str) -> None:
    from test_api_fuzz import Http

    conn = Http(api_server)
    try:
        conn.request("POST", f"/api/v1/namespaces/{namespace}/configmaps",
                     json.dumps({"metadata": {"name": "a"}}).encode(), {"Content-Type": "application/json"})
        code, body, _ = conn.request(
            "GET", f"/api/v1/namespaces/{namespace}/configmaps?watch=true&sendInitialEvents=true"
                   "&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1")
        events = [json.loads(line) for line in body.splitlines()]
        assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
        assert events[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
        code, body, _ = conn.request(
            "GET", f"/api/v1/namespaces/{namespace}/configmaps?watch=true&sendInitialEvents=true&timeoutSeconds=1")
        assert code == 422 and json.loads(body)["reason"] == "Invalid"
        code, body, _ = conn.request("GET", f"/api/v1/namespaces/{namespace}/configmaps?watch=1&resourceVersion=1&timeoutSeconds=1")
        assert code == 410 or code == 200
    finally:
        conn.close()


def test_quota_and_limit_range_admission(kubectl: Kubectl, namespace: str) -> None:
    ns = ["-n", namespace]
    kubectl("create", "quota", "q", "--hard=pods=1,count/deployments.apps=1", *ns)
    kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr", "namespace": namespace},
        "spec": {"limits": [{"type": "Container", "default": {"cpu": "250m", "memory": "64Mi"},
                             "defaultRequest": {"cpu": "100m", "memory": "32Mi"}}]}}))
    kubectl("run", "first", "--image=busybox", *ns)
    pod = json.loads(kubectl("get", "pod", "first", "-o", "json", *ns).stdout)
    assert pod["spec"]["containers"][0]["resources"] == {"limits": {"cpu": "250m", "memory": "64Mi"},
                                                         "requests": {"cpu": "100m", "memory": "32Mi"}}
    second = kubectl("run", "second", "--image=busybox", *ns, check=False)
    assert second.returncode == 1
    assert ('pods "second" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1'
            in second.stderr)
    kubectl("create", "deployment", "d1", "--image=nginx", *ns)
    third = kubectl("create", "deployment", "d2", "--image=nginx", *ns, check=False)
    assert third.returncode == 1 and "exceeded quota: q" in third.stderr
    quota = json.loads(kubectl("get", "quota", "q", "-o", "json", *ns).stdout)
    assert quota["status"]["used"]["pods"] == "1"


def test_attach_streams_output(k8s_client: Any, namespace: str, api_server: ThreadedApiServer) -> None:
    from kubernetes import client
    from kubernetes.stream import stream

    running_pod(api_server, namespace, "solo")
    out = stream(client.CoreV1Api(k8s_client).connect_get_namespaced_pod_attach, "solo", namespace,
                 stderr=True, stdin=False, stdout=True, tty=False, _request_timeout=10)
    assert "followed line" in out


@pytest.mark.parametrize("protocol", ["v4.channel.k8s.io", "v5.channel.k8s.io"])
def test_exec_channel_protocols(api_server: ThreadedApiServer, namespace: str, protocol: str) -> None:
    import ssl

    import websocket
    import yaml

    running_pod(api_server, namespace, "solo")
    token = yaml.safe_load(api_server.kubeconfig.read_text())["users"][0]["user"]["token"]
    url = (api_server.url.replace("https://", "wss://") + f"/api/v1/namespaces/{namespace}/pods/solo/exec"
           "?command=sh&command=-c&command=echo%20out%3B%20echo%20err%20%3E%262%3B%20exit%205"
           "&container=main&stdout=true&stderr=true")
    ws = websocket.create_connection(url, header=[f"Authorization: Bearer {token}"], subprotocols=[protocol],
                                     sslopt={"cert_reqs": ssl.CERT_REQUIRED,
                                             "ca_certs": str(api_server.state_dir / "pki" / "ca.crt")}, timeout=10)
    try:
        assert ws.getsubprotocol() == protocol
        channels: dict[int, bytes] = {}
        while 3 not in channels:
            frame = ws.recv()
            channels[frame[0]] = channels.get(frame[0], b"") + frame[1:]
    finally:
        ws.close()
    assert channels[1] == b"out\n" and channels[2] == b"err\n"
    status = json.loads(channels[3])
    assert status["status"] == "Failure" and status["reason"] == "NonZeroExitCode"
    assert status["details"]["causes"] == [{"reason": "ExitCode", "message": "5"}]
