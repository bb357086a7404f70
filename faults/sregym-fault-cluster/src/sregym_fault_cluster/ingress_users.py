"""Users through the Ingress: where an app's Ingress sends them, and moving the workload there.

An app whose entry component has the ``ingress`` knob ships an Ingress of the same name (class
``nginx``, TLS from its CA Secret ``ingress-ca`` in the workload generator's namespace). The
ingress faults first send the generator's users through that Ingress, as a browser would reach the
public name: ``https://<host>`` resolved to the ingress controller's Service, certificates
verified against the app's CA (``POST /control {"route": ...}``, sregym_appkit); only once they
succeed does the fault break the route. Recover sends the users back to the Service.
"""

from __future__ import annotations

import base64
import time
from typing import TYPE_CHECKING, Any

from sregym_core.errors import PermanentFaultError
from sregym_core.faultkit import kube
from sregym_core.faultkit import users as kit_users

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from sregym_core.faults import FaultContext, FaultMethod, UsersProbe
    from sregym_core.types import Target

CONTROLLER_SERVICE = ("ingress-nginx", "ingress-nginx-controller")
CONTROLLER = "k8s.io/ingress-nginx"
CA_SECRET = "ingress-ca"


def ingress(ctx: FaultContext, target: Target) -> dict:
    """The target's Ingress (named after the entry component), or a PermanentFaultError."""
    obj = kube.get(ctx, "ingress", target.component.name, missing_ok=True)
    if obj is None:
        raise PermanentFaultError(f"no Ingress {ctx.namespace}/{target.component.name} in front of "
                                  f"{target.component.name}", hints=("the app ships it in its manifests "
                                                                     "(55-ingress.yaml): was it deployed?",))
    return obj


def host_of(obj: dict) -> str:
    hosts = [r["host"] for r in (obj.get("spec") or {}).get("rules") or [] if r.get("host")]
    if not hosts:
        raise PermanentFaultError(f"Ingress {obj['metadata']['name']} has no host rule")
    return hosts[0]


def ca_pem(ctx: FaultContext) -> bytes:
    """The app's ingress CA certificate (what its users trust)."""
    workload = ctx.app.workload
    secret = kube.get(ctx, "secret", CA_SECRET, namespace=workload.namespace, missing_ok=True) if workload else None
    if secret is None:
        raise PermanentFaultError(f"no ingress CA Secret {CA_SECRET} in the app's workload namespace",
                                  hints=("apps get it at deploy from sregym_appkit.ingress.ensure_tls",))
    return base64.b64decode(secret["data"]["tls.crt"])


def ca_key(ctx: FaultContext) -> bytes:
    workload = ctx.app.workload
    if workload is None:  # the CA Secret lives in the workload generator's namespace
        raise PermanentFaultError(f"app {ctx.app.name!r} has no workload generator, so no ingress CA Secret")
    secret = kube.get(ctx, "secret", CA_SECRET, namespace=workload.namespace)
    return base64.b64decode(secret["data"]["tls.key"])


def _client(ctx: FaultContext) -> UsersProbe:
    client = kit_users.workload_client(ctx)
    if client is None:
        raise PermanentFaultError(f"app {ctx.app.name} has no workload generator to send through the Ingress")
    return client


def route_users(ctx: FaultContext, target: Target, *, settle_s: float = 90.0) -> None:
    """Send the generator's users through the target's Ingress and wait until they succeed there."""
    obj = ingress(ctx, target)
    host = host_of(obj)
    client = _client(ctx)
    ns, name = CONTROLLER_SERVICE
    route = {"url": f"https://{host}", "connect": f"{name}.{ns}.svc.cluster.local:443", "ca": ca_pem(ctx).decode()}
    ctx.state["routed"] = True
    client.control(route=route)
    deadline = time.monotonic() + settle_s
    stats: Mapping[str, Any] = {}
    while time.monotonic() < deadline:
        time.sleep(3.0)
        stats = client.stats(3.0)
        if (stats.get("count") or 0) >= 3 and (stats.get("success_rate") or 0) >= 0.95:
            return
    unroute_users(ctx)
    raise PermanentFaultError(f"users do not get through Ingress {obj['metadata']['name']} before the fault: "
                              f"{ {k: stats.get(k) for k in ('count', 'success_rate', 'error_kinds')} }",
                              hints=(f"kubectl logs -n {ns} deploy/{name}", "kubectl get ingress -A"))


def wait_users_served(ctx: FaultContext, timeout_s: float = 60.0) -> bool:
    """After a fix, as an SRE checks the site: wait until the users through the Ingress succeed again
    (the controller reloads nginx within seconds of an object change)."""
    return kit_users.wait_users_succeed(ctx, window_s=2.0, timeout_s=timeout_s, min_count=2, interval_s=2.0,
                                        client=_client(ctx))


def unroute_users(ctx: FaultContext) -> None:
    if ctx.state.pop("routed", None):
        _client(ctx).control(route=None)


def served_classes(ctx: FaultContext) -> set[str]:
    """IngressClass names an ingress-nginx controller serves."""
    import json

    items = json.loads(ctx.kubectl("get", "ingressclasses", "-o", "json"))["items"]
    return {c["metadata"]["name"] for c in items if (c.get("spec") or {}).get("controller") == CONTROLLER}


def certificate_problem(ctx: FaultContext, obj: dict | None, host: str, now: float | None = None) -> str | None:
    """Why users verifying against the app's CA cannot trust what the Ingress serves for ``host``
    (None: the certificate is valid now, covers the host and was issued by the CA)."""
    import datetime as dt

    from cryptography import x509

    if obj is None:
        return "the Ingress is gone"
    entry = next((t for t in (obj.get("spec") or {}).get("tls") or [] if host in (t.get("hosts") or [])), None)
    if entry is None or not entry.get("secretName"):
        return f"no TLS entry for {host}: the controller's default certificate is served"
    secret = kube.get(ctx, "secret", entry["secretName"], missing_ok=True)
    if secret is None or "tls.crt" not in (secret.get("data") or {}):
        return f"TLS Secret {entry['secretName']} is missing: the controller's default certificate is served"
    try:
        cert = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
        ca = x509.load_pem_x509_certificate(ca_pem(ctx))
        cert.verify_directly_issued_by(ca)
    except Exception as exc:  # noqa: BLE001 - any unusable certificate is the fault still there
        return f"the certificate in {entry['secretName']} is not one the users' CA issued ({type(exc).__name__})"
    moment = dt.datetime.fromtimestamp(now or time.time(), dt.UTC)
    if not cert.not_valid_before_utc <= moment <= cert.not_valid_after_utc:
        return f"the certificate in {entry['secretName']} is valid only until {cert.not_valid_after_utc:%Y-%m-%d}"
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName)
    except x509.ExtensionNotFound:
        names = []
    if host not in names:
        return f"the certificate in {entry['secretName']} does not name {host}"
    return None


def put_secret(ctx: FaultContext, name: str, cert: bytes, key: bytes, labels: dict | None = None) -> None:
    """Create or replace the TLS Secret ``name`` in the app's namespace."""
    from sregym_appkit.ingress import tls_secret

    kube.apply(ctx, tls_secret(name, ctx.namespace, cert, key, labels=labels))


def users_first(inject: Callable[[FaultContext, Target, Mapping[str, Any]], Any]) -> FaultMethod:
    """Move the workload's users onto the Ingress, then break it; back to the Service if that fails."""
    def routed_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> Any:
        route_users(ctx, target)
        try:
            return inject(ctx, target, params)
        except BaseException:
            unroute_users(ctx)
            raise
    routed_inject.__name__ = routed_inject.__qualname__ = inject.__name__
    return routed_inject
