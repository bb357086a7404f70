"""The app template's PostgreSQL as its shipped manifests set it up, on a real local PostgreSQL (issue #34):
the init script the postgres image runs makes the Secret's role the database's owner and no superuser,
that role can create and fill the app's tables, and the superuser has no password left. A new app copied
from the template inherits no superuser in any Secret an agent reads.

The script is taken from the shipped ``10-datastore.yaml`` and run with the environment its StatefulSet
gives the container, so the wiring (variable names, Secret keys) is checked with the SQL."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

SHIPPED = Path(__file__).parents[1] / "apps/_template/src/sregym_app_myapp/manifests/10-datastore.yaml"


def _container_env(docs: list[dict], secret: dict[str, str]) -> dict[str, str]:
    """The postgres container's environment as the node would set it (Secret references resolved)."""
    statefulset = next(d for d in docs if d["kind"] == "StatefulSet")
    env: dict[str, str] = {}
    for var in statefulset["spec"]["template"]["spec"]["containers"][0]["env"]:
        ref = (var.get("valueFrom") or {}).get("secretKeyRef")
        env[var["name"]] = secret[ref["key"]] if ref else var["value"]
    return env


@pytest.fixture
def server():
    localrun = pytest.importorskip("sregym_app_hotel_reservation.localrun")
    with localrun.scratch_postgres_or_skip("template-roles-pg-", ("myapp",)) as pg:
        yield pg, localrun


def test_the_template_secret_owns_its_database_and_is_no_superuser(server, tmp_path):
    psycopg = pytest.importorskip("psycopg")
    pg, localrun = server
    docs = [d for d in yaml.safe_load_all(SHIPPED.read_text()) if d]
    secret = next(d for d in docs if d["kind"] == "Secret")["stringData"]
    script = next(d for d in docs if d["kind"] == "ConfigMap")["data"]["10-roles.sql"]
    env = _container_env(docs, secret)
    assert env["POSTGRES_USER"] == "postgres" and "POSTGRES_PASSWORD" not in env
    assert env["POSTGRES_PASSWORD_FILE"] == "/proc/sys/kernel/random/uuid"
    assert secret["username"] != env["POSTGRES_USER"]
    (tmp_path / "10-roles.sql").write_text(script)
    # as the image runs /docker-entrypoint-initdb.d/*.sql: psql as the superuser with the container's env
    run_env = {**os.environ, **{k: v for k, v in env.items() if k != "PGDATA"},
               "POSTGRES_DB": "myapp", "PGPASSWORD": localrun.ADMIN_PASSWORD}
    subprocess.run([localrun.pg_bin("psql"), "-v", "ON_ERROR_STOP=1", "--no-psqlrc", "-h", "127.0.0.1",
                    "-p", str(pg.port), "-U", "postgres", "-d", "myapp", "-f", str(tmp_path / "10-roles.sql")],
                   env=run_env, check=True, capture_output=True, timeout=60)

    def dsn(user: str, password: str) -> str:
        return f"host=127.0.0.1 port={pg.port} dbname=myapp user={user} password={password}"

    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(dsn("postgres", localrun.ADMIN_PASSWORD), connect_timeout=5).close()
    with psycopg.connect(dsn(secret["username"], secret["password"]), autocommit=True) as conn:
        assert conn.execute("SELECT rolsuper, rolcreaterole, rolcreatedb FROM pg_roles "
                            "WHERE rolname = current_user").fetchone() == (False, False, False)
        assert conn.execute("SELECT pg_get_userbyid(datdba) FROM pg_database "
                            "WHERE datname = current_database()").fetchone()[0] == secret["username"]
        # what the backend does at start: create and seed its table
        conn.execute("CREATE TABLE items (id int PRIMARY KEY, name text)")
        conn.execute("INSERT INTO items VALUES (1, 'one')")
        assert conn.execute("SELECT count(*) FROM items").fetchone()[0] == 1
        for statement in ("GRANT pg_execute_server_program TO CURRENT_USER",
                          "COPY (SELECT 1) TO PROGRAM 'true'",
                          "ALTER SYSTEM SET max_connections = 5"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
