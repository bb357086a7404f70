"""Ingress hosts, paths and backends are validated as the real API server validates them (they flow
into the ingress controller's nginx configuration): 422 Invalid naming the field, through real kubectl."""

from __future__ import annotations

import json

import pytest

from sregym_cluster_embedded.controllers.ingresstls import tls_secret_names


def _ingress(namespace: str, host: str | None = "shop.test", path: str = "/", path_type: str | None = "Prefix",
             service: str = "web", tls_hosts: tuple[str, ...] = ()) -> str:
    entry: dict = {"path": path, "backend": {"service": {"name": service, "port": {"number": 80}}}}
    if path_type is not None:
        entry["pathType"] = path_type
    rule: dict = {"http": {"paths": [entry]}}
    if host is not None:
        rule["host"] = host
    spec: dict = {"ingressClassName": "nginx", "rules": [rule]}
    if tls_hosts:
        spec["tls"] = [{"hosts": list(tls_hosts), "secretName": "shop-tls"}]
    return json.dumps({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                       "metadata": {"name": "shop", "namespace": namespace}, "spec": spec})


@pytest.mark.parametrize(("kwargs", "field", "words"), [
    ({"host": "shop.test; location /t { alias /var/run/secrets/; }"}, "spec.rules[0].host", "RFC 1123 subdomain"),
    ({"host": "Shop.Test"}, "spec.rules[0].host", "RFC 1123 subdomain"),
    ({"host": "127.0.0.1"}, "spec.rules[0].host", "must be a DNS name, not an IP address"),
    ({"host": "*shop.test"}, "spec.rules[0].host", "wildcard DNS-1123 subdomain"),
    ({"tls_hosts": ("bad host",)}, "spec.tls[0].hosts[0]", "RFC 1123 subdomain"),
    ({"path": "api"}, "spec.rules[0].http.paths[0].path", "must be an absolute path"),
    ({"path": "/a/../b", "path_type": "Exact"}, "spec.rules[0].http.paths[0].path", "must not contain '/../'"),
    ({"path": "/a/.", "path_type": "Prefix"}, "spec.rules[0].http.paths[0].path", "cannot end with '/.'"),
    ({"path_type": None}, "spec.rules[0].http.paths[0].pathType", "pathType must be specified"),
    ({"path_type": "Regex"}, "spec.rules[0].http.paths[0].pathType", 'Unsupported value: "Regex"'),
    ({"service": 'web";'}, "spec.rules[0].http.paths[0].backend.service.name", "DNS-1035 label"),
])
def test_invalid_ingresses_are_refused_naming_the_field(kubectl, namespace, kwargs, field, words):
    done = kubectl("apply", "-f", "-", input=_ingress(namespace, **kwargs), check=False)
    assert done.returncode == 1
    assert 'The Ingress "shop" is invalid' in done.stderr and field in done.stderr and words in done.stderr


def test_valid_ingresses_are_accepted(kubectl, namespace):
    kubectl("apply", "-f", "-", input=_ingress(namespace, host="*.shop.test", tls_hosts=("*.shop.test",)))
    kubectl("apply", "-f", "-", input=_ingress(namespace, host=None, path="/api/v1;x", path_type="Prefix"))
    kubectl("apply", "-f", "-", input=_ingress(namespace, path="", path_type="ImplementationSpecific"))
    # an update is validated too
    patched = kubectl("patch", "ingress", "shop", "-n", namespace, "--type=json", "-p",
                      '[{"op":"replace","path":"/spec/rules/0/host","value":"a b"}]', check=False)
    assert patched.returncode == 1 and "spec.rules[0].host" in patched.stderr


def test_the_controller_may_read_only_the_tls_secrets_ingresses_name():
    live = {"metadata": {"name": "a"}, "spec": {"tls": [{"secretName": "b-tls"}, {"hosts": ["x"]}]}}
    gone = {"metadata": {"name": "c", "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"tls": [{"secretName": "z"}]}}
    assert tls_secret_names([live, gone, {"metadata": {"name": "d"}, "spec": {"tls": [{"secretName": "a-tls"}]}}]) \
        == ["a-tls", "b-tls"]
