"""PostgreSQL as every app runs it: no credential an agent can read is a superuser (issue #34).

An agent reads the app's Secrets (it must, to debug a login fault). If one of them held a superuser's
password, the agent could run ``COPY ... TO PROGRAM`` in the database pod, or rewrite the catalogs the
grader reads. So the ``postgres`` image is started the way this module builds it:

- the superuser's password comes from ``POSTGRES_PASSWORD_FILE=/proc/sys/kernel/random/uuid``: random,
  read once by ``initdb``, in no Secret or manifest, and cleared by the init script, so the superuser is
  reached only over the database pod's Unix socket (where the fault packs run their SQL);
- the init script (a ConfigMap mounted at ``/docker-entrypoint-initdb.d``, run once on an empty data
  directory) creates the Secret's login roles without SUPERUSER, CREATEROLE or CREATEDB (on PostgreSQL
  15 a CREATEROLE role can grant itself ``pg_execute_server_program``) and gives the database to the
  owner role; on PostgreSQL 15 the ``public`` schema belongs to the database's owner, so that role can
  create the app's tables;
- ``VACUUM (FREEZE)`` of the shared catalogs removes the old row versions, so the cleared password's
  hash is not left on disk in a dead tuple.

Hotel Reservation writes the same script in YAML; Social Network and the app template build theirs here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: where the image runs the init scripts from, and the script's file name in the ConfigMap
INIT_DIR = "/docker-entrypoint-initdb.d"
INIT_SCRIPT = "10-roles.sql"
#: a random value each time it is read (the kernel's): the superuser's password at initdb
RANDOM_PASSWORD_FILE = "/proc/sys/kernel/random/uuid"

_LOGIN = "LOGIN NOSUPERUSER NOCREATEROLE NOCREATEDB"


def roles_init_sql(*, owner: tuple[str, str], app: tuple[str, str] | None = None) -> str:
    """The init script: ``owner`` and ``app`` are (user variable, password variable) pairs of the
    container's environment (psql's ``\\getenv``, so no value is written into the ConfigMap). The owner
    role owns ``$POSTGRES_DB``; the app role, if any, is a plain login (its grants are the app's)."""
    lines = [f"\\getenv admin_user {owner[0]}", f"\\getenv admin_password {owner[1]}"]
    if app:
        lines += [f"\\getenv app_user {app[0]}", f"\\getenv app_password {app[1]}"]
    lines += ["\\getenv database POSTGRES_DB",
              f"CREATE ROLE :\"admin_user\" {_LOGIN} PASSWORD :'admin_password';"]
    if app:
        lines.append(f"CREATE ROLE :\"app_user\" {_LOGIN} PASSWORD :'app_password';")
    lines += ["ALTER DATABASE :\"database\" OWNER TO :\"admin_user\";",
              "ALTER ROLE CURRENT_USER PASSWORD NULL;",
              "VACUUM (FREEZE) pg_authid, pg_database, pg_shdepend;"]
    return "\n".join(lines) + "\n"


def superuser_env() -> list[dict[str, Any]]:
    """The superuser's variables: its name, and a password nobody can know (cleared by the init script)."""
    return [{"name": "POSTGRES_USER", "value": "postgres"},
            {"name": "POSTGRES_PASSWORD_FILE", "value": RANDOM_PASSWORD_FILE}]


def init_config_map(metadata: dict[str, Any], sql: str) -> dict[str, Any]:
    """The ConfigMap holding the init script (``metadata`` as the app's builders make it)."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {INIT_SCRIPT: sql}}


def init_mount(volume: str = "init") -> dict[str, Any]:
    """The container's read-only mount of the init script's volume."""
    return {"name": volume, "mountPath": INIT_DIR, "readOnly": True}


def init_volume(config_map: str, volume: str = "init") -> dict[str, Any]:
    """The pod's volume of the init script's ConfigMap."""
    return {"name": volume, "configMap": {"name": config_map}}


def run_migration(migrate: Callable[[], object], *, peer: str, addr: str) -> int:
    """The last step of an app's ``migrate`` command (its datastore's init container): ``migrate()``
    (roles, schema and seed data, as the app's admin role). Exit status 0 once it ran; 1, with one
    ``migrate_failed`` log line naming ``peer`` at ``addr`` and the first line of PostgreSQL's error,
    when the database refused it (the init container fails and the kubelet retries it)."""
    import psycopg

    from . import logs

    try:
        migrate()
    except psycopg.Error as exc:
        text = str(exc).strip()
        logs.error("migrate_failed", peer=peer, addr=addr, error=text.splitlines()[0] if text else type(exc).__name__)
        return 1
    return 0
