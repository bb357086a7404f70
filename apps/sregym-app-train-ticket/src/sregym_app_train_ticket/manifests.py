"""The Kubernetes manifests: rendered from :mod:`topology` and :mod:`data`, shipped as plain YAML.

``render(params)`` applies ``image_tag``, ``otlp_endpoint`` and ``workload_rate``; the files under
``manifests/`` are ``build()`` with the defaults (``python -m sregym_app_train_ticket.manifests
--write`` regenerates them; a test checks they match).
"""

from __future__ import annotations

from typing import Any

from sregym_appkit import manifests as kit
from sregym_appkit.flagd import flag_file
from sregym_appkit.objects import AppObjects, mount_config_map

from . import IMAGE_REPO, IMAGE_TAG
from .data import init_sql, service_password
from .runtime import env_name
from .topology import (
    ADMIN_PORT,
    FLAGD_PORT,
    FLAGD_SERVICE,
    FLAGS,
    MYSQL_PORT,
    MYSQL_SERVICE,
    NAMESPACE,
    SERVICES,
    WORKLOAD_NAMESPACE,
    peers,
)

DEFAULT_PARAMS = kit.default_params(IMAGE_TAG, workload_rate=2)
MARIADB_IMAGE = "mariadb:10.11"
ROOT_PASSWORD = "ts-root-9c41"
#: the key ts-auth-service signs login tokens with and the services check them with (the original
#: compiles one into every service; here it is the ts-jwt Secret)
JWT_KEY = "ts-jwt-5e0b7c2d9a4f4e1b8c3a6d2f0e9b7a41"
MYSQL_PVC = "ts-mysql-data"
WORKLOAD_TIMEOUT_S = 8  # the load generator's per-request timeout
OBJECTS = AppObjects(part_of="train-ticket", admin_port=ADMIN_PORT)
_labels, _service, _deployment = OBJECTS.labels, OBJECTS.service, OBJECTS.deployment
#: small-footprint server options (the defaults reserve 128 MiB of buffer pool alone)
MARIADB_ARGS = ["--innodb-buffer-pool-size=16M", "--innodb-log-file-size=8M", "--innodb-log-buffer-size=1M",
                "--performance-schema=OFF", "--max-connections=200", "--innodb-lock-wait-timeout=5",
                "--key-buffer-size=1M", "--aria-pagecache-buffer-size=2M", "--thread-cache-size=8",
                "--innodb-flush-log-at-trx-commit=2"]


def flagd_json() -> str:
    """tt-feat-1, tt-feat-2, ... in number order, each a boolean (``on`` turns a faulty code path on)."""
    return flag_file((name, desc, {"on": True, "off": False})
                     for name, (_owner, _real, desc) in sorted(FLAGS.items(), key=lambda kv: int(kv[0].rsplit("-", 1)[1])))


def db_user(service: str) -> str:
    return service.removeprefix("ts-")


def peer_env(service: str) -> list[dict[str, Any]]:
    return [{"name": env_name(p), "value": f"{p}:{SERVICES[p][0]}"} for p in peers(service)]


def service_env(service: str) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = [
        {"name": "OTEL_SERVICE_NAME", "value": service}, {"name": "ADMIN_PORT", "value": str(ADMIN_PORT)},
        {"name": "FLAGD_OFREP_PORT", "value": str(FLAGD_PORT)}]
    if service == FLAGD_SERVICE:
        return [*env, {"name": "FLAGD_FILE", "value": "/etc/flagd/flags.json"}]
    env += [{"name": "OTEL_EXPORTER_OTLP_ENDPOINT", "value": ""}, {"name": "FLAGD_HOST", "value": FLAGD_SERVICE},
            {"name": "JWT_SECRET", "valueFrom": {"secretKeyRef": {"name": "ts-jwt", "key": "secret"}}},
            *peer_env(service)]
    schema = SERVICES[service][2]
    if schema:
        env += [{"name": "MYSQL_ADDR", "value": f"{MYSQL_SERVICE}:{MYSQL_PORT}"},
                {"name": "MYSQL_DATABASE", "value": schema}, {"name": "MYSQL_USER", "value": db_user(service)},
                {"name": "MYSQL_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "ts-mysql-users",
                                                                          "key": db_user(service)}}}]
    return env


def _python_service(name: str) -> list[dict[str, Any]]:
    port = SERVICES[name][0]
    ports = [("http", port), ("admin", ADMIN_PORT)]
    container = OBJECTS.service_container(name, f"{IMAGE_REPO}:{IMAGE_TAG}", ports, service_env(name),
                                          cpu="10m", memory="40Mi", ready_period_s=3, live_delay_s=15)
    volumes = mount_config_map(container, "flagd-config", "/etc/flagd") if name == FLAGD_SERVICE else None
    tier = "frontend" if name == "ts-ui-dashboard" else ("flags" if name == FLAGD_SERVICE else "service")
    return [_service(name, NAMESPACE, ports, tier), _deployment(name, NAMESPACE, container, tier, volumes=volumes)]


def _mysql() -> list[dict[str, Any]]:
    container = {
        "name": "mariadb", "image": MARIADB_IMAGE, "args": list(MARIADB_ARGS),
        "ports": [{"name": "mysql", "containerPort": MYSQL_PORT}],
        "env": [{"name": "MARIADB_ROOT_PASSWORD",
                 "valueFrom": {"secretKeyRef": {"name": "ts-mysql-users", "key": "root"}}}],
        "volumeMounts": [{"name": "data", "mountPath": "/var/lib/mysql"},
                         {"name": "init", "mountPath": "/docker-entrypoint-initdb.d", "readOnly": True}],
        "readinessProbe": {"tcpSocket": {"port": MYSQL_PORT}, "periodSeconds": 2, "failureThreshold": 3},
        "livenessProbe": {"tcpSocket": {"port": MYSQL_PORT}, "initialDelaySeconds": 60, "periodSeconds": 10,
                          "failureThreshold": 6},
        "resources": {"requests": {"cpu": "50m", "memory": "96Mi"}, "limits": {"memory": "512Mi"}},
    }
    # the data outlives the pod (a restart or a rollout keeps the orders), as on a real cluster
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"name": MYSQL_PVC, "namespace": NAMESPACE, "labels": _labels(MYSQL_SERVICE, "datastore")},
           "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}
    return [pvc, _service(MYSQL_SERVICE, NAMESPACE, [("mysql", MYSQL_PORT)], "datastore"),
            _deployment(MYSQL_SERVICE, NAMESPACE, container, "datastore", scrape=False,
                        volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": MYSQL_PVC}},
                         {"name": "init", "secret": {"secretName": "ts-mysql-init"}}])]


def _ingress(service: str, port: str) -> dict[str, Any]:
    """Users reach TrainTicket through the cluster's ingress controller (sregym_appkit.manifests.ingress)."""
    return kit.ingress(NAMESPACE, service, port, _labels(service, "frontend"))


def build() -> list[dict[str, Any]]:
    """Every object with the default parameters, in apply order."""
    users = {"root": ROOT_PASSWORD, **{db_user(s): service_password(s) for s, spec in SERVICES.items() if spec[2]}}
    docs: list[dict[str, Any]] = [
        *OBJECTS.namespaces(NAMESPACE, WORKLOAD_NAMESPACE),
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "flagd-config", "namespace": NAMESPACE, "labels": _labels("flagd", "config")},
         "data": {"flags.json": flagd_json()}},
        {"apiVersion": "v1", "kind": "Secret",
         "metadata": {"name": "ts-mysql-users", "namespace": NAMESPACE, "labels": _labels(MYSQL_SERVICE, "config")},
         "type": "Opaque", "stringData": users},
        {"apiVersion": "v1", "kind": "Secret",
         "metadata": {"name": "ts-mysql-init", "namespace": NAMESPACE, "labels": _labels(MYSQL_SERVICE, "config")},
         "type": "Opaque", "stringData": {"01-schemas.sql": init_sql()}},
        {"apiVersion": "v1", "kind": "Secret",
         "metadata": {"name": "ts-jwt", "namespace": NAMESPACE, "labels": _labels("ts-auth-service", "config")},
         "type": "Opaque", "stringData": {"secret": JWT_KEY}},
    ]
    docs += _mysql()
    for name in SERVICES:
        docs += _python_service(name)
    docs.append(_ingress("ts-ui-dashboard", "http"))
    docs += OBJECTS.load_generator(
        WORKLOAD_NAMESPACE, f"{IMAGE_REPO}:{IMAGE_TAG}", f"http://ts-ui-dashboard.{NAMESPACE}.svc.cluster.local:8080",
        rate=DEFAULT_PARAMS["workload_rate"], timeout_s=WORKLOAD_TIMEOUT_S, cpu="50m", memory="48Mi")
    return docs


def _files(doc: dict[str, Any]) -> str | None:
    """TrainTicket's own files: its ConfigMaps and Secrets, then the database and its volume."""
    if doc["kind"] in ("ConfigMap", "Secret"):
        return "10-config.yaml"
    return "20-mysql.yaml" if doc["metadata"]["name"] in (MYSQL_SERVICE, MYSQL_PVC) else None


SHIPPED = kit.ShippedManifests(__package__, IMAGE_REPO, DEFAULT_PARAMS, build=build,
                               workload_namespace=WORKLOAD_NAMESPACE, files_of_app=_files)
render, render_yaml = SHIPPED.render, SHIPPED.render_yaml  # (params=None); unknown parameters raise ValueError

if __name__ == "__main__":
    SHIPPED.command_line()
