"""Where the YAML in ``manifests/`` comes from: ``python -m sregym_app_social_network.manifest_source``
rewrites the files; a unit test fails when they drift from this source.

The files are what gets applied (plain, valid Kubernetes YAML a user can read and ``kubectl apply``);
writing 60 objects by hand would only invite inconsistencies between them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml
from sregym_appkit import postgres as pg

from . import IMAGE_REPO, IMAGE_TAG
from .config import (ADMIN_PORT, DB_OWNERS, GATEWAY_PORT, MEMCACHED, NGINX_PORT, PERSISTENT_REDIS, REDIS, THRIFT_PORT,
                     TOPOLOGY, database_name, file_config)

NS = "social-network"
WORKLOAD_NS = "social-network-workload"
IMAGE = f"{IMAGE_REPO}:{IMAGE_TAG}"
PART_OF = {"app.kubernetes.io/part-of": NS}
PASSWORDS = {"user": "Qm27x", "url-shorten": "Rb81k", "social-graph": "Tz44p", "post-storage": "Wd09s",
             "user-timeline": "Hn63c", "media": "Lf52v"}
REPLACE_IN_PLACE = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
#: Redis as a cache in front of PostgreSQL: nothing on disk, a restart starts empty
REDIS_CACHE_ARGS = ["redis-server", "--save", "", "--appendonly", "no", "--maxmemory", "64mb"]
#: Redis holding the only copy of its data: every write appended to a file on the PVC mounted at /data
#: (flushed every second, and on SIGTERM), read back when the server starts again
REDIS_PERSISTENT_ARGS = ["redis-server", "--save", "", "--appendonly", "yes", "--appendfsync", "everysec",
                         "--dir", "/data", "--maxmemory", "64mb"]


def labels(name: str, tier: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": name, **PART_OF, "tier": tier}


def meta(name: str, tier: str, ns: str = NS) -> dict[str, Any]:
    return {"name": name, "namespace": ns, "labels": labels(name, tier)}


def service(name: str, tier: str, ports: list[tuple[str, int]], ns: str = NS) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta(name, tier, ns),
            "spec": {"selector": {"app.kubernetes.io/name": name},
                     "ports": [{"name": n, "port": p, "targetPort": p} for n, p in ports]}}


def workload(kind: str, name: str, tier: str, pod: dict[str, Any], ns: str = NS,
             annotations: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"replicas": 1, "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
                            "template": {"metadata": {"labels": labels(name, tier)}, "spec": pod}}
    if annotations:
        spec["template"]["metadata"]["annotations"] = annotations
    if kind == "StatefulSet":
        spec = {"serviceName": name, **spec}
    else:
        spec = {"replicas": 1, "strategy": REPLACE_IN_PLACE, **{k: v for k, v in spec.items() if k != "replicas"}}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta(name, tier, ns), "spec": spec}


def secret_env(name: str, secret: str, key: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}


def resources(cpu: str = "20m", memory: str = "48Mi", limit: str = "256Mi") -> dict[str, Any]:
    return {"requests": {"cpu": cpu, "memory": memory}, "limits": {"memory": limit}}


def namespaces() -> list[dict[str, Any]]:
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS, "labels": dict(PART_OF)}},
            {"apiVersion": "v1", "kind": "Namespace",
             "metadata": {"name": WORKLOAD_NS, "labels": {**PART_OF, "sregym.dev/hidden": "true"}}}]


def secrets() -> list[dict[str, Any]]:
    out = []
    for db, pw in PASSWORDS.items():
        user = "sn_" + db.replace("-", "_")
        out.append({"apiVersion": "v1", "kind": "Secret", "metadata": meta(f"{db}-db", "datastore"), "type": "Opaque",
                    "stringData": {"username": user, "password": f"{db}-{pw}", "admin-username": f"{user}_admin",
                                   "admin-password": f"admin-{db}-{pw}"}})
    return out


#: Run once by the postgres image when it initialises an empty data directory (sregym_appkit.postgres): the
#: Secret's admin owns the database and is no superuser, the service's role is a plain login, and the
#: superuser's random password is cleared (issue #34, round 5).
POSTGRES_INIT_SQL = pg.roles_init_sql(owner=("DB_ADMIN_USER", "DB_ADMIN_PASSWORD"), app=("DB_USER", "DB_PASSWORD"))


def configmaps() -> list[dict[str, Any]]:
    return [*({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(f"{s}-config", "config"),
               "data": {"service-config.json": json.dumps(file_config(s), indent=2, sort_keys=True) + "\n"}}
              for s in TOPOLOGY),
            pg.init_config_map(meta("postgres-init", "datastore"), POSTGRES_INIT_SQL)]


def claim(name: str, tier: str, storage: str = "1Gi") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta(name, tier),
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": storage}}}}


def postgres() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for db in DB_OWNERS:
        name = f"{db}-postgres"
        out.append(claim(f"{name}-data", "datastore"))
        out.append(service(name, "datastore", [("postgres", 5432)]))
        args = []
        for setting in ("shared_buffers=8MB", "max_connections=40", "work_mem=1MB", "maintenance_work_mem=8MB",
                        "wal_buffers=256kB", "max_wal_size=64MB", "fsync=off",
                        # the seed is vacuumed once (seed.py): autovacuum's visits and the standby
                        # snapshots a replica-level WAL logs after each start rewrite files of an
                        # untouched database, and every reset would restore and restart it
                        "autovacuum=off", "wal_level=minimal", "max_wal_senders=0"):
            args += ["-c", setting]
        pod = {"terminationGracePeriodSeconds": 30, "containers": [{
            "name": "postgres", "image": "postgres:15", "args": args,
            "ports": [{"name": "postgres", "containerPort": 5432}],
            # the superuser: a random password at initdb, read once from the kernel and stored nowhere,
            # cleared by the init script (POSTGRES_INIT_SQL); reached over the pod's Unix socket only
            "env": [*pg.superuser_env(),
                    secret_env("DB_ADMIN_USER", f"{db}-db", "admin-username"),
                    secret_env("DB_ADMIN_PASSWORD", f"{db}-db", "admin-password"),
                    secret_env("DB_USER", f"{db}-db", "username"), secret_env("DB_PASSWORD", f"{db}-db", "password"),
                    {"name": "POSTGRES_DB", "value": database_name(db)},
                    {"name": "PGDATA", "value": "/var/lib/postgresql/data/pgdata"}],
            "volumeMounts": [{"name": "data", "mountPath": "/var/lib/postgresql/data"},
                             pg.init_mount()],
            "readinessProbe": {"tcpSocket": {"port": 5432}, "periodSeconds": 2, "failureThreshold": 3},
            "livenessProbe": {"tcpSocket": {"port": 5432}, "initialDelaySeconds": 30, "periodSeconds": 10,
                              "failureThreshold": 6},
            "resources": resources("50m", "64Mi")}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": f"{name}-data"}},
                        pg.init_volume("postgres-init")]}
        out.append(workload("StatefulSet", name, "datastore", pod))
    return out


def caches() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for r in REDIS:
        name = f"{r}-redis"
        persistent = r in PERSISTENT_REDIS
        if persistent:
            out.append(claim(f"{name}-data", "cache"))
        out.append(service(name, "cache", [("redis", 6379)]))
        container: dict[str, Any] = {
            "name": "redis", "image": "redis:7", "args": list(REDIS_PERSISTENT_ARGS if persistent else REDIS_CACHE_ARGS),
            "ports": [{"name": "redis", "containerPort": 6379}],
            "readinessProbe": {"tcpSocket": {"port": 6379}, "periodSeconds": 2},
            "livenessProbe": {"tcpSocket": {"port": 6379}, "initialDelaySeconds": 5, "periodSeconds": 10},
            "resources": resources("20m", "16Mi", "128Mi")}
        pod: dict[str, Any] = {"containers": [container]}
        if persistent:
            container["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
            pod["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": f"{name}-data"}}]
        # replaced in place (maxSurge 0): the old server gets SIGTERM, flushes its file and exits as the new pod starts
        out.append(workload("Deployment", name, "cache", pod))
    for m in MEMCACHED:
        name = f"{m}-memcached"
        out.append(service(name, "cache", [("memcached", 11211)]))
        out.append(workload("Deployment", name, "cache", {"containers": [{
            "name": "memcached", "image": "memcached:1.6", "args": ["-l", "0.0.0.0", "-m", "32", "-c", "1024", "-t", "1"],
            "ports": [{"name": "memcached", "containerPort": 11211}],
            "readinessProbe": {"tcpSocket": {"port": 11211}, "periodSeconds": 2},
            "livenessProbe": {"tcpSocket": {"port": 11211}, "initialDelaySeconds": 5, "periodSeconds": 10},
            "resources": resources("20m", "16Mi", "128Mi")}]}))
    return out


def _service_env(svc: str) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = [
        {"name": "SN_CONFIG", "value": "/etc/social-network/service-config.json"},
        {"name": "RPC_TIMEOUT_MS", "value": "2000"}, {"name": "RPC_RETRIES", "value": "1"},
        {"name": "RPC_BACKOFF_MS", "value": "20"}, {"name": "SERVER_WORKERS", "value": "32"},
        {"name": "LOG_LEVEL", "value": "info"}, {"name": "OTEL_EXPORTER_OTLP_ENDPOINT", "value": ""},
        {"name": "OTEL_SERVICE_NAME", "value": svc}]
    db = TOPOLOGY[svc].postgres
    if db:
        env += [secret_env("DB_USER", f"{db}-db", "username"), secret_env("DB_PASSWORD", f"{db}-db", "password")]
    return env


def _probes(port: int = ADMIN_PORT) -> dict[str, Any]:
    return {"readinessProbe": {"httpGet": {"path": "/readyz", "port": port}, "periodSeconds": 2, "timeoutSeconds": 3,
                               "failureThreshold": 3},
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": port}, "initialDelaySeconds": 10,
                              "periodSeconds": 10, "timeoutSeconds": 3, "failureThreshold": 3}}


def _migrate(db: str) -> dict[str, Any]:
    return {"name": "migrate", "image": IMAGE, "args": ["migrate", db],
            "env": [{"name": "DB_ADDR", "value": f"{db}-postgres:5432"},
                    secret_env("DB_USER", f"{db}-db", "username"), secret_env("DB_PASSWORD", f"{db}-db", "password"),
                    secret_env("DB_ADMIN_USER", f"{db}-db", "admin-username"),
                    secret_env("DB_ADMIN_PASSWORD", f"{db}-db", "admin-password")],
            "resources": resources()}


def services() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    owners = {svc: db for db, svc in DB_OWNERS.items()}
    scrape = {"prometheus.io/scrape": "true", "prometheus.io/port": str(ADMIN_PORT), "prometheus.io/path": "/metrics"}
    for svc, topo in TOPOLOGY.items():
        main_port = THRIFT_PORT if topo.thrift else (NGINX_PORT if svc == "nginx-thrift" else 8081)
        port_name = "thrift" if topo.thrift else "http"
        container: dict[str, Any] = {
            "name": "thrift-gateway" if svc == "nginx-thrift" else svc, "image": IMAGE, "args": [svc],
            "ports": [{"name": "admin", "containerPort": ADMIN_PORT}], "env": _service_env(svc),
            "volumeMounts": [{"name": "config", "mountPath": "/etc/social-network", "readOnly": True}],
            **_probes(), "resources": resources()}
        containers = [container]
        if svc == "nginx-thrift":
            container["ports"].insert(0, {"name": "gateway", "containerPort": GATEWAY_PORT})
            containers.insert(0, {
                "name": "nginx", "image": IMAGE, "args": ["nginx"],
                "ports": [{"name": "http", "containerPort": NGINX_PORT}],
                "env": [{"name": "NGINX_PORT", "value": str(NGINX_PORT)},
                        {"name": "GATEWAY_ADDR", "value": f"127.0.0.1:{GATEWAY_PORT}"}],
                "readinessProbe": {"httpGet": {"path": "/nginx_status", "port": NGINX_PORT}, "periodSeconds": 2},
                "livenessProbe": {"tcpSocket": {"port": NGINX_PORT}, "initialDelaySeconds": 10, "periodSeconds": 10},
                "resources": resources("20m", "16Mi", "128Mi")})
        else:
            container["ports"].insert(0, {"name": port_name, "containerPort": main_port})
        pod: dict[str, Any] = {"terminationGracePeriodSeconds": 10, "containers": containers,
                               "volumes": [{"name": "config", "configMap": {"name": f"{svc}-config"}}]}
        if svc in owners:
            pod = {"initContainers": [_migrate(owners[svc])], **pod}
        out.append(service(svc, "frontend" if not topo.thrift else "service",
                           [(port_name, main_port), ("admin", ADMIN_PORT)]))
        out.append(workload("Deployment", svc, "frontend" if not topo.thrift else "service", pod, annotations=scrape))
    return out


def workload_objects() -> list[dict[str, Any]]:
    name = "workload-generator"
    pod = {"priorityClassName": "sregym-infrastructure", "containers": [{
        "name": name, "image": IMAGE, "args": ["workload"],
        "env": [{"name": "WORKLOAD_TARGET", "value": f"http://nginx-thrift.{NS}.svc.cluster.local:{NGINX_PORT}"},
                {"name": "WORKLOAD_RATE", "value": "5"}, {"name": "WORKLOAD_DURATION", "value": "86400"},
                {"name": "WORKLOAD_MAX_REQUESTS", "value": "10000000"},
                {"name": "WORKLOAD_DISTRIBUTION", "value": "poisson"}, {"name": "WORKLOAD_PORT", "value": "8089"},
                {"name": "WORKLOAD_TIMEOUT_S", "value": "5"},
                secret_env("WORKLOAD_SECRET", "workload-signing-key", "key")],
        "ports": [{"name": "http", "containerPort": 8089}],
        "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8089}, "periodSeconds": 2},
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8089}, "initialDelaySeconds": 10, "periodSeconds": 10},
        "resources": resources("50m", "64Mi")}]}
    return [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "sregym-infrastructure"},
         "value": 100000000, "globalDefault": False,
         "description": "SREGym benchmark infrastructure (workload generator, observability)"},
        # the key is replaced by a random one at deploy time (manifests.render): the file's value is a placeholder
        {"apiVersion": "v1", "kind": "Secret", "metadata": meta("workload-signing-key", "workload", WORKLOAD_NS),
         "type": "Opaque", "stringData": {"key": "replaced-at-deploy-time"}},
        service(name, "workload", [("http", 8089)], WORKLOAD_NS),
        workload("Deployment", name, "workload", pod, WORKLOAD_NS,
                 annotations={"prometheus.io/scrape": "true", "prometheus.io/port": "8089",
                              "prometheus.io/path": "/metrics"}),
    ]


FILES = {
    "00-namespaces.yaml": ("The app's namespace and the workload generator's (hidden from agents).", namespaces),
    "10-secrets.yaml": ("Database credentials: each service's login role and its database's admin (the owner of the "
                        "database, no superuser: issue #34).", secrets),
    "20-configmaps.yaml": ("service-config.json per service: port, peers, datastore addresses; postgres-init, the "
                           "databases' roles.", configmaps),
    "30-postgres.yaml": ("One PostgreSQL per document database (MongoDB in the original), data on a PVC.", postgres),
    "40-caches.yaml": ("Redis (home timelines, kept on a PVC; user-timeline and social-graph caches) and memcached "
                       "(user, url, post, media caches).", caches),
    "50-services.yaml": ("The services, one image; args choose the service. Thrift on 9090, admin on 9100.",
                         services),
    "60-workload.yaml": ("The workload generator in its hidden namespace. GET /stats?window=30.", workload_objects),
}


def render_files() -> dict[str, str]:
    out = {}
    for name, (comment, build) in FILES.items():
        text = "# Generated by sregym_app_social_network.manifest_source; do not edit by hand.\n# " + comment + "\n"
        out[name] = text + yaml.safe_dump_all(build(), sort_keys=False, width=120)
    return out


def main() -> int:
    target = Path(__file__).parent / "manifests"
    target.mkdir(exist_ok=True)
    for name, text in render_files().items():
        (target / name).write_text(text)
    print(f"wrote {len(FILES)} files to {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
