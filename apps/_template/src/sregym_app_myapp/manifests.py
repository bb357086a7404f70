"""The Kubernetes manifests: built here, shipped as plain YAML under ``manifests/``.

``python -m sregym_app_myapp.manifests --write`` regenerates the files (a test checks they match
:func:`build`); ``python -m sregym_app_myapp.manifests`` prints them rendered. The shapes every app
shares (namespaces, Services, one-replica Deployments that roll with ``maxSurge: 0``, the Ingress)
come from ``sregym_appkit``; what is the app's own (its containers, its datastore) is written here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sregym_appkit import manifests as kit
from sregym_appkit import postgres as pg
from sregym_appkit.objects import INFRASTRUCTURE_PRIORITY, AppObjects

from . import IMAGE_REPO, IMAGE_TAG
from .topology import (
    ADMIN_PORT,
    BACKEND,
    BACKEND_PORT,
    DATASTORE,
    DATASTORE_DB,
    DATASTORE_PORT,
    DATASTORE_SECRET,
    FRONTEND,
    FRONTEND_PORT,
    LOAD_GENERATOR,
    LOAD_GENERATOR_PORT,
    NAMESPACE,
    WORKLOAD_NAMESPACE,
)

#: the parameters a run may set (``sregym run --param``); render() refuses any other
DEFAULT_PARAMS = kit.default_params(IMAGE_TAG, workload_rate=4)
OBJECTS = AppObjects(part_of=NAMESPACE, admin_port=ADMIN_PORT)
IMAGE = f"{IMAGE_REPO}:{IMAGE_TAG}"
#: small on purpose: the embedded cluster runs every app on the host's cores
_SMALL = {"requests": {"cpu": "20m", "memory": "48Mi"}, "limits": {"memory": "256Mi"}}


def _env(**values: Any) -> list[dict[str, Any]]:
    return [{"name": k, "value": str(v)} for k, v in values.items()]


def _secret_env(*names: tuple[str, str]) -> list[dict[str, Any]]:
    """Variables read from the datastore's Secret: (variable, key) pairs."""
    return [{"name": var, "valueFrom": {"secretKeyRef": {"name": DATASTORE_SECRET, "key": key}}} for var, key in names]


def datastore() -> list[dict[str, Any]]:
    """PostgreSQL: its credentials, its init script, its volume, its Service and a one-replica StatefulSet.

    The Secret's role owns the database and is no superuser (``sregym_appkit.postgres``): an agent reads
    the Secret, and a superuser's password would let it run programs in the database pod or rewrite what
    the grader reads. The superuser's password is random and cleared at initdb.

    autovacuum off and minimal WAL: the data is written once (the backend seeds it), and a database
    whose files change while nobody writes would be restored and restarted by every reset."""
    labels = OBJECTS.labels(DATASTORE, "datastore")
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": OBJECTS.meta(DATASTORE_SECRET, NAMESPACE, "datastore"),
              "type": "Opaque", "stringData": {"username": "myapp", "password": "myapp-password"}}
    init = f"{DATASTORE}-init"
    init_script = pg.init_config_map(OBJECTS.meta(init, NAMESPACE, "datastore"),
                                     pg.roles_init_sql(owner=("DB_OWNER_USER", "DB_OWNER_PASSWORD")))
    claim = f"{DATASTORE}-data"
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": OBJECTS.meta(claim, NAMESPACE, "datastore"),
           "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "256Mi"}}}}
    settings = ("shared_buffers=8MB", "max_connections=20", "autovacuum=off", "wal_level=minimal", "max_wal_senders=0")
    container = {
        "name": "postgres", "image": "postgres:15", "args": [a for s in settings for a in ("-c", s)],
        "ports": [{"name": "postgres", "containerPort": DATASTORE_PORT}],
        "env": [*pg.superuser_env(), *_secret_env(("DB_OWNER_USER", "username"), ("DB_OWNER_PASSWORD", "password")),
                *_env(POSTGRES_DB=DATASTORE_DB, PGDATA="/var/lib/postgresql/data/pgdata")],
        "volumeMounts": [{"name": "data", "mountPath": "/var/lib/postgresql/data"}, pg.init_mount()],
        "readinessProbe": {"tcpSocket": {"port": DATASTORE_PORT}, "periodSeconds": 2, "failureThreshold": 3},
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
    }
    statefulset = {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": OBJECTS.meta(DATASTORE, NAMESPACE, "datastore"),
        "spec": {"serviceName": DATASTORE, "replicas": 1, "selector": {"matchLabels": {"app.kubernetes.io/name": DATASTORE}},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"terminationGracePeriodSeconds": 30, "containers": [container],
                                       "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}},
                                                   pg.init_volume(init)]}}}}
    return [secret, init_script, pvc, OBJECTS.service(DATASTORE, NAMESPACE, [("postgres", DATASTORE_PORT)], "datastore"), statefulset]


def _service_container(name: str, port: int, env: list[dict[str, Any]]) -> dict[str, Any]:
    """A container of the app's image running ``serve <name>``, probed on the admin port."""
    return {"name": name, "image": IMAGE, "args": [name],
            "env": [*_env(PORT=port, ADMIN_PORT=ADMIN_PORT, OTEL_EXPORTER_OTLP_ENDPOINT=""), *env],
            "ports": [{"name": "http", "containerPort": port}, {"name": "admin", "containerPort": ADMIN_PORT}],
            "readinessProbe": {"httpGet": {"path": "/readyz", "port": ADMIN_PORT}, "periodSeconds": 2, "failureThreshold": 2},
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": ADMIN_PORT}, "initialDelaySeconds": 15,
                              "periodSeconds": 10, "failureThreshold": 3},
            "resources": _SMALL}


def build() -> list[dict[str, Any]]:
    """Every object with the default parameters, in apply order."""
    backend = _service_container(BACKEND, BACKEND_PORT, [
        *_env(DB_HOST=DATASTORE, DB_PORT=DATASTORE_PORT, DB_NAME=DATASTORE_DB),
        *_secret_env(("DB_USER", "username"), ("DB_PASSWORD", "password"))])
    frontend = _service_container(FRONTEND, FRONTEND_PORT, _env(BACKEND_ADDR=f"{BACKEND}:{BACKEND_PORT}"))
    generator = {"name": LOAD_GENERATOR, "image": IMAGE, "args": [LOAD_GENERATOR],
                 "env": _env(WORKLOAD_TARGET=f"http://{FRONTEND}.{NAMESPACE}.svc.cluster.local:{FRONTEND_PORT}",
                             WORKLOAD_RATE=DEFAULT_PARAMS["workload_rate"], WORKLOAD_PORT=LOAD_GENERATOR_PORT,
                             WORKLOAD_TIMEOUT_S=5),
                 "ports": [{"name": "http", "containerPort": LOAD_GENERATOR_PORT}],
                 "readinessProbe": {"httpGet": {"path": "/healthz", "port": LOAD_GENERATOR_PORT}, "periodSeconds": 2},
                 "resources": _SMALL}
    return [
        *OBJECTS.namespaces(NAMESPACE, WORKLOAD_NAMESPACE),
        *datastore(),
        OBJECTS.service(BACKEND, NAMESPACE, [("http", BACKEND_PORT), ("admin", ADMIN_PORT)], "backend"),
        OBJECTS.deployment(BACKEND, NAMESPACE, backend, "backend"),
        OBJECTS.service(FRONTEND, NAMESPACE, [("http", FRONTEND_PORT), ("admin", ADMIN_PORT)], "frontend"),
        OBJECTS.deployment(FRONTEND, NAMESPACE, frontend, "frontend"),
        kit.ingress(NAMESPACE, FRONTEND, "http", OBJECTS.labels(FRONTEND, "frontend")),
        # the grading instrument: in the hidden namespace, at the priority no app pod can preempt
        OBJECTS.service(LOAD_GENERATOR, WORKLOAD_NAMESPACE, [("http", LOAD_GENERATOR_PORT)], "workload"),
        OBJECTS.deployment(LOAD_GENERATOR, WORKLOAD_NAMESPACE, generator, "workload", priority=INFRASTRUCTURE_PRIORITY,
                           scrape=False),
    ]


def _files(doc: dict[str, Any]) -> str | None:
    """The app's own file: the datastore's objects (``10-datastore.yaml``, before the services)."""
    return "10-datastore.yaml" if doc["metadata"]["name"].startswith(DATASTORE) else None


SHIPPED = kit.ShippedManifests(__package__, IMAGE_REPO, DEFAULT_PARAMS, build=build,
                               workload_namespace=WORKLOAD_NAMESPACE, files_of_app=_files)


def render(params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The shipped manifests with ``params`` applied; an unknown parameter raises ValueError."""
    return SHIPPED.render(params)


def render_yaml(params: Mapping[str, Any] | None = None) -> str:
    return SHIPPED.render_yaml(params)


if __name__ == "__main__":
    SHIPPED.command_line()
