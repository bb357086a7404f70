"""Ingress faults: users come in through the app's Ingress (ingress-nginx), and the Ingress breaks.

* ``ingress-tls-expired`` — the Ingress's TLS Secret holds an expired certificate (a stale copy
  re-applied over it); the renewed certificate sits unused in ``<secret>-renewed``. Clients that
  verify certificates fail the handshake ("certificate has expired").
* ``ingress-misrouted-path`` — the Ingress's path rule sends users to the wrong Service (an internal
  gRPC/Thrift backend that does not speak HTTP/1.1): users get malformed answers or errors, and the
  controller logs "upstream sent no valid HTTP/1.0 header".
* ``ingress-class-mismatch`` — ``ingressClassName`` names a class no controller serves: the
  controller drops the Ingress (no ADDRESS) and users reach its default server (default
  certificate, 404).

Each first sends the workload's users through the Ingress (:mod:`.ingress_users`). Everything is
Kubernetes objects, so the same faults run on a real cluster with ingress-nginx installed.
"""

from __future__ import annotations

import base64
import copy
import datetime as dt
import json
from typing import TYPE_CHECKING, Any

from sregym_core.errors import PermanentFaultError
from sregym_core.faultkit import function_fault, kube
from sregym_core.types import FaultSpec, TargetSelector

from . import ingress_users as users

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sregym_core.faults import FaultContext
    from sregym_core.types import Target

ENTRY = TargetSelector(kinds=("Deployment",), requires=("knob:ingress",))
WRONG_CLASS = "nginx-internal"


# --------------------------------------------------------------------------- expired certificate


@users.users_first
def tls_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    from sregym_appkit.ingress import issue

    obj = users.ingress(ctx, target)
    host = users.host_of(obj)
    entry = next(t for t in obj["spec"].get("tls") or [] if host in (t.get("hosts") or []))
    secret = kube.get(ctx, "secret", entry["secretName"])
    ctx.state.update(ingress=obj["metadata"]["name"], host=host, secret=entry["secretName"],
                     renewed=f"{entry['secretName']}-renewed", data=secret["data"])
    # the current certificate, as the renewal left it, under a name the Ingress does not use
    users.put_secret(ctx, ctx.state["renewed"], base64.b64decode(secret["data"]["tls.crt"]),
                base64.b64decode(secret["data"]["tls.key"]), labels={"app.kubernetes.io/managed-by": "cert-renewal"})
    # ... and last year's certificate re-applied over the one the Ingress serves
    now = dt.datetime.now(dt.UTC)
    days = int(params.get("expired_days_ago", 12))
    cert, key = issue(users.ca_pem(ctx), users.ca_key(ctx), [host], not_before=now - dt.timedelta(days=365 + days),
                      not_after=now - dt.timedelta(days=days))
    ctx.state["not_after"] = (now - dt.timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")
    users.put_secret(ctx, entry["secretName"], cert, key)


def _tls_values(target: Target, params: Mapping[str, Any], state: dict) -> dict:
    """The injected names, or the apps' convention (``<service>-tls`` for ``<namespace>.sregym.test``)
    before an injection recorded them (a ground truth derived without a cluster)."""
    secret = state.get("secret") or f"{target.component.service_name}-tls"
    return {"secret": secret, "host": state.get("host") or f"{target.namespace}.sregym.test",
            "not_after": state.get("not_after") or "a date in the past",
            "renewed_secret": state.get("renewed") or f"{secret}-renewed"}


def tls_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    obj = kube.get(ctx, "ingress", ctx.state.get("ingress") or target.component.name, missing_ok=True)
    return users.certificate_problem(ctx, obj, ctx.state.get("host") or users.host_of(obj or {"metadata": {}})) is not None


def tls_fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    # install the renewed certificate in the Secret the Ingress serves
    renewed = kube.get(ctx, "secret", ctx.state["renewed"])
    kube.patch(ctx, "secret", ctx.state["secret"], {"data": {k: renewed["data"][k] for k in ("tls.crt", "tls.key")}})
    users.wait_users_served(ctx)  # as an SRE checks the site after the change


def tls_recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    try:
        if "data" in ctx.state:
            kube.patch(ctx, "secret", ctx.state["secret"], {"data": ctx.state["data"]})
            kube.delete(ctx, "secret", ctx.state["renewed"])
    finally:  # the users go back to the Service whatever happened to the Ingress
        users.unroute_users(ctx)


# --------------------------------------------------------------------------- misrouted path


def _wrong_backend(ctx: FaultContext, target: Target) -> tuple[str, int]:
    """Another HTTP-less Service of the app (sorted by name): an internal backend, not the entry."""
    services = json.loads(ctx.kubectl("get", "services", "-n", ctx.namespace, "-o", "json"))["items"]
    for svc in sorted(services, key=lambda s: s["metadata"]["name"]):
        name = svc["metadata"]["name"]
        ports = svc["spec"].get("ports") or []
        component = ctx.app.component(name)
        if name == target.component.service_name or not ports or component is None or component.kind != "Deployment":
            continue
        if any(r.startswith(("db:", "cache:", "queue:")) for r in component.roles):
            continue
        return name, int(ports[0]["port"])
    raise PermanentFaultError(f"no other Service in {ctx.namespace} to misroute {target.component.name}'s Ingress to")


def _routes(obj: dict | None) -> set[tuple]:
    out = set()
    for rule in ((obj or {}).get("spec") or {}).get("rules") or []:
        for path in (rule.get("http") or {}).get("paths") or []:
            svc = (path.get("backend") or {}).get("service") or {}
            port = svc.get("port") or {}
            out.add((rule.get("host", ""), path.get("path", "/"), path.get("pathType", "Prefix"), svc.get("name"),
                     str(port.get("number") if port.get("number") is not None else port.get("name"))))
    return out


@users.users_first
def misroute_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    obj = users.ingress(ctx, target)
    service, port = _wrong_backend(ctx, target)
    ctx.state.update(ingress=obj["metadata"]["name"], rules=obj["spec"]["rules"], wrong_service=service,
                     wrong_port=port, routes=sorted(map(list, _routes(obj))))
    rules = copy.deepcopy(obj["spec"]["rules"])
    for rule in rules:
        for path in (rule.get("http") or {}).get("paths") or []:
            if (path.get("backend") or {}).get("service", {}).get("name") == target.component.service_name:
                path["backend"] = {"service": {"name": service, "port": {"number": port}}}
    kube.patch(ctx, "ingress", obj["metadata"]["name"], {"spec": {"rules": rules}})


def _port_number(ctx: FaultContext, service: str, port: str) -> str:
    if port.isdigit():
        return port
    svc = kube.get(ctx, "service", service, missing_ok=True) or {}
    return next((str(p["port"]) for p in (svc.get("spec") or {}).get("ports") or [] if p.get("name") == port), port)


def misroute_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    obj = kube.get(ctx, "ingress", ctx.state.get("ingress") or target.component.name, missing_ok=True)
    if obj is None:
        return True
    want = {(h, p, t, s, _port_number(ctx, s, port)) for h, p, t, s, port in map(tuple, ctx.state["routes"])}
    have = {(h, p, t, s, _port_number(ctx, s, port)) for h, p, t, s, port in _routes(obj)}
    hosts = {h for h, *_ in want}
    # every original route back, and nothing else for the app's host sends users elsewhere
    return not want <= have or any(h in hosts for h, *_ in have - want)


def misroute_fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    kube.patch(ctx, "ingress", ctx.state["ingress"], {"spec": {"rules": ctx.state["rules"]}})
    users.wait_users_served(ctx)  # as an SRE checks the site after the change


def misroute_recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    try:
        if "rules" in ctx.state:
            kube.patch(ctx, "ingress", ctx.state["ingress"], {"spec": {"rules": ctx.state["rules"]}})
    finally:
        users.unroute_users(ctx)


# --------------------------------------------------------------------------- class mismatch


@users.users_first
def class_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    obj = users.ingress(ctx, target)
    wrong = params.get("class_name", WRONG_CLASS)
    if wrong in users.served_classes(ctx):
        raise PermanentFaultError(f"IngressClass {wrong} is served by a controller: pick a class none serves")
    ctx.state.update(ingress=obj["metadata"]["name"], class_name=obj["spec"].get("ingressClassName"), wrong=wrong)
    kube.patch(ctx, "ingress", obj["metadata"]["name"], {"spec": {"ingressClassName": wrong}})


def class_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    obj = kube.get(ctx, "ingress", ctx.state.get("ingress") or target.component.name, missing_ok=True)
    if obj is None:
        return True
    wanted = (obj.get("spec") or {}).get("ingressClassName") or \
        (obj["metadata"].get("annotations") or {}).get("kubernetes.io/ingress.class")
    return wanted not in users.served_classes(ctx)


def _restore_class(ctx: FaultContext) -> None:
    kube.patch(ctx, "ingress", ctx.state["ingress"], {"spec": {"ingressClassName": ctx.state["class_name"] or "nginx"}})


def class_fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    _restore_class(ctx)
    users.wait_users_served(ctx)  # as an SRE checks the site after the change


def class_recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    try:
        if "wrong" in ctx.state:
            _restore_class(ctx)
    finally:
        users.unroute_users(ctx)


# what an SRE writes for these without the controller's words
TLS_VOCABULARY = ("expired certificate", "certificate expired", "certificate has expired", "cert expired",
                  "expired cert", "tls .. expired", "ssl .. expired", "certificate .. expir*", "cert .. expir*",
                  "stale certificate", "old certificate", "renewed certificate", "certificate .. renew*")
ROUTE_VOCABULARY = ("misrout*", "wrong backend", "wrong service", "points to .. wrong", "pointing to .. wrong",
                    "ingress .. rule", "ingress .. path", "path rule", "routes .. to", "routed .. to", "backend .. wrong")
CLASS_VOCABULARY = ("ingressclass", "ingress class", "ingressclassname", "class name", "no controller",
                    "not served", "unserved", "no ingress controller", "wrong class", "class .. not exist")

FAULTS: list[FaultSpec] = [
    function_fault(
        name="ingress-tls-expired", summary="the Ingress's TLS Secret holds an expired certificate",
        layer="network", selector=ENTRY, resource_kind="Secret",
        mechanism="the TLS Secret the app's Ingress serves was overwritten with an expired certificate; the renewed "
                  "certificate sits unused in another Secret, so clients verifying TLS reject the handshake",
        inject=tls_inject, is_present=tls_present, recover=tls_recover, reference_fix=tls_fix,
        symptoms=("certificate has expired", "TLS handshake failure", "connection errors"),
        keywords=("Ingress", "TLS", "certificate", "expired", "Secret"),
        values=_tls_values,
        prose="The TLS Secret {secret} of {component}'s Ingress holds a certificate for {host} that expired at "
              "{not_after}; clients verifying TLS fail. The renewed certificate is in {renewed_secret}.",
        vocabulary=TLS_VOCABULARY,
    ),
    function_fault(
        name="ingress-misrouted-path", summary="the Ingress's path rule sends users to the wrong Service",
        layer="network", selector=ENTRY, resource_kind="Ingress",
        mechanism="the app's Ingress path rule points at another Service (an internal backend) instead of the "
                  "entry Service: user requests reach a backend that does not speak HTTP to them and fail",
        inject=misroute_inject, is_present=misroute_present, recover=misroute_recover, reference_fix=misroute_fix,
        symptoms=("upstream sent no valid HTTP/1.0 header", "malformed responses", "502 Bad Gateway"),
        keywords=("Ingress", "path", "backend", "service", "misrouted"),
        values=lambda t, p, s: {"ingress": s.get("ingress", ""), "wrong_service": s.get("wrong_service", ""),
                                "wrong_port": s.get("wrong_port", "")},
        prose="Ingress {ingress} routes users to {wrong_service}:{wrong_port} instead of {component}.",
        vocabulary=ROUTE_VOCABULARY,
    ),
    function_fault(
        name="ingress-class-mismatch", summary="the Ingress names an IngressClass no controller serves",
        layer="network", selector=ENTRY, resource_kind="Ingress",
        mechanism="the app's Ingress has an ingressClassName no ingress controller serves: the controller drops "
                  "it and users reach its default server",
        inject=class_inject, is_present=class_present, recover=class_recover, reference_fix=class_fix,
        symptoms=("404 default backend", "certificate verify failed", "no ADDRESS on the Ingress"),
        keywords=("Ingress", "ingressClassName", "IngressClass", "controller"),
        values=lambda t, p, s: {"ingress": s.get("ingress", ""), "class_name": s.get("wrong", ""),
                                "served_class": s.get("class_name") or "nginx"},
        prose="Ingress {ingress} names ingressClassName {class_name}, which no controller serves (the controller "
              "serves {served_class}); users' requests never reach {component}.",
        vocabulary=CLASS_VOCABULARY,
    ),
]

__all__ = ["FAULTS"]
