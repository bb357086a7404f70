"""The Kubernetes manifests: rendered from :mod:`topology`, shipped as plain YAML files.

``render(params)`` applies parameters (``image_tag``, ``otlp_endpoint``, ``workload_rate``); the
files under ``manifests/`` are ``render()`` with the defaults (``python -m
sregym_app_astronomy_shop.manifests --write`` regenerates them; a test checks they match).
"""

from __future__ import annotations

from typing import Any

from sregym_appkit import manifests as kit
from sregym_appkit.flagd import flag_file
from sregym_appkit.objects import AppObjects, mount_config_map

from . import IMAGE_REPO, IMAGE_TAG
from .topology import (
    ADMIN_PORT,
    FLAG_DESCRIPTIONS,
    FLAGS,
    NAMESPACE,
    PEER_SERVICES,
    SERVICES,
    WORKLOAD_NAMESPACE,
)

OBJECTS = AppObjects(part_of="astronomy-shop", admin_port=ADMIN_PORT)
_labels, _service, _deployment = OBJECTS.labels, OBJECTS.service, OBJECTS.deployment
#: the third-party images beside the shop's own (the edge proxy, the cart's store, the order queue's broker)
NGINX_IMAGE, VALKEY_IMAGE, BROKER_IMAGE = "nginx:1.22", "valkey/valkey:7.2", "redis:7.0"
DEFAULT_PARAMS = kit.default_params(IMAGE_TAG, workload_rate=5)
#: the load generator's deadline for one user task (all its requests), seconds
WORKLOAD_TIMEOUT_S = 5

NGINX_CONF = """\
# The edge proxy (frontend-proxy): routes the shop's traffic to frontend and image-provider.
worker_processes 1;
pid /tmp/nginx.pid;
events { worker_connections 1024; }
http {
  log_format edge escape=json '{"ts":"$time_iso8601","service":"frontend-proxy","event":"request",'
                              '"method":"$request_method","path":"$uri","status":$status,'
                              '"request_time_s":$request_time,"upstream":"$upstream_addr",'
                              '"upstream_status":"$upstream_status","traceparent":"$http_traceparent"}';
  access_log /tmp/access.log edge;
  client_body_temp_path /tmp/nginx-body;
  proxy_temp_path /tmp/nginx-proxy;
  fastcgi_temp_path /tmp/nginx-fastcgi;
  uwsgi_temp_path /tmp/nginx-uwsgi;
  scgi_temp_path /tmp/nginx-scgi;
  proxy_connect_timeout 3s;
  proxy_read_timeout 15s;
  upstream frontend { server frontend:8080; }
  upstream image_provider { server image-provider:8081; }
  server {
    listen 8080;
    location = /healthz { access_log off; return 200 "ok\\n"; }
    location /images/ { proxy_pass http://image_provider; }
    location / { proxy_pass http://frontend; }
  }
}
"""


def flagd_json() -> str:
    return flag_file((name, FLAG_DESCRIPTIONS[name], variants) for name, (variants, _owner, _on) in sorted(FLAGS.items()))


def peer_env(service: str) -> list[dict[str, str]]:
    out = []
    for peer in SERVICES[service][2]:
        host, port = PEER_SERVICES.get(peer, (peer, SERVICES.get(peer, (0,))[0]))
        out.append({"name": peer.upper().replace("-", "_") + "_ADDR", "value": f"{host}:{port}"})
    return out


def _python_service(name: str) -> list[dict[str, Any]]:
    port, protocol, _ = SERVICES[name]
    ports = [("admin", ADMIN_PORT)] if port is None else [("grpc" if protocol == "grpc" else "http", port),
                                                          ("admin", ADMIN_PORT)]
    env = [{"name": "OTEL_SERVICE_NAME", "value": name}, {"name": "OTEL_EXPORTER_OTLP_ENDPOINT", "value": ""},
           {"name": "FLAGD_HOST", "value": "flagd"}, {"name": "FLAGD_OFREP_PORT", "value": "8016"},
           {"name": "ADMIN_PORT", "value": str(ADMIN_PORT)}, *peer_env(name)]
    container = OBJECTS.service_container(name, f"{IMAGE_REPO}:{IMAGE_TAG}", ports, env, cpu="20m", memory="48Mi")
    volumes = None
    if name == "flagd":
        container["env"] = [e for e in env if e["name"] not in ("FLAGD_HOST", "OTEL_EXPORTER_OTLP_ENDPOINT")] + [
            {"name": "FLAGD_FILE", "value": "/etc/flagd/demo.flagd.json"}]
        volumes = mount_config_map(container, "flagd-config", "/etc/flagd")
    tier = "queue-consumer" if port is None else ("frontend" if name == "frontend" else "service")
    docs = [] if port is None and name != "flagd" else []
    docs.append(_service(name, NAMESPACE, ports, tier))
    docs.append(_deployment(name, NAMESPACE, container, tier, volumes=volumes))
    return docs


def _redis(name: str, image: str, args: list[str], tier: str) -> list[dict[str, Any]]:
    container = {"name": name, "image": image, "args": args, "ports": [{"name": "redis", "containerPort": 6379}],
                 "readinessProbe": {"tcpSocket": {"port": 6379}, "periodSeconds": 2},
                 "livenessProbe": {"tcpSocket": {"port": 6379}, "initialDelaySeconds": 10, "periodSeconds": 10},
                 "resources": {"requests": {"cpu": "20m", "memory": "32Mi"}, "limits": {"memory": "256Mi"}}}
    return [_service(name, NAMESPACE, [("redis", 6379)], tier), _deployment(name, NAMESPACE, container, tier)]


def _ingress(service: str, port: str) -> dict[str, Any]:
    """Users reach the shop through the cluster's ingress controller (sregym_appkit.manifests.ingress)."""
    return kit.ingress(NAMESPACE, service, port, _labels(service, "edge"))


def build() -> list[dict[str, Any]]:
    """Every object with the default parameters, in apply order."""
    docs: list[dict[str, Any]] = [
        *OBJECTS.namespaces(NAMESPACE, WORKLOAD_NAMESPACE),
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "flagd-config", "namespace": NAMESPACE,
                                                               "labels": _labels("flagd", "config")},
         "data": {"demo.flagd.json": flagd_json()}},
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "frontend-proxy-config", "namespace": NAMESPACE, "labels": _labels("frontend-proxy", "config")},
         "data": {"nginx.conf": NGINX_CONF}},
    ]
    docs += _redis("valkey-cart", VALKEY_IMAGE, ["valkey-server", "--save", "", "--appendonly", "no"], "cache")
    docs += _redis("queue", BROKER_IMAGE, ["redis-server", "--save", "", "--appendonly", "no", "--maxmemory", "128mb",
                                           "--maxmemory-policy", "noeviction"], "queue")
    for name in SERVICES:
        docs += _python_service(name)
    proxy = {"name": "frontend-proxy", "image": NGINX_IMAGE, "ports": [{"name": "http", "containerPort": 8080}],
             "volumeMounts": [{"name": "config", "mountPath": "/etc/nginx", "readOnly": True}],
             "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 2},
             "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "initialDelaySeconds": 10,
                               "periodSeconds": 10},
             # one worker sized for the shop's traffic (a request costs it well under a millisecond)
             "resources": {"requests": {"cpu": "20m", "memory": "16Mi"}, "limits": {"cpu": "250m", "memory": "128Mi"}}}
    docs += [_service("frontend-proxy", NAMESPACE, [("http", 8080)], "edge"),
             _deployment("frontend-proxy", NAMESPACE, proxy, "edge",
                         volumes=[{"name": "config", "configMap": {"name": "frontend-proxy-config"}}]),
             _ingress("frontend-proxy", "http")]
    # the load generator reads the flags too (a flag can change what users do)
    docs += OBJECTS.load_generator(
        WORKLOAD_NAMESPACE, f"{IMAGE_REPO}:{IMAGE_TAG}", f"http://frontend-proxy.{NAMESPACE}.svc.cluster.local:8080",
        rate=DEFAULT_PARAMS["workload_rate"], timeout_s=WORKLOAD_TIMEOUT_S, cpu="50m", memory="64Mi",
        env=[{"name": "FLAGD_HOST", "value": f"flagd.{NAMESPACE}.svc.cluster.local"},
             {"name": "FLAGD_OFREP_PORT", "value": "8016"}])
    return docs


def _files(doc: dict[str, Any]) -> str | None:
    """The shop's own files: its ConfigMaps, then its two Redis (the cart cache and the order queue)."""
    if doc["kind"] == "ConfigMap":
        return "10-configmaps.yaml"
    return "20-datastores.yaml" if doc["metadata"]["name"] in ("valkey-cart", "queue") else None


SHIPPED = kit.ShippedManifests(__package__, IMAGE_REPO, DEFAULT_PARAMS, build=build,
                               workload_namespace=WORKLOAD_NAMESPACE, files_of_app=_files)
load_documents, render, render_yaml = SHIPPED.documents, SHIPPED.render, SHIPPED.render_yaml  # unknown params: ValueError

if __name__ == "__main__":
    SHIPPED.command_line()
