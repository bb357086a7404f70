"""Run the whole app as local processes on 127.0.0.1: for tests, benchmarks and debugging.

One PostgreSQL server holds one database and one login role per data-owning service (on a cluster
each service has its own server; the schema, roles and grants are identical), three memcached
servers front profile, rate and reservation, and every service runs as
``python -m sregym_app_hotel_reservation.serve <name>`` with a generated config file. Only
127.0.0.1 is ever used. PostgreSQL refuses to run as root, so under root it runs as the ``postgres``
system user.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from sregym_appkit.service import stop_process

from . import config

PG_BIN_CANDIDATES = ("/usr/lib/postgresql/17/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/15/bin")
ADMIN_PASSWORD = "hotel-admin"
SERVICE_ORDER = ("geo", "rate", "profile", "recommendation", "user", "reservation", "search", "frontend")


_handed_out: set[int] = set()


def free_port() -> int:
    """A free 127.0.0.1 port below the kernel's ephemeral range, never the same twice per process.

    Ports the kernel hands out for outgoing connections (32768+) would race with our listeners.
    """
    rng = random.Random()
    for _ in range(500):
        port = rng.randint(20000, 32000)
        if port in _handed_out:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise RuntimeError("no free port found in 20000-32000")


def pg_bin(tool: str) -> str:
    for d in PG_BIN_CANDIDATES:
        if Path(d, tool).exists():
            return str(Path(d, tool))
    found = shutil.which(tool)
    if not found:
        raise FileNotFoundError(f"PostgreSQL tool {tool!r} not found (install postgresql)")
    return found


def _demote() -> Any:
    """A preexec_fn running the child as the postgres user when we are root."""
    if os.geteuid() != 0:
        return None
    pw = pwd.getpwnam("postgres")

    def demote() -> None:
        os.setgid(pw.pw_gid)
        os.setuid(pw.pw_uid)

    return demote


def role_password(service: str) -> str:
    return f"{service}-secret"


class Postgres:
    """A throwaway PostgreSQL server on 127.0.0.1 with a database and role per service."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.data = root / "data"
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.logfile = root / "postgres.log"

    def init(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        pwfile = self.root / "pw"
        pwfile.write_text(ADMIN_PASSWORD)
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
            os.chown(pwfile, pw.pw_uid, pw.pw_gid)
        subprocess.run([pg_bin("initdb"), "-D", str(self.data), "-U", "postgres", "--pwfile", str(pwfile),
                        "-A", "scram-sha-256", "-E", "UTF8", "--no-sync", "--locale=C"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=_demote())

    def start(self) -> None:
        log = open(self.logfile, "ab")  # noqa: SIM115 - owned by the child
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chown(self.logfile, pw.pw_uid, pw.pw_gid)
        self.proc = subprocess.Popen(
            [pg_bin("postgres"), "-D", str(self.data), "-p", str(self.port), "-k", str(self.root),
             "-c", "listen_addresses=127.0.0.1", "-c", "shared_buffers=16MB", "-c", "max_connections=100",
             "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"],
            stdout=log, stderr=log, preexec_fn=_demote(), start_new_session=True)
        log.close()
        self.wait_accepting()

    def wait_accepting(self, timeout: float = 30) -> None:
        import psycopg
        deadline = time.monotonic() + timeout
        while True:
            try:
                with psycopg.connect(self.admin_dsn("postgres"), connect_timeout=2):
                    return
            except psycopg.OperationalError:
                if time.monotonic() > deadline or (self.proc and self.proc.poll() is not None):
                    raise RuntimeError(f"postgres did not start; see {self.logfile}") from None
                time.sleep(0.1)

    def admin_dsn(self, dbname: str) -> str:
        return f"host=127.0.0.1 port={self.port} dbname={dbname} user=postgres password={ADMIN_PASSWORD}"

    def create_databases(self, names: tuple[str, ...]) -> None:
        import psycopg
        with psycopg.connect(self.admin_dsn("postgres"), autocommit=True) as conn:
            for name in names:
                if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
                    conn.execute(f'CREATE DATABASE "{name}"')

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # fast shutdown
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)



def scratch_postgres_unavailable() -> str | None:
    """Why :func:`scratch_postgres` cannot run here (None: it can), for a skip."""
    try:
        pg_bin("initdb")
        pg_bin("psql")
    except FileNotFoundError as exc:
        return str(exc)
    return None


@contextlib.contextmanager
def scratch_postgres_or_skip(prefix: str, databases: tuple[str, ...] = ()) -> Iterator[Postgres]:
    """:func:`scratch_postgres` for a test: skipped (``unittest.SkipTest``, which pytest honours) where
    the machine has no PostgreSQL."""
    import unittest

    if reason := scratch_postgres_unavailable():
        raise unittest.SkipTest(reason)
    with scratch_postgres(prefix, databases) as server:
        yield server


@contextlib.contextmanager
def scratch_postgres(prefix: str = "sregym-pg-", databases: tuple[str, ...] = ()) -> Iterator[Postgres]:
    """A started PostgreSQL in a fresh temporary directory, with ``databases`` created, stopped and
    removed afterwards (tests). FileNotFoundError when the machine has no PostgreSQL."""
    pg_bin("initdb")
    # PostgreSQL may run as another user: its directory must not sit under a private tmp dir
    root = Path(tempfile.mkdtemp(prefix=prefix))
    os.chmod(root, 0o755)
    server = Postgres(root / "pg")
    try:
        server.init()
        server.start()
        if databases:
            server.create_databases(databases)
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


class Memcached:
    """A memcached server on 127.0.0.1."""

    def __init__(self, memory_mb: int = 16) -> None:
        self.port = free_port()
        self.memory_mb = memory_mb
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        argv = ["memcached", "-l", "127.0.0.1", "-p", str(self.port), "-U", "0", "-m", str(self.memory_mb), "-t", "1"]
        if os.geteuid() == 0:
            argv += ["-u", "memcache" if _user_exists("memcache") else "nobody"]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        _wait_port(self.port, 10, self.proc)

    def stop(self) -> None:
        if self.proc:
            stop_process(self.proc)


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def _wait_port(port: int, timeout: float, proc: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before listening on {port}")
        with socket.socket() as s:
            s.settimeout(0.2)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout}s")


class LocalApp:
    """The whole Hotel Reservation app as local processes. Use as a context manager."""

    def __init__(self, workdir: Path | None = None, *, env: Mapping[str, str] | None = None,
                 otlp_endpoint: str | None = None) -> None:
        # PostgreSQL may run as another user, so its directory must not sit under a private tmp dir.
        self.pg_root = Path(tempfile.mkdtemp(prefix="hotel-pg-"))
        os.chmod(self.pg_root, 0o755)
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="hotel-app-"))
        self.owns_workdir = workdir is None
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.env = dict(env or {})
        self.otlp_endpoint = otlp_endpoint
        self.postgres = Postgres(self.pg_root / "pg")
        self.memcached = {name: Memcached() for name in config.CACHED_SERVICES}
        self.ports = {name: free_port() for name in config.SERVICES}
        self.admin_ports = {name: free_port() for name in config.SERVICES}
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.service_env: dict[str, dict[str, str]] = {}

    # ---------------------------------------------------------------- datastores

    def start_datastores(self) -> None:
        self.postgres.init()
        self.postgres.start()
        self.postgres.create_databases(config.DATA_SERVICES)
        for mc in self.memcached.values():
            mc.start()

    def migrate(self) -> None:
        """Run every service's ``migrate`` step (the init container on a cluster), in parallel."""
        procs = {}
        for name in config.DATA_SERVICES:
            self.write_config(name)
            procs[name] = subprocess.Popen(
                [sys.executable, "-m", "sregym_app_hotel_reservation.serve", "migrate", name,
                 "--config", str(self.config_path(name))],
                env=self._env(name, {"DB_ADMIN_USER": "postgres", "DB_ADMIN_PASSWORD": ADMIN_PASSWORD,
                                     "MIGRATE_WAIT_S": "20"}),
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        failed = []
        for name, proc in procs.items():
            out, _ = proc.communicate(timeout=120)
            if proc.returncode != 0:
                failed.append(f"{name}: {out.decode()[-1500:]}")
        if failed:
            raise RuntimeError("migrate failed: " + " | ".join(failed))

    # ---------------------------------------------------------------- services

    def config_path(self, name: str) -> Path:
        return self.workdir / "config" / f"{name}.yaml"

    def log_path(self, name: str) -> Path:
        return self.workdir / "logs" / f"{name}.log"

    def config_data(self, name: str) -> dict[str, Any]:
        peers = {p: f"127.0.0.1:{self.ports[p]}" for p in config.PEERS[name]}
        database = {"host": "127.0.0.1", "port": self.postgres.port, "name": name}
        cache = {"host": "127.0.0.1", "port": self.memcached[name].port} if name in self.memcached else None
        return config.example(name, host="127.0.0.1", port=self.ports[name], admin_port=self.admin_ports[name],
                              peers=peers, database=database, cache=cache)

    def write_config(self, name: str, data: Mapping[str, Any] | None = None) -> Path:
        path = self.config_path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(dict(data if data is not None else self.config_data(name)), sort_keys=False))
        return path

    def _env(self, name: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "HOTEL_", "RPC_", "DB_"))}
        env.update({"PYTHONUNBUFFERED": "1", "HOTEL_CONFIG": str(self.config_path(name)),
                    "SHUTDOWN_GRACE_S": "1"})
        if name in config.DATA_SERVICES:
            env.update({"DB_USER": f"hotel_{name}", "DB_PASSWORD": role_password(name)})
        if self.otlp_endpoint:
            env.update({"OTEL_EXPORTER_OTLP_ENDPOINT": self.otlp_endpoint, "OTEL_BSP_SCHEDULE_DELAY": "200",
                        "OTEL_SERVICE_NAME": name})
        env.update(self.env)
        env.update(self.service_env.get(name, {}))
        env.update(extra or {})
        return env

    def start_service(self, name: str, env: Mapping[str, str] | None = None, write_config: bool = True) -> None:
        if write_config:
            self.write_config(name)
        if env is not None:
            self.service_env[name] = dict(env)
        self.log_path(name).parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path(name), "ab")  # noqa: SIM115 - owned by the child
        self.procs[name] = subprocess.Popen(
            [sys.executable, "-m", "sregym_app_hotel_reservation.serve", name], env=self._env(name),
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()

    def stop_service(self, name: str, timeout: float = 10) -> int | None:
        proc = self.procs.pop(name, None)
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        return proc.returncode

    def restart_service(self, name: str, env: Mapping[str, str] | None = None, write_config: bool = True) -> None:
        self.stop_service(name)
        self.start_service(name, env, write_config)

    def start_services(self) -> None:
        for name in SERVICE_ORDER:
            self.start_service(name)

    def admin_url(self, name: str, path: str) -> str:
        return f"http://127.0.0.1:{self.admin_ports[name]}{path}"

    @property
    def frontend_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['frontend']}"

    def readiness(self, name: str) -> tuple[int, dict[str, Any]]:
        try:
            with urllib.request.urlopen(self.admin_url(name, "/readyz"), timeout=3) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"{}")

    def wait_ready(self, names: tuple[str, ...] | None = None, timeout: float = 60) -> float:
        """Wait until every named service answers /readyz with 200; return the seconds waited."""
        start = time.monotonic()
        pending = list(names or SERVICE_ORDER)
        while pending:
            name = pending[0]
            proc = self.procs.get(name)
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {proc.returncode}: {self.log_path(name).read_text()[-3000:]}")
            try:
                status, _ = self.readiness(name)
            except (OSError, ValueError):
                status = 0
            if status == 200:
                pending.pop(0)
                continue
            if time.monotonic() - start > timeout:
                raise TimeoutError(f"{name} not ready after {timeout}s: {self.log_path(name).read_text()[-3000:]}")
            time.sleep(0.1)
        return time.monotonic() - start

    def metrics(self, name: str) -> str:
        with urllib.request.urlopen(self.admin_url(name, "/metrics"), timeout=3) as resp:
            return resp.read().decode()

    def logs(self, name: str) -> list[dict[str, Any]]:
        out = []
        for line in self.log_path(name).read_text().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
        return out

    def pids(self) -> list[int]:
        pids = [p.pid for p in self.procs.values() if p.poll() is None]
        pids += [m.proc.pid for m in self.memcached.values() if m.proc and m.proc.poll() is None]
        if self.postgres.proc and self.postgres.proc.poll() is None:
            pids.append(self.postgres.proc.pid)
        return pids

    def start(self) -> LocalApp:
        try:
            self.start_datastores()
            self.migrate()
            self.start_services()
            self.wait_ready()
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        for name in list(self.procs):
            self.stop_service(name)
        for mc in self.memcached.values():
            mc.stop()
        self.postgres.stop()
        shutil.rmtree(self.pg_root, ignore_errors=True)
        if self.owns_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> LocalApp:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
