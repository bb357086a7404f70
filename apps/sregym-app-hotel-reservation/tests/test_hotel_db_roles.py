"""The databases' roles as the manifests set them up (issue #34, round 5), on a real local PostgreSQL:
the init script the postgres image runs (ConfigMap ``postgres-init``) makes the Secret's admin the
owner of the database and no superuser, and clears the superuser's password; the migrate step then
creates and seeds the tables as that admin; and neither credential the Secret holds can run a program
on the database's host."""

from __future__ import annotations

import os
import subprocess

import pytest
from sregym_app_hotel_reservation import data
from sregym_app_hotel_reservation.manifests import render

SERVICE = "geo"


def _secret_and_init() -> tuple[dict[str, str], str]:
    docs = render()
    secret = next(d for d in docs if d["kind"] == "Secret" and d["metadata"]["name"] == f"{SERVICE}-db")
    init = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "postgres-init")
    return secret["stringData"], init["data"]["10-roles.sql"]


@pytest.fixture
def server():
    localrun = pytest.importorskip("sregym_app_hotel_reservation.localrun")
    with localrun.scratch_postgres_or_skip("roles-pg-", (SERVICE,)) as pg:
        yield pg, localrun


def test_the_secrets_admin_owns_the_database_seeds_it_and_cannot_run_programs(server, tmp_path):
    psycopg = pytest.importorskip("psycopg")
    pg, localrun = server
    secret, script = _secret_and_init()
    (tmp_path / "10-roles.sql").write_text(script)
    # as the image runs /docker-entrypoint-initdb.d/*.sql: psql as the superuser, the container's env
    env = {**os.environ, "PGPASSWORD": localrun.ADMIN_PASSWORD, "POSTGRES_DB": SERVICE,
           "DB_ADMIN_USER": secret["admin-username"], "DB_ADMIN_PASSWORD": secret["admin-password"],
           "DB_USER": secret["username"], "DB_PASSWORD": secret["password"]}
    subprocess.run([localrun.pg_bin("psql"), "-v", "ON_ERROR_STOP=1", "--no-psqlrc", "-h", "127.0.0.1",
                    "-p", str(pg.port), "-U", "postgres", "-d", SERVICE, "-f", str(tmp_path / "10-roles.sql")],
                   env=env, check=True, capture_output=True, timeout=60)

    def dsn(user: str, password: str) -> str:
        return f"host=127.0.0.1 port={pg.port} dbname={SERVICE} user={user} password={password}"

    # the superuser's password is gone: no TCP login as the superuser, whatever password
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(dsn("postgres", localrun.ADMIN_PASSWORD), connect_timeout=5).close()

    admin = dsn(secret["admin-username"], secret["admin-password"])
    assert data.migrate(SERVICE, admin, secret["username"], secret["password"], wait_s=10)
    with psycopg.connect(dsn(secret["username"], secret["password"])) as app:
        assert app.execute("SELECT count(*) FROM geo").fetchone()[0] == data.N_HOTELS

    for user, password in ((secret["admin-username"], secret["admin-password"]),
                           (secret["username"], secret["password"])):
        with psycopg.connect(dsn(user, password), autocommit=True) as conn:
            flags = conn.execute("SELECT rolsuper, rolcreaterole FROM pg_roles WHERE rolname = current_user").fetchone()
            assert flags == (False, False), user
            for statement in ("GRANT pg_execute_server_program TO CURRENT_USER",
                              "COPY (SELECT 1) TO PROGRAM 'true'",
                              "COPY (SELECT 1) TO '/tmp/sregym-roles-test'",
                              "ALTER SYSTEM SET max_connections = 5"):
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    conn.execute(statement)
    # what the app's faults and their fixes do as the admin: grant on its tables, lock them
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'REVOKE ALL ON geo FROM "{secret["username"]}"')
        conn.execute(f'GRANT SELECT ON geo TO "{secret["username"]}"')
        with conn.transaction():
            conn.execute("LOCK TABLE geo IN ACCESS EXCLUSIVE MODE")
