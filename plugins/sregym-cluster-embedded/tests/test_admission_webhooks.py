"""Admission webhooks called by the API server (apiserver/webhooks.py), driven with real kubectl
against a real HTTPS webhook server on loopback: AdmissionReview v1, Service and URL client
configs, caBundle verification, failurePolicy, timeouts, selectors and JSONPatch mutation."""

from __future__ import annotations

import base64
import json
import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from sregym_cluster_embedded.apiserver import tls


class WebhookServer:
    """A real HTTPS webhook; ``behaviour`` decides each answer, ``reviews`` records what it got."""

    def __init__(self, workdir: Path, hosts: list[str]) -> None:
        self.ca, cert, key = tls.generate(hosts)
        (workdir / "hook.crt").write_bytes(cert)
        (workdir / "hook.key").write_bytes(key)
        self.reviews: list[dict] = []
        self.behaviour: dict = {"allowed": True}
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.reviews.append({"path": self.path, **review})
                time.sleep(outer.behaviour.get("delay", 0))
                response = {"uid": review["request"]["uid"], "allowed": outer.behaviour.get("allowed", True)}
                if "message" in outer.behaviour:
                    response["status"] = {"code": 403, "message": outer.behaviour["message"]}
                if "patch" in outer.behaviour:
                    response["patchType"] = "JSONPatch"
                    response["patch"] = base64.b64encode(json.dumps(outer.behaviour["patch"]).encode()).decode()
                body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                   "response": response}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(workdir / "hook.crt"), str(workdir / "hook.key"))
        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address) -> None:
                pass  # failed handshakes (the caBundle test) are the point, not noise

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture()
def hook(tmp_path: Path, namespace: str, kubectl) -> Iterator[WebhookServer]:
    server = WebhookServer(tmp_path, [f"hook.{namespace}.svc", "127.0.0.1"])
    # a Service with hand-made Endpoints at the loopback server (no controllers run here)
    for obj in ({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "hook"},
                 "spec": {"ports": [{"name": "https", "port": 443, "targetPort": server.port}]}},
                {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "hook"},
                 "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https", "port": server.port}]}]}):
        kubectl("create", "-n", namespace, "-f", "-", input=json.dumps(obj))
    created: list[str] = []
    server.created = created  # type: ignore[attr-defined]
    yield server
    for kind_name in created:
        kubectl("delete", kind_name, "--ignore-not-found")
    server.close()


def configure(kubectl, hook: WebhookServer, namespace: str, *, kind: str = "ValidatingWebhookConfiguration",
              failure: str = "Fail", ca: bytes | None = None, service: str = "hook", url: str | None = None,
              timeout: int = 5, resources: tuple[str, ...] = ("pods",), object_selector: dict | None = None,
              namespace_selector: dict | None = None, suffix: str = "") -> str:
    name = f"{namespace}-{kind.lower()[:8]}{suffix}"
    client = {"url": url} if url else {"service": {"namespace": namespace, "name": service, "path": "/check"}}
    client["caBundle"] = base64.b64encode(ca or hook.ca).decode()
    config = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name},
              "webhooks": [{"name": "check.example.com", "admissionReviewVersions": ["v1"], "sideEffects": "None",
                            "failurePolicy": failure, "timeoutSeconds": timeout, "clientConfig": client,
                            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                                       "resources": list(resources)}],
                            "namespaceSelector": namespace_selector if namespace_selector is not None else
                            {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                            "objectSelector": object_selector or {}}]}
    kubectl("apply", "-f", "-", input=json.dumps(config))
    hook.created.append(f"{kind.lower()}/{name}")  # type: ignore[attr-defined]
    return name


def pod(name: str, labels: dict | None = None, memory: str = "256Mi") -> str:
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels or {}},
                       "spec": {"containers": [{"name": "app", "image": "busybox",
                                                "resources": {"limits": {"memory": memory}}}]}})


def create(kubectl, namespace: str, manifest: str, *, check: bool = False):
    return kubectl("create", "-n", namespace, "-f", "-", input=manifest, check=check)


def test_validating_webhook_sees_an_admission_review_and_can_deny(kubectl, namespace, hook) -> None:
    configure(kubectl, hook, namespace)
    assert create(kubectl, namespace, pod("ok")).returncode == 0
    review = hook.reviews[-1]
    assert review["apiVersion"] == "admission.k8s.io/v1" and review["kind"] == "AdmissionReview"
    assert review["path"].startswith("/check?timeout=5s")
    request = review["request"]
    assert request["operation"] == "CREATE" and request["namespace"] == namespace
    assert request["kind"] == {"group": "", "version": "v1", "kind": "Pod"}
    assert request["object"]["metadata"]["name"] == "ok" and request["userInfo"]["username"]
    hook.behaviour = {"allowed": False, "message": "images must come from the internal registry"}
    out = create(kubectl, namespace, pod("denied"))
    assert out.returncode != 0
    assert 'admission webhook "check.example.com" denied the request: images must come from the internal ' \
           "registry" in out.stderr
    assert kubectl("get", "pod", "denied", "-n", namespace, check=False).returncode != 0
    # other kinds do not match the pods rule
    assert kubectl("create", "configmap", "c", "-n", namespace).returncode == 0


def test_fail_closed_without_endpoints_and_ignore_policy(kubectl, namespace, hook) -> None:
    kubectl("delete", "endpoints", "hook", "-n", namespace)
    configure(kubectl, hook, namespace)
    out = create(kubectl, namespace, pod("blocked"))
    assert out.returncode != 0
    assert 'Internal error occurred: failed calling webhook "check.example.com": failed to call webhook: Post ' \
           f'"https://hook.{namespace}.svc:443/check?timeout=5s": no endpoints available for service "hook"' \
           in out.stderr
    configure(kubectl, hook, namespace, failure="Ignore")
    assert create(kubectl, namespace, pod("through")).returncode == 0
    # webhook configurations are never sent to webhooks: a broken one can always be removed
    kubectl("delete", "validatingwebhookconfiguration", f"{namespace}-validati")


def test_ca_bundle_must_sign_the_server_certificate(kubectl, namespace, hook) -> None:
    other_ca, _, _ = tls.generate(["elsewhere"])
    configure(kubectl, hook, namespace, ca=other_ca)
    out = create(kubectl, namespace, pod("untrusted"))
    assert out.returncode != 0
    assert "x509: certificate signed by unknown authority" in out.stderr
    assert hook.reviews == []  # the TLS handshake failed before any review was sent


def test_timeout_seconds_bounds_the_call(kubectl, namespace, hook) -> None:
    # the hook answers after 30 s (its threads are daemons: nothing waits for them); the call is cut after 1 s
    hook.behaviour = {"allowed": True, "delay": 30}
    configure(kubectl, hook, namespace, timeout=1)
    started = time.monotonic()
    out = create(kubectl, namespace, pod("slow"))
    assert out.returncode != 0 and "context deadline exceeded" in out.stderr
    assert time.monotonic() - started < 20  # suite-rules: outer-bound (cut before the hook's own 30 s answer)
    configure(kubectl, hook, namespace, timeout=1, failure="Ignore")
    assert create(kubectl, namespace, pod("slow-ignored")).returncode == 0


def test_selectors_decide_which_objects_are_sent(kubectl, namespace, hook) -> None:
    hook.behaviour = {"allowed": False, "message": "no"}
    configure(kubectl, hook, namespace, object_selector={"matchExpressions": [
        {"key": "app.kubernetes.io/component", "operator": "NotIn", "values": ["admission-webhook"]}]})
    assert create(kubectl, namespace, pod("webhook-itself", {"app.kubernetes.io/component": "admission-webhook"})
                  ).returncode == 0
    assert create(kubectl, namespace, pod("app-pod", {"app": "x"})).returncode != 0
    configure(kubectl, hook, namespace, namespace_selector={"matchLabels": {"team": "other"}})
    assert create(kubectl, namespace, pod("other-namespace-rule", {"app.kubernetes.io/component": "admission-webhook"})
                  ).returncode == 0


def test_mutating_webhook_json_patch_and_server_side_dry_run(kubectl, namespace, hook) -> None:
    hook.behaviour = {"allowed": True, "patch": [
        {"op": "replace", "path": "/spec/containers/0/resources/limits/memory", "value": "16Mi"},
        {"op": "replace", "path": "/spec/containers/0/resources/requests/memory", "value": "16Mi"},
        {"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}]}
    configure(kubectl, hook, namespace, kind="MutatingWebhookConfiguration")
    dry = kubectl("create", "--dry-run=server", "-o", "json", "-n", namespace, "-f", "-", input=pod("dry", {"app": "x"}))
    assert json.loads(dry.stdout)["spec"]["containers"][0]["resources"]["limits"]["memory"] == "16Mi"
    assert kubectl("get", "pod", "dry", "-n", namespace, check=False).returncode != 0
    create(kubectl, namespace, pod("real", {"app": "x"}), check=True)
    stored = json.loads(kubectl("get", "pod", "real", "-n", namespace, "-o", "json").stdout)
    assert stored["spec"]["containers"][0]["resources"]["limits"]["memory"] == "16Mi"
    assert stored["metadata"]["labels"]["mutated"] == "yes"
    # an update is sent as UPDATE with the old object, and patched again
    kubectl("label", "pod", "real", "-n", namespace, "touched=1")
    assert hook.reviews[-1]["request"]["operation"] == "UPDATE"
    assert hook.reviews[-1]["request"]["oldObject"]["metadata"]["name"] == "real"


def test_url_webhooks_only_dial_loopback(kubectl, namespace, hook) -> None:
    configure(kubectl, hook, namespace, url=f"https://127.0.0.1:{hook.port}/check")
    assert create(kubectl, namespace, pod("via-url")).returncode == 0
    assert hook.reviews and hook.reviews[-1]["path"].startswith("/check")
    configure(kubectl, hook, namespace, url="https://192.0.2.1/check")
    out = create(kubectl, namespace, pod("far"))
    assert out.returncode != 0 and "outside this cluster" in out.stderr


def test_webhook_waits_add_up_to_the_request_deadline(kubectl, namespace, hook, monkeypatch) -> None:
    from sregym_cluster_embedded.apiserver import webhooks

    monkeypatch.setattr(webhooks, "REQUEST_DEADLINE", 2.5)
    hook.behaviour = {"allowed": True, "delay": 4}
    for suffix in ("-a", "-b", "-c"):  # each alone is ignored after 1 s; together they pass the deadline
        configure(kubectl, hook, namespace, kind="MutatingWebhookConfiguration", failure="Ignore", timeout=1,
                  suffix=suffix)
    out = create(kubectl, namespace, pod("late"))
    assert out.returncode != 0
    assert "Timeout: request did not complete within requested timeout - context deadline exceeded" in out.stderr


def test_the_clusters_own_components_go_through_webhooks(api_server, kubectl, namespace, hook) -> None:
    """ReplicaSet and Job controllers create pods with the in-process client: admitted the same way."""
    from sregym_cluster_embedded.apiserver.errors import ApiError
    from sregym_cluster_embedded.client import LocalClient

    kubectl("delete", "endpoints", "hook", "-n", namespace)
    configure(kubectl, hook, namespace)
    client = LocalClient(api_server.core)
    with pytest.raises(ApiError) as caught:
        api_server.run(client.create("pods", json.loads(pod("from-controller")), namespace))
    assert caught.value.code == 500 and "failed calling webhook" in str(caught.value)
