"""Service configuration: a YAML/JSON file mounted from a ConfigMap plus environment variables.

The file says *where* things are (listen port, dependency and datastore addresses); the environment
says *how* to behave (credentials from Secrets, RPC timeout/retries/backoff, backend rate limit,
queue depth, pool and cache settings, feature flags). Everything is validated before the service
starts; each problem is logged as one ``config_invalid`` line naming the key, and the process exits
with status 2 so Kubernetes shows CrashLoopBackOff with a readable log.

Environment overrides for addresses (``<PEER>_ADDR``, ``DB_HOST``, ``DB_PORT``, ``CACHE_ADDR``) exist
because real deployments set them that way, and faults target them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import yaml
from sregym_appkit.config import ConfigInvalid, ServiceConfig

DEFAULT_CONFIG_PATH = "/etc/hotel/config.yaml"

# The topology: which peers each service calls and which datastores it owns.
PEERS: dict[str, tuple[str, ...]] = {
    "frontend": ("search", "profile", "recommendation", "user", "reservation"),
    "search": ("geo", "rate"),
    "geo": (),
    "rate": (),
    "profile": (),
    "recommendation": (),
    "user": (),
    "reservation": (),
}
DATA_SERVICES = ("geo", "rate", "profile", "recommendation", "user", "reservation")
CACHED_SERVICES = ("rate", "profile", "reservation")
SERVICES = tuple(PEERS)
DEFAULT_PORTS = {
    "frontend": 5000, "profile": 8081, "search": 8082, "geo": 8083, "rate": 8084,
    "recommendation": 8085, "user": 8086, "reservation": 8087,
}
ADMIN_PORT = 9090


@attrs.frozen(kw_only=True)
class Address:
    """A host:port endpoint."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


@attrs.frozen(kw_only=True)
class Database:
    """PostgreSQL connection settings (credentials come from env, i.e. a Secret)."""

    host: str
    port: int
    name: str
    user: str
    password: str = attrs.field(repr=False)
    pool_min: int
    pool_max: int
    pool_timeout_ms: int
    statement_timeout_ms: int

    @property
    def addr(self) -> str:
        return f"{self.host}:{self.port}"


@attrs.frozen(kw_only=True)
class Cache:
    """memcached settings."""

    host: str
    port: int
    enabled: bool
    ttl_s: int
    timeout_ms: int

    @property
    def addr(self) -> str:
        return f"{self.host}:{self.port}"


@attrs.frozen(kw_only=True)
class Rpc:
    """gRPC client behaviour toward peers, and the server-side admission limits."""

    timeout_ms: int
    retries: int
    backoff_ms: int
    backoff_max_ms: int
    rate_limit: float  # server side: requests/s admitted, 0 = unlimited
    queue_depth: int  # server side: concurrent RPCs accepted before RESOURCE_EXHAUSTED
    workers: int


@attrs.frozen(kw_only=True)
class Config(ServiceConfig):
    """Everything one service needs to start (its name, listen address and peers first)."""

    database: Database | None
    cache: Cache | None
    rpc: Rpc
    features: Mapping[str, bool]
    variant: str
    log_level: str
    source: str


def _get(data: Mapping[str, Any], dotted: str) -> Any:
    node: Any = data
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


class _Collector:
    def __init__(self, data: Mapping[str, Any], env: Mapping[str, str]) -> None:
        self.data, self.env = data, env
        self.problems: list[tuple[str, str, str]] = []

    def problem(self, path: str, message: str, hint: str = "") -> None:
        self.problems.append((path, message, hint))

    def required(self, dotted: str, kind: type, hint: str = "") -> Any:
        value = _get(self.data, dotted)
        if value is None:
            self.problem(dotted, "missing required key", hint or f"add '{dotted}' to the config file")
            return None
        if kind is int:
            return self.port(dotted, value)
        if not isinstance(value, kind) or (isinstance(value, str) and not value.strip()):
            self.problem(dotted, f"expected a non-empty {kind.__name__}, got {value!r}")
            return None
        return value

    def port(self, where: str, value: Any) -> int | None:
        try:
            port = int(value)
        except (TypeError, ValueError):
            self.problem(where, f"expected a port number, got {value!r}")
            return None
        if not 1 <= port <= 65535:
            self.problem(where, f"port {port} is outside 1-65535")
            return None
        return port

    def env_int(self, name: str, default: int, low: int, high: int) -> int:
        raw = self.env.get(name)
        if raw is None or raw == "":
            return default
        try:
            value = int(float(raw))
        except ValueError:
            self.problem(f"env.{name}", f"expected an integer, got {raw!r}")
            return default
        if not low <= value <= high:
            self.problem(f"env.{name}", f"{value} is outside {low}-{high}")
            return default
        return value

    def env_float(self, name: str, default: float, low: float, high: float) -> float:
        raw = self.env.get(name)
        if raw is None or raw == "":
            return default
        try:
            value = float(raw)
        except ValueError:
            self.problem(f"env.{name}", f"expected a number, got {raw!r}")
            return default
        if not low <= value <= high:
            self.problem(f"env.{name}", f"{value} is outside {low}-{high}")
            return default
        return value

    def env_bool(self, name: str, default: bool) -> bool:
        raw = self.env.get(name)
        if raw is None or raw == "":
            return default
        if raw.strip().lower() in ("1", "true", "yes", "on"):
            return True
        if raw.strip().lower() in ("0", "false", "no", "off"):
            return False
        self.problem(f"env.{name}", f"expected true/false, got {raw!r}")
        return default

    def address(self, where: str, raw: Any) -> str | None:
        if not isinstance(raw, str) or ":" not in raw:
            self.problem(where, f"expected 'host:port', got {raw!r}")
            return None
        host, _, port = raw.rpartition(":")
        if not host or self.port(where, port) is None:
            if not host:
                self.problem(where, f"missing host in {raw!r}")
            return None
        return raw


def read_file(path: str | Path) -> dict[str, Any]:
    """Read the YAML or JSON config file; raise ConfigInvalid naming the file on any problem."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigInvalid([(str(path), f"cannot read config file: {exc.strerror or exc}",
                              "is the ConfigMap mounted at this path?")]) from exc
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise ConfigInvalid([(str(path), f"not valid YAML/JSON: {exc}", "")]) from exc
    if not isinstance(data, dict):
        raise ConfigInvalid([(str(path), "the config file must hold a mapping", "")])
    return data


def load(service: str, data: Mapping[str, Any], env: Mapping[str, str] | None = None,
         source: str = "<memory>") -> Config:
    """Validate ``data`` (the parsed file) and ``env`` for ``service``; raise ConfigInvalid listing all problems."""
    env = os.environ if env is None else env
    if service not in PEERS:
        raise ConfigInvalid([("service", f"unknown service {service!r}", f"one of: {', '.join(SERVICES)}")])
    c = _Collector(data, env)
    declared = _get(data, "service")
    if declared is not None and declared != service:
        c.problem("service", f"config file is for {declared!r} but this process runs {service!r}",
                  "mount the right ConfigMap")
    port = c.required("listen.port", int)
    host = _get(data, "listen.host") or "0.0.0.0"
    admin_port = c.required("admin.port", int)
    if port is not None and admin_port is not None and port == admin_port:
        c.problem("admin.port", f"admin port {admin_port} equals listen port", "use distinct ports")

    peers: dict[str, str] = {}
    for peer in PEERS[service]:
        override = env.get(f"{peer.upper()}_ADDR")
        raw = override if override else _get(data, f"peers.{peer}")
        where = f"env.{peer.upper()}_ADDR" if override else f"peers.{peer}"
        if raw is None:
            c.problem(where, "missing required key", f"add 'peers.{peer}: <host>:<port>' to the config file")
            continue
        addr = c.address(where, raw)
        if addr:
            peers[peer] = addr

    rpc = Rpc(
        timeout_ms=c.env_int("RPC_TIMEOUT_MS", 1000, 1, 600_000),
        retries=c.env_int("RPC_RETRIES", 2, 0, 100),
        backoff_ms=c.env_int("RPC_BACKOFF_MS", 25, 0, 60_000),
        backoff_max_ms=c.env_int("RPC_BACKOFF_MAX_MS", 500, 0, 600_000),
        rate_limit=c.env_float("BACKEND_RATE_LIMIT", 0.0, 0.0, 1e6),
        queue_depth=c.env_int("QUEUE_DEPTH", 64, 1, 100_000),
        workers=c.env_int("SERVER_WORKERS", 8, 1, 256),
    )

    database = None
    if service in DATA_SERVICES:
        db_host = env.get("DB_HOST") or c.required("database.host", str)
        db_port = c.port("env.DB_PORT", env["DB_PORT"]) if env.get("DB_PORT") else c.required("database.port", int)
        db_name = c.required("database.name", str)
        user, password = env.get("DB_USER", ""), env.get("DB_PASSWORD", "")
        if not user:
            c.problem("env.DB_USER", "missing database user", "set DB_USER from the service's Secret")
        if not password:
            c.problem("env.DB_PASSWORD", "missing database password", "set DB_PASSWORD from the service's Secret")
        pool_min = c.env_int("DB_POOL_MIN", 1, 0, 100)
        pool_max = c.env_int("DB_POOL_MAX", 4, 1, 200)
        if pool_min > pool_max:
            c.problem("env.DB_POOL_MIN", f"DB_POOL_MIN {pool_min} exceeds DB_POOL_MAX {pool_max}")
        if db_host and db_port and db_name:
            database = Database(
                host=db_host, port=db_port, name=db_name, user=user, password=password,
                pool_min=pool_min, pool_max=pool_max,
                pool_timeout_ms=c.env_int("DB_POOL_TIMEOUT_MS", 2000, 1, 600_000),
                statement_timeout_ms=c.env_int("DB_STATEMENT_TIMEOUT_MS", 2000, 0, 600_000),
            )

    cache = None
    if service in CACHED_SERVICES:
        override = env.get("CACHE_ADDR")
        if override:
            addr = c.address("env.CACHE_ADDR", override)
            cache_host, cache_port = (addr.rpartition(":")[0], int(addr.rpartition(":")[2])) if addr else (None, None)
        else:
            cache_host, cache_port = c.required("cache.host", str), c.required("cache.port", int)
        if cache_host and cache_port:
            cache = Cache(
                host=cache_host, port=cache_port,
                enabled=c.env_bool("CACHE_ENABLED", True),
                ttl_s=c.env_int("CACHE_TTL_S", 300, 0, 86_400 * 30),
                timeout_ms=c.env_int("CACHE_TIMEOUT_MS", 200, 1, 60_000),
            )

    features = {"recommend_v2": c.env_bool("FEATURE_RECOMMEND_V2", False)}
    variant = env.get("HOTEL_BUILD_VARIANT", "stable") or "stable"
    if variant not in ("stable", "buggy"):
        c.problem("env.HOTEL_BUILD_VARIANT", f"unknown build variant {variant!r}", "stable or buggy")
    if c.problems:
        raise ConfigInvalid(c.problems)
    return Config(
        service=service, host=str(host), port=port, admin_port=admin_port, peers=peers,
        database=database, cache=cache, rpc=rpc, features=features, variant=variant,
        log_level=env.get("LOG_LEVEL", "info"), source=source,
    )


def example(service: str, *, host: str = "0.0.0.0", port: int | None = None, admin_port: int = ADMIN_PORT,
            peers: Mapping[str, str] | None = None, database: Mapping[str, Any] | None = None,
            cache: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A config file body for ``service`` with cluster defaults; tests override addresses."""
    data: dict[str, Any] = {
        "service": service,
        "listen": {"host": host, "port": port or DEFAULT_PORTS[service]},
        "admin": {"port": admin_port},
    }
    if PEERS[service]:
        data["peers"] = dict(peers) if peers is not None else {
            p: f"{p}:{DEFAULT_PORTS[p]}" for p in PEERS[service]}
    if service in DATA_SERVICES:
        data["database"] = dict(database) if database is not None else {
            "host": f"postgres-{service}", "port": 5432, "name": service}
    if service in CACHED_SERVICES:
        data["cache"] = dict(cache) if cache is not None else {"host": f"memcached-{service}", "port": 11211}
    return data
