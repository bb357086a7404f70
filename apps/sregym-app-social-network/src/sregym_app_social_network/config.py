"""The topology (who calls whom, who owns which datastore) and each service's configuration.

A service reads ``/etc/social-network/service-config.json`` (its ConfigMap ``<service>-config``):
``{"port": 9090, "peers": {...}, "postgres": {...}, "redis": {...}, "memcached": {...}}``, plus
environment variables: ``DB_USER``/``DB_PASSWORD`` (from the datastore's Secret), ``RPC_TIMEOUT_MS``,
``RPC_RETRIES``, ``RPC_BACKOFF_MS``, ``SERVER_WORKERS``, ``LOG_LEVEL`` and ``<PEER>_ADDR`` (overrides
a peer's address from the file, e.g. ``TEXT_SERVICE_ADDR``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

import attrs
from sregym_appkit.config import ConfigInvalid, ServiceConfig

DEFAULT_CONFIG_PATH = "/etc/social-network/service-config.json"
THRIFT_PORT = 9090
ADMIN_PORT = 9100
NGINX_PORT = 8080
GATEWAY_PORT = 8082
MEDIA_FRONTEND_PORT = 8081


@attrs.frozen
class Topology:
    thrift: str | None  # the Thrift service it implements (None: an HTTP process)
    peers: tuple[str, ...] = ()
    postgres: str | None = None  # the database it reads (``user``: the user-postgres StatefulSet)
    redis: str | None = None
    memcached: str | None = None


#: Thrift services of the DeathStarBench Social Network, with their calls and datastores
TOPOLOGY: dict[str, Topology] = {
    "compose-post-service": Topology("ComposePostService", (
        "unique-id-service", "user-service", "text-service", "media-service", "post-storage-service",
        "user-timeline-service", "home-timeline-service")),
    "text-service": Topology("TextService", ("url-shorten-service", "user-mention-service")),
    "user-mention-service": Topology("UserMentionService", (), postgres="user", memcached="user"),
    "url-shorten-service": Topology("UrlShortenService", (), postgres="url-shorten", memcached="url-shorten"),
    "media-service": Topology("MediaService"),
    "unique-id-service": Topology("UniqueIdService"),
    "user-service": Topology("UserService", ("social-graph-service",), postgres="user", memcached="user"),
    "social-graph-service": Topology("SocialGraphService", (), postgres="social-graph", redis="social-graph"),
    "post-storage-service": Topology("PostStorageService", (), postgres="post-storage", memcached="post-storage"),
    "user-timeline-service": Topology("UserTimelineService", ("post-storage-service",), postgres="user-timeline",
                                      redis="user-timeline"),
    "home-timeline-service": Topology("HomeTimelineService", ("post-storage-service", "social-graph-service"),
                                      redis="home-timeline"),
    # HTTP processes: the gateway behind nginx (nginx-thrift pod) and the media upload frontend
    "nginx-thrift": Topology(None, ("compose-post-service", "user-timeline-service", "home-timeline-service",
                                    "user-service", "social-graph-service")),
    "media-frontend": Topology(None, (), postgres="media", memcached="media"),
}
THRIFT_SERVICES = tuple(s for s, t in TOPOLOGY.items() if t.thrift)
SERVICES = tuple(TOPOLOGY)
#: the services whose pod runs the database migration (owner of the database)
DB_OWNERS = {"user": "user-service", "url-shorten": "url-shorten-service", "social-graph": "social-graph-service",
             "post-storage": "post-storage-service", "user-timeline": "user-timeline-service",
             "media": "media-frontend"}
DATABASES = tuple(DB_OWNERS)
REDIS = ("social-graph", "user-timeline", "home-timeline")
#: the Redis instances that hold the only copy of their data, so they persist it (append-only file on a
#: PVC): home timelines are written only to home-timeline-redis (as in DeathStarBench). The other two
#: are caches in front of PostgreSQL (a miss is filled from social-graph-postgres, user-timeline-postgres)
PERSISTENT_REDIS = ("home-timeline",)
MEMCACHED = ("user", "url-shorten", "post-storage", "media")


@attrs.frozen
class Config(ServiceConfig):
    """What one service needs to start: its name, listen address and peers, then its datastores."""

    postgres: Mapping[str, str] | None
    redis: str | None
    memcached: str | None
    timeout_ms: int
    retries: int
    backoff_ms: int
    workers: int
    source: str


def database_name(store: str) -> str:
    return store.replace("-", "_") + "_db"


def env_name(peer: str) -> str:
    return peer.upper().replace("-", "_") + "_ADDR"


def _int(env: Mapping[str, str], name: str, default: int, problems: list[tuple[str, str, str]]) -> int:
    raw = env.get(name, "")
    if raw == "":
        return default
    try:
        value = int(raw)
        if value < 0:
            raise ValueError
        return value
    except ValueError:
        problems.append((f"env.{name}", f"not a non-negative integer: {raw!r}", f"set {name} to e.g. {default}"))
        return default


def load(service: str, text: str | None, env: Mapping[str, str], source: str = DEFAULT_CONFIG_PATH) -> Config:
    """Parse and validate; every problem is collected and raised together in :class:`ConfigInvalid`."""
    topo = TOPOLOGY[service]
    problems: list[tuple[str, str, str]] = []
    data: dict[str, Any] = {}
    if text is None:
        problems.append((source, "config file not found", f"mount the ConfigMap {service}-config at "
                                                            f"{os.path.dirname(DEFAULT_CONFIG_PATH)}"))
    else:
        try:
            data = json.loads(text)
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            problems.append((source, f"invalid JSON: {exc}", f"fix the ConfigMap {service}-config"))
            data = {}
    peers: dict[str, str] = {}
    file_peers = data.get("peers") or {}
    for peer in topo.peers:
        addr = env.get(env_name(peer)) or file_peers.get(peer, "")
        if not addr or ":" not in addr:
            if text is not None:
                problems.append((f"peers.{peer}", "missing or not host:port", f"set peers.{peer} or {env_name(peer)}"))
            continue
        peers[peer] = addr
    postgres = None
    if topo.postgres:
        pg = data.get("postgres") or {}
        user, password = env.get("DB_USER", ""), env.get("DB_PASSWORD", "")
        if not user or not password:
            problems.append(("env.DB_USER/DB_PASSWORD", "missing database credentials",
                             f"set them from the Secret {topo.postgres}-db"))
        if text is not None and not pg.get("addr"):
            problems.append(("postgres.addr", "missing", f"set the address of {topo.postgres}-postgres"))
        postgres = {"addr": str(pg.get("addr", "")), "database": str(pg.get("database", database_name(topo.postgres))),
                    "user": user, "password": password}
    redis = str((data.get("redis") or {}).get("addr", "")) if topo.redis else None
    memcached = str((data.get("memcached") or {}).get("addr", "")) if topo.memcached else None
    if topo.redis and text is not None and not redis:
        problems.append(("redis.addr", "missing", f"set the address of {topo.redis}-redis"))
    default_port = THRIFT_PORT if topo.thrift else (GATEWAY_PORT if service == "nginx-thrift" else MEDIA_FRONTEND_PORT)
    port = data.get("port", default_port)
    if not isinstance(port, int) or not 0 < port < 65536:
        problems.append(("port", f"not a port: {port!r}", "a number in 1..65535"))
        port = default_port
    cfg = Config(service=service, host="0.0.0.0", port=port, admin_port=_int(env, "ADMIN_PORT", ADMIN_PORT, problems),
                 peers=peers, postgres=postgres, redis=redis, memcached=memcached,
                 timeout_ms=_int(env, "RPC_TIMEOUT_MS", 2000, problems), retries=_int(env, "RPC_RETRIES", 1, problems),
                 backoff_ms=_int(env, "RPC_BACKOFF_MS", 20, problems), workers=_int(env, "SERVER_WORKERS", 32, problems),
                 source=source)
    if problems:
        raise ConfigInvalid(problems)
    return cfg


def file_config(service: str) -> dict[str, Any]:
    """The service-config.json the manifests ship for ``service``."""
    topo = TOPOLOGY[service]
    out: dict[str, Any] = {"port": THRIFT_PORT if topo.thrift else (
        GATEWAY_PORT if service == "nginx-thrift" else MEDIA_FRONTEND_PORT)}
    if topo.peers:
        out["peers"] = {p: f"{p}:{THRIFT_PORT}" for p in topo.peers}
    if topo.postgres:
        out["postgres"] = {"addr": f"{topo.postgres}-postgres:5432", "database": database_name(topo.postgres)}
    if topo.redis:
        out["redis"] = {"addr": f"{topo.redis}-redis:6379"}
    if topo.memcached:
        out["memcached"] = {"addr": f"{topo.memcached}-memcached:11211"}
    return out
