"""The grader's superuser sessions read the system catalogs, never an object the database's owner made
(issue #34, round 6). The owner of an app's database (the admin an agent reads from the Secret) may
create a schema named after the superuser, an operator ``||(name, name)`` or a view ``pg_roles`` in it
that shadows the catalogs' own, and put that schema first on the database's search_path: an operator
that ran ``COPY ... TO PROGRAM`` inside the superuser's fault check, and rewrote what it read, passed
mitigation with the revoked grant never restored. On a real local PostgreSQL, with the pack's own psql
command lines (sql._PSQL, the same for the TCP one), the trap is set and must not fire."""

from __future__ import annotations

import os
import subprocess

import pytest

from sregym_fault_datastore import sql

DB, ADMIN, APP = "geo", "geo_admin", "geo_app"

TRAP = f"""
CREATE SCHEMA postgres;
CREATE TABLE public.fired (who text);
CREATE FUNCTION postgres.concat_trap(a name, b name) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.fired VALUES (current_user);
  RETURN 'public.' || b::text;
END $$;
CREATE OPERATOR postgres.|| (LEFTARG = name, RIGHTARG = name, FUNCTION = postgres.concat_trap);
CREATE VIEW postgres.pg_roles AS SELECT * FROM pg_catalog.pg_roles UNION ALL
  SELECT 'ghost_role'::name, false, true, false, false, true, false, -1, '********'::text, NULL::timestamptz,
         false, NULL::text[], 0::oid FROM pg_catalog.pg_roles WHERE rolname = current_user;
ALTER DATABASE {DB} SET search_path = "$user", public, pg_catalog;
"""


@pytest.fixture
def trapped(scratch_pg, owned_database):
    import psycopg

    server, localrun = scratch_pg
    owned_database(DB, (ADMIN, "a"), (APP, "b"))
    # as the database's owner, not a superuser: what an agent holding the Secret can do
    with psycopg.connect(f"host=127.0.0.1 port={server.port} dbname={DB} user={ADMIN} password=a",
                         autocommit=True) as owner:
        owner.execute("CREATE TABLE public.geo (hotel_id int)")
        owner.execute(TRAP)
    env = {**os.environ, "PGHOST": "127.0.0.1", "PGPORT": str(server.port), "PGPASSWORD": localrun.ADMIN_PASSWORD,
           "POSTGRES_USER": "postgres", "POSTGRES_DB": DB}
    yield server, env, localrun


def _grader(env: dict[str, str], statement: str, script: str = sql._PSQL) -> list[str]:
    done = subprocess.run(["sh", "-c", script, "psql", statement], env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def _fired(server, localrun) -> list[str]:
    import psycopg

    with psycopg.connect(server.admin_dsn(DB)) as conn:
        return [r[0] for r in conn.execute("SELECT who FROM public.fired").fetchall()]


def test_the_trap_fires_for_a_session_on_the_databases_search_path(trapped):
    """The control: the same statements in a plain superuser session run the owner's operator and view."""
    server, env, localrun = trapped
    plain = sql._PSQL.replace(sql.CATALOG_ONLY + " ", "")
    assert plain != sql._PSQL
    assert "ghost_role" in _grader(env, "SELECT rolname FROM pg_roles", plain)
    _grader(env, "SELECT table_schema || '.' || table_name FROM information_schema.tables WHERE table_name = 'geo'",
            plain)
    assert _fired(server, localrun) == ["postgres"]  # the owner's code ran as the superuser


def test_the_graders_sessions_read_only_the_catalogs(trapped):
    server, env, localrun = trapped
    assert "ghost_role" not in _grader(env, "SELECT rolname FROM pg_roles")
    assert _grader(env, "SELECT table_schema || '.' || table_name FROM information_schema.tables "
                        "WHERE table_name = 'geo'") == ["public.geo"]
    assert _grader(env, "SHOW search_path") == ["pg_catalog,pg_temp"]
    # the pack's own checks, as they run in a fault's is_present
    rows = _grader(env, "SELECT rolname FROM pg_roles WHERE rolcanlogin AND NOT rolsuper AND rolname NOT LIKE "
                        "'pg\\_%' AND oid <> (SELECT datdba FROM pg_database WHERE datname = current_database()) "
                        "ORDER BY rolname")
    assert rows == [APP]
    # over TCP as the database's admin (the TLS checks): the same search_path
    tcp = {**env, "DB_ADMIN_USER": ADMIN, "DB_ADMIN_PASSWORD": "a", "POD_IP": "127.0.0.1"}
    assert _grader(tcp, "SHOW search_path", sql._PSQL_TCP) == ["pg_catalog,pg_temp"]
    assert "ghost_role" not in _grader(tcp, "SELECT rolname FROM pg_roles", sql._PSQL_TCP)
    assert _fired(server, localrun) == []
