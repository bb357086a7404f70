"""The ingress controller's nginx configuration, rendered from Ingress objects (networking.k8s.io/v1).

Pure functions: :func:`served` picks the Ingresses a controller class serves (``ingressClassName``,
the legacy ``kubernetes.io/ingress.class`` annotation, or the default IngressClass for Ingresses
without a class); :func:`render` turns them into one ``nginx.conf`` the way ingress-nginx does:

* one ``server`` per host (rules without a host and ``spec.defaultBackend`` go to the catch-all
  server, which answers 404 when nothing backs it);
* ``pathType`` ``Exact`` is ``location = /p``; ``Prefix`` (and ``ImplementationSpecific``) match
  whole path elements: ``/p`` matches ``/p`` and ``/p/...`` but not ``/px``; the longest path wins;
* a backend is the Service's ClusterIP and port (a port given by name is looked up in the
  Service); a missing Service or port answers 503, as ingress-nginx does without endpoints;
* ``nginx.ingress.kubernetes.io/rewrite-target`` rewrites the matched path before proxying;
* hosts listed under ``spec.tls`` use the certificate of their Secret (``certs`` maps
  ``namespace/secret`` to a PEM file the controller wrote) or, when it is missing, the
  controller's default certificate; plain HTTP to a TLS host is redirected (308) to HTTPS.

The first Ingress (oldest, then by namespace/name) wins a host and path claimed twice.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

CONTROLLER = "k8s.io/ingress-nginx"
CLASS_ANNOTATION = "kubernetes.io/ingress.class"
DEFAULT_CLASS_ANNOTATION = "ingressclass.kubernetes.io/is-default-class"
REWRITE_ANNOTATION = "nginx.ingress.kubernetes.io/rewrite-target"
HEALTH_PORT = 10254
IngressT = TypeVar("IngressT", bound=Mapping[str, Any])
#: ingress-nginx's documented default access log format ($proxy_upstream_name is set per location)
LOG_FORMAT = ('$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" '
              '"$http_user_agent" $request_length $request_time [$proxy_upstream_name] [] $upstream_addr '
              '$upstream_response_length $upstream_response_time $upstream_status $request_id')


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def served_classes(classes: Iterable[Mapping[str, Any]], controller: str = CONTROLLER) -> tuple[set[str], bool]:
    """(names of the IngressClasses of ``controller``, whether one of them is the cluster default)."""
    names, default = set(), False
    for ic in classes:
        if (ic.get("spec") or {}).get("controller") != controller:
            continue
        names.add(ic["metadata"]["name"])
        annotations = ic["metadata"].get("annotations") or {}
        default = default or str(annotations.get(DEFAULT_CLASS_ANNOTATION, "")).lower() == "true"
    return names, default


def served(ingresses: Iterable[IngressT], classes: Iterable[Mapping[str, Any]],
           controller: str = CONTROLLER) -> list[IngressT]:
    """The Ingresses this controller serves (the objects given), oldest first."""
    names, default = served_classes(classes, controller)
    out: list[IngressT] = []
    for ing in ingresses:
        if (ing.get("metadata") or {}).get("deletionTimestamp"):
            continue
        wanted = (ing.get("spec") or {}).get("ingressClassName") or \
            ((ing.get("metadata") or {}).get("annotations") or {}).get(CLASS_ANNOTATION)
        if (wanted and wanted in names) or (not wanted and default):
            out.append(ing)
    return sorted(out, key=lambda i: (i["metadata"].get("creationTimestamp") or "", _key(i)))


@dataclass
class Backend:
    """Where a location proxies to: ``address`` (ip:port) or None (503), named like ingress-nginx's upstreams."""

    name: str
    address: str | None
    rewrite: str | None = None


@dataclass
class Server:
    host: str
    certificate: str | None = None  # PEM file; None: plain HTTP only (no TLS entry for the host)
    tls: bool = False
    locations: dict[str, Backend] = field(default_factory=dict)  # nginx location spec -> backend


def resolve_backend(namespace: str, backend: Mapping[str, Any], services: Mapping[str, Mapping[str, Any]],
                    rewrite: str | None = None) -> Backend:
    """The Service backend of an Ingress path (``services`` maps ``namespace/name`` to Service objects)."""
    svc_ref = backend.get("service") or {}
    name = svc_ref.get("name", "")
    port_ref = svc_ref.get("port") or {}
    wanted = port_ref.get("number") if port_ref.get("number") is not None else port_ref.get("name", "")
    upstream = f"{namespace}-{name}-{wanted}"
    svc = services.get(f"{namespace}/{name}")
    if svc is None:
        return Backend(upstream, None, rewrite)
    ip = (svc.get("spec") or {}).get("clusterIP") or ""
    for port in (svc.get("spec") or {}).get("ports") or []:
        if port.get("port") == wanted or (port.get("name") and port.get("name") == wanted):
            if ip and ip != "None":
                return Backend(upstream, f"{ip}:{port['port']}", rewrite)
    return Backend(upstream, None, rewrite)


def _locations(path: str, path_type: str) -> list[str]:
    path = path or "/"
    if path_type == "Exact":
        return [f"= {path}"]
    if path == "/":
        return ["/"]
    trimmed = path.rstrip("/")
    return [f"= {trimmed}", f"{trimmed}/"]


def servers(ingresses: Iterable[Mapping[str, Any]], services: Mapping[str, Mapping[str, Any]],
            certs: Mapping[str, str], default_cert: str) -> list[Server]:
    """The servers (catch-all first) the served ``ingresses`` make."""
    by_host: dict[str, Server] = {"_": Server("_", default_cert, True)}
    for ing in ingresses:
        ns = ing["metadata"].get("namespace", "default")
        spec = ing.get("spec") or {}
        rewrite = ((ing["metadata"].get("annotations") or {}).get(REWRITE_ANNOTATION)) or None
        tls_hosts: dict[str, str] = {}
        for entry in spec.get("tls") or []:
            for host in entry.get("hosts") or []:
                secret = entry.get("secretName")
                tls_hosts.setdefault(host, certs.get(f"{ns}/{secret}", default_cert) if secret else default_cert)
        if spec.get("defaultBackend"):
            by_host["_"].locations.setdefault("/", resolve_backend(ns, spec["defaultBackend"], services))
        for rule in spec.get("rules") or []:
            host = rule.get("host") or "_"
            if host != "_" and not valid_host(host):
                continue  # never written into nginx.conf (the API server refuses it too)
            server = by_host.setdefault(host, Server(host))
            if host in tls_hosts and not server.tls:
                server.tls, server.certificate = True, tls_hosts[host]
            for path in (rule.get("http") or {}).get("paths") or []:
                backend = resolve_backend(ns, path.get("backend") or {}, services, rewrite)
                if not valid_path(path.get("path", "/")):
                    continue  # as ingress-nginx's strict path validation: such a path is not served
                for location in _locations(path.get("path", "/"), path.get("pathType", "Prefix")):
                    server.locations.setdefault(location, backend)
    return list(by_host.values())


# Defence in depth: whatever reaches nginx.conf from an object is held to a grammar with no
# character nginx gives a meaning to (whitespace, quotes, ';', braces, '#', '$', '\\'), even if an
# object got past the API server's validation (an Ingress stored before it, a real cluster's server).
_HOST = re.compile(r"^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_PATH = re.compile(r"^/[A-Za-z0-9._~/:@!&'()*+,=%-]*$")
_NAME = re.compile(r"[^A-Za-z0-9._-]")


def valid_host(host: object) -> bool:
    """A DNS-1123 subdomain, optionally ``*.``-prefixed: what may stand in ``server_name``."""
    return isinstance(host, str) and len(host) <= 253 and bool(_HOST.match(host))


def valid_path(path: object) -> bool:
    """An absolute path of URL characters only (no whitespace, quotes, ';', braces, '$' or '#')."""
    return isinstance(path, str) and bool(_PATH.match(path))


_SAFE = re.compile(r"^[A-Za-z0-9._~:/?#\[\]@!$&'()*+,;=%-]*$")


def _quote(value: str) -> str:
    """A value nginx reads as one token (paths and rewrite targets come from users' objects)."""
    if not _SAFE.match(value) or not value:
        value = re.sub(r"[^A-Za-z0-9._~:/?#\[\]@!$&'()*+,;=%-]", "", value)
    return f'"{value}"'


def _location_block(spec: str, backend: Backend) -> list[str]:
    exact = spec.startswith("= ")
    path = spec[2:] if exact else spec
    lines = [f"    location {'= ' if exact else ''}{_quote(path)} {{",
             f'      set $proxy_upstream_name "{_NAME.sub("", backend.name)}";']
    if backend.address is None:
        lines += ["      return 503;", "    }"]
        return lines
    if backend.rewrite is not None:
        lines.append(f"      rewrite \"^{re.escape(path.rstrip('/')) or ''}(/.*)?$\" {_quote(backend.rewrite)} break;")
    lines += [f"      proxy_pass http://{backend.address};", "    }"]
    return lines


def render(servers_: list[Server], *, run_dir: str, access_log: str, http_port: int = 80, https_port: int = 443) -> str:
    """The whole nginx.conf for ``servers_`` (see :func:`servers`), listening on ``http_port`` and
    ``https_port`` (ingress-nginx's ``--http-port``/``--https-port``)."""
    out = [
        "# rendered by the embedded cluster's ingress controller from Ingress objects; do not edit",
        "worker_processes 1;",
        f"pid {run_dir}/nginx.pid;",
        "error_log stderr info;",
        "events { worker_connections 1024; }",
        "http {",
        f"  log_format upstreaminfo '{LOG_FORMAT}';",
        f"  access_log {access_log} upstreaminfo;",
        *(f"  {kind}_temp_path {run_dir}/{kind}-temp;" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")),
        "  server_names_hash_bucket_size 128;",
        "  proxy_connect_timeout 5s;",
        "  proxy_read_timeout 60s;",
        "  proxy_http_version 1.1;",
        '  proxy_set_header Connection "";',
        "  proxy_set_header Host $host;",
        "  proxy_set_header X-Request-ID $request_id;",
        "  proxy_set_header X-Real-IP $remote_addr;",
        "  proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;",
        "  proxy_set_header X-Forwarded-Proto $scheme;",
        "  proxy_set_header X-Forwarded-Host $host;",
        "  ssl_protocols TLSv1.2 TLSv1.3;",
        "  ssl_session_cache shared:SSL:1m;",
        "  server {",
        f"    listen {HEALTH_PORT};",
        '    set $proxy_upstream_name "internal";',
        "    access_log off;",
        '    location = /healthz { return 200 "ok\\n"; }',
        "    location / { return 404; }",
        "  }",
    ]
    for server in servers_:
        default = server.host == "_"
        flag = " default_server" if default else ""
        if not default and not valid_host(server.host):
            continue
        out += ["  server {", f"    server_name {server.host};", f"    listen {http_port}{flag};"]
        if server.certificate:
            out += [f"    listen {https_port} ssl{flag};", f"    ssl_certificate {_quote(server.certificate)};",
                    f"    ssl_certificate_key {_quote(server.certificate)};"]
        out.append('    set $proxy_upstream_name "-";')
        if server.tls and not default:
            out.append("    if ($scheme = http) { return 308 https://$host$request_uri; }")
        for spec in sorted(server.locations, key=lambda s: (-len(s), s)):
            out += _location_block(spec, server.locations[spec])
        if "/" not in server.locations:
            out += ["    location / {", '      set $proxy_upstream_name "upstream-default-backend";',
                    '      default_type text/html;', '      return 404 "default backend - 404\\n";', "    }"]
        out.append("  }")
    out.append("}")
    return "\n".join(out) + "\n"
