"""``services/<name>/proxy`` and ``pods/<name>/proxy``: HTTP forwarded to a ready endpoint or the pod.

Like the real API server, the service proxy dials an endpoint address directly (it does not go
through the ClusterIP). Only addresses inside 127.0.0.0/8 are ever dialled.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING

import aiohttp
from aiohttp import web

from .errors import ApiError, not_found, server_not_found
from .rbac import Attributes
from .request import RECHECK_KEY, USER_KEY

if TYPE_CHECKING:
    from .app import ApiServer

HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers",
              "transfer-encoding", "upgrade", "host", "authorization", "content-length"}
VERBS = {"GET": "get", "HEAD": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete",
         "OPTIONS": "get"}


def is_proxy_path(rest: list[str]) -> bool:
    return len(rest) >= 5 and rest[0] == "namespaces" and rest[2] in ("services", "pods") and rest[4] == "proxy"


def _split_name(spec: str, kind: str) -> tuple[str, str, str]:
    """(scheme, name, port) from ``name``, ``name:port`` or ``scheme:name:port``."""
    parts = spec.split(":")
    if len(parts) == 1:
        return "http", parts[0], ""
    if len(parts) == 2:
        return "http", parts[0], parts[1]
    if len(parts) == 3 and parts[0] in ("http", "https", ""):
        return parts[0] or "http", parts[1], parts[2]
    raise ApiError(400, f"invalid {kind} request format: {spec!r}")


def _service_target(server: ApiServer, namespace: str, name: str, port: str) -> tuple[str, int]:
    store = server.core.store
    svc = store.get("services", namespace, name)
    if svc is None:
        raise not_found("services", "", name)
    ports = (svc.get("spec") or {}).get("ports") or []
    chosen = None
    for p in ports:
        if not port or str(p.get("port")) == port or p.get("name") == port:
            chosen = p
            break
    if chosen is None:
        raise ApiError(503, f'no endpoints available for service "{name}"', "ServiceUnavailable")
    target = chosen.get("targetPort", chosen.get("port"))
    endpoints = store.get("endpoints", namespace, name) or {}
    for subset in endpoints.get("subsets") or []:
        addresses = subset.get("addresses") or []
        if not addresses:
            continue
        number = target if isinstance(target, int) else None
        for ep_port in subset.get("ports") or []:
            if ep_port.get("name", "") == chosen.get("name", "") or (
                    number is not None and ep_port.get("port") == number):
                number = ep_port.get("port")
                break
        if isinstance(number, int):
            return addresses[0].get("ip", ""), number
    raise ApiError(503, f'no endpoints available for service "{name}"', "ServiceUnavailable")


def _pod_target(server: ApiServer, namespace: str, name: str, port: str) -> tuple[str, int]:
    pod = server.core.store.get("pods", namespace, name)
    if pod is None:
        raise not_found("pods", "", name)
    ip = (pod.get("status") or {}).get("podIP")
    if not ip:
        raise ApiError(503, f'pod "{name}" has no IP address yet', "ServiceUnavailable")
    if port:
        if port.isdigit():
            return ip, int(port)
        for c in (pod.get("spec") or {}).get("containers") or []:
            for p in c.get("ports") or []:
                if p.get("name") == port:
                    return ip, int(p["containerPort"])
        raise ApiError(400, f"no port named {port!r} in pod {name}")
    return ip, 80


async def handle(request: web.Request, server: ApiServer, rest: list[str]) -> web.StreamResponse:
    namespace, kind, spec = rest[1], rest[2], rest[3]
    scheme, name, port = _split_name(spec, kind[:-1])
    if scheme != "http":
        raise ApiError(400, "only http is supported by this proxy")
    user = request[USER_KEY]
    verb = VERBS.get(request.method)
    if verb is None:
        raise server_not_found()
    attrs_ = Attributes(verb=verb, resource=kind, subresource="proxy", namespace=namespace, name=name)
    if not server.authz.allowed(user, attrs_):
        from .errors import forbidden

        raise forbidden(user.name, verb, kind, "", namespace, name, "proxy")
    ip, number = (_service_target if kind == "services" else _pod_target)(server, namespace, name, port)
    try:
        loopback = ipaddress.ip_address(ip) in ipaddress.ip_network("127.0.0.0/8")
    except ValueError:
        loopback = False
    if not loopback:
        raise ApiError(503, f"error trying to reach {kind[:-1]}: address {ip} is outside this cluster",
                       "ServiceUnavailable")
    path = "/" + "/".join(rest[5:])
    if request.query_string:
        path += "?" + request.query_string
    headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
    body = await request.read()
    recheck = request.get(RECHECK_KEY)
    if recheck is not None:  # the caller's identity and rights still hold now that the body has arrived
        recheck()
    session = server.http_session()
    url = f"http://{ip}:{number}{path}"
    try:
        async with session.request(request.method, url, data=body or None, headers=headers,
                                   allow_redirects=False, timeout=aiohttp.ClientTimeout(total=60)) as upstream:
            data = await upstream.read()
            out = {k: v for k, v in upstream.headers.items() if k.lower() not in HOP_BY_HOP}
            return web.Response(status=upstream.status, body=data, headers=out)
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        reason = getattr(exc, "strerror", None) or exc.__class__.__name__
        raise ApiError(503, f"error trying to reach {kind[:-1]}: dial tcp {ip}:{number}: connect: {reason}",
                       "ServiceUnavailable") from exc
