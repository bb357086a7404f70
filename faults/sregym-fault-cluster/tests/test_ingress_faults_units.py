"""What the ingress faults' is_present reads, on objects alone (no cluster): the certificate the
Ingress serves, and whether its routes are the original ones."""

from __future__ import annotations

import base64
import datetime as dt
import json
from types import SimpleNamespace

import pytest
from sregym_appkit import ingress as pki

from sregym_fault_cluster import ingress, ingress_users

HOST = "shop.test"


class FakeCtx:
    """``kubectl get <kind> <name> -n <ns> -o json --ignore-not-found`` answered from a dict."""

    def __init__(self, objects: dict[tuple[str, str, str], dict]):
        self.objects, self.namespace, self.state = objects, "shop", {}
        self.app = SimpleNamespace(workload=SimpleNamespace(namespace="shop-workload"))

    def kubectl(self, *args, **_):
        assert args[0] == "get", args
        if args[1] == "ingressclasses":
            return json.dumps({"items": [{"metadata": {"name": "nginx"}, "spec": {"controller": ingress_users.CONTROLLER}}]})
        obj = self.objects.get((args[1], args[2], args[4]))
        return json.dumps(obj) if obj else ""


def _secret(name, ns, cert, key):
    return {"metadata": {"name": name, "namespace": ns},
            "data": {"tls.crt": base64.b64encode(cert).decode(), "tls.key": base64.b64encode(key).decode()}}


def _ingress(secret="web-tls", tls_host=HOST, backend=("web", {"name": "http"}), extra=()):
    paths = [{"path": "/", "pathType": "Prefix", "backend": {"service": {"name": backend[0], "port": backend[1]}}}]
    paths += list(extra)
    return {"metadata": {"name": "web", "namespace": "shop"},
            "spec": {"ingressClassName": "nginx", "tls": [{"hosts": [tls_host], "secretName": secret}] if secret else [],
                     "rules": [{"host": HOST, "http": {"paths": paths}}]}}


@pytest.fixture
def world():
    ca_cert, ca_key = pki.new_ca("shop CA")
    other_cert, other_key = pki.new_ca("someone else's CA")
    now = dt.datetime.now(dt.UTC)
    certs = {"good": pki.issue(ca_cert, ca_key, [HOST]),
             "expired": pki.issue(ca_cert, ca_key, [HOST], not_before=now - dt.timedelta(days=400),
                                  not_after=now - dt.timedelta(days=12)),
             "stranger": pki.issue(other_cert, other_key, [HOST]),
             "other-host": pki.issue(ca_cert, ca_key, ["elsewhere.test"])}
    objects = {("secret", "ingress-ca", "shop-workload"): _secret("ingress-ca", "shop-workload", ca_cert, ca_key)}
    for name, (cert, key) in certs.items():
        objects[("secret", name, "shop")] = _secret(name, "shop", cert, key)
    objects[("service", "web", "shop")] = {"spec": {"ports": [{"name": "http", "port": 8080}]}}
    return FakeCtx(objects)


def test_only_a_current_certificate_of_the_apps_ca_for_the_host_is_no_problem(world):
    assert ingress_users.certificate_problem(world, _ingress("good"), HOST) is None
    assert "valid only until" in ingress_users.certificate_problem(world, _ingress("expired"), HOST)
    assert "not one the users' CA issued" in ingress_users.certificate_problem(world, _ingress("stranger"), HOST)
    assert "does not name" in ingress_users.certificate_problem(world, _ingress("other-host"), HOST)
    assert "missing" in ingress_users.certificate_problem(world, _ingress("gone"), HOST)
    assert "no TLS entry" in ingress_users.certificate_problem(world, _ingress(secret=None), HOST)
    assert "no TLS entry" in ingress_users.certificate_problem(world, _ingress(tls_host="x.test"), HOST)
    assert ingress_users.certificate_problem(world, None, HOST) == "the Ingress is gone"


def test_the_route_is_back_only_when_every_original_path_goes_where_it_went(world):
    world.state = {"ingress": "web", "routes": sorted(map(list, ingress._routes(_ingress())))}

    def present(obj):
        world.objects[("ingress", "web", "shop")] = obj
        return ingress.misroute_present(world, None, {})

    assert not present(_ingress())
    assert not present(_ingress(backend=("web", {"number": 8080})))  # the same port by number
    assert present(_ingress(backend=("geo", {"number": 8083})))
    assert present(_ingress(backend=("web", {"number": 9090})))
    assert present(_ingress(extra=[{"path": "/hotels", "pathType": "Prefix",
                                    "backend": {"service": {"name": "geo", "port": {"number": 8083}}}}]))
    world.objects.pop(("ingress", "web", "shop"))
    assert ingress.misroute_present(world, None, {})


def test_a_class_no_controller_serves_is_the_fault(world):
    world.state = {"ingress": "web"}
    world.objects[("ingress", "web", "shop")] = _ingress()
    assert not ingress.class_present(world, None, {})
    world.objects[("ingress", "web", "shop")]["spec"]["ingressClassName"] = "nginx-internal"
    assert ingress.class_present(world, None, {})
