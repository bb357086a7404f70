"""A grant repaired by handing the service's login role more than it had is no repair (issue #34, red-team round 15,
finding 4: ``GRANT ALL ... WITH GRANT OPTION`` and a role made again as SUPERUSER passed every oracle). On a real local
PostgreSQL: the faults' own statements run through the pack's psql command line, as in the pod (only kubectl's exec is
stood in for, by running that command line here)."""

from __future__ import annotations

import os
import subprocess
from types import SimpleNamespace

import pytest

from sregym_fault_datastore import postgres, sql

DB, ADMIN, APP = "geo", "geo_admin", "geo_app"


@pytest.fixture
def database(scratch_pg, owned_database, monkeypatch):
    import psycopg

    server, localrun = scratch_pg
    owned_database(DB, (ADMIN, "a"), (APP, "b"))
    with psycopg.connect(f"host=127.0.0.1 port={server.port} dbname={DB} user={ADMIN} password=a",
                         autocommit=True) as owner:
        owner.execute("CREATE TABLE public.geo (hotel_id int)")
        owner.execute("CREATE TABLE public.rates (hotel_id int)")
        owner.execute(f"GRANT SELECT ON public.geo TO {APP}")
    env = {**os.environ, "PGHOST": "127.0.0.1", "PGPORT": str(server.port), "PGPASSWORD": localrun.ADMIN_PASSWORD,
           "POSTGRES_USER": "postgres", "POSTGRES_DB": DB}

    def local_psql(ctx, target, statement, *, check=True, sslmode=None):
        done = subprocess.run(["sh", "-c", sql._PSQL, "psql", statement], env=env, capture_output=True, text=True,
                              timeout=30)
        assert done.returncode == 0 or not check, done.stderr
        return [line.split("|") for line in done.stdout.splitlines() if line.strip()]

    monkeypatch.setattr(sql, "psql", local_psql)
    monkeypatch.setattr(postgres, "psql", local_psql)

    def admin(statement: str) -> None:
        with psycopg.connect(server.admin_dsn(DB), autocommit=True) as conn:
            conn.execute(statement)
    return admin


def test_db_revoke_is_repaired_only_by_the_grants_it_took(database):
    ctx, target = SimpleNamespace(state={}), None
    postgres.revoke_inject(ctx, target, {})
    assert ctx.state["grants"] == {APP: [("public.geo", "SELECT")]}
    assert postgres.revoke_present(ctx, target, {})  # the fault
    database(f"GRANT ALL PRIVILEGES ON ALL TABLES IN SCHEMA public TO {APP} WITH GRANT OPTION")
    assert postgres.revoke_present(ctx, target, {}), "every privilege on every table is not the grant it had"
    database(f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {APP}")
    database(f"GRANT SELECT ON public.geo TO {APP}")
    assert not postgres.revoke_present(ctx, target, {})  # the repair
    database(f"ALTER ROLE {APP} SUPERUSER")
    assert postgres.revoke_present(ctx, target, {}), "a superuser login role is not the role it was"
    assert sql.role_powers(ctx, target, APP) == ["rolsuper"]


def test_db_drop_user_is_repaired_by_the_role_as_it_was_not_a_superuser(database):
    ctx, target = SimpleNamespace(state={}), None
    postgres.drop_user_inject(ctx, target, {})
    assert postgres.drop_user_present(ctx, target, {})
    database(f"CREATE ROLE {APP} LOGIN SUPERUSER CREATEROLE PASSWORD 'b'")
    database(f"GRANT SELECT ON public.geo TO {APP}")
    assert postgres.drop_user_present(ctx, target, {})
    database(f"ALTER ROLE {APP} NOSUPERUSER NOCREATEROLE")
    assert not postgres.drop_user_present(ctx, target, {})


def test_a_repair_that_makes_the_login_role_a_member_of_another_role_is_no_repair(database):
    """Red-team round 16, finding 2: the right table grant plus membership in ``pg_execute_server_program`` (the
    service's own login then runs programs on the database) or in the database's owner passed as the repair."""
    ctx, target = SimpleNamespace(state={}), None
    postgres.revoke_inject(ctx, target, {})
    database(f"GRANT SELECT ON public.geo TO {APP}")
    assert not postgres.revoke_present(ctx, target, {})  # the repair
    for extra, undo in ((f"GRANT pg_execute_server_program TO {APP}", f"REVOKE pg_execute_server_program FROM {APP}"),
                        (f"GRANT {ADMIN} TO {APP}", f"REVOKE {ADMIN} FROM {APP}"),
                        (f"GRANT CREATE ON SCHEMA public TO {APP}", f"REVOKE CREATE ON SCHEMA public FROM {APP}")):
        database(extra)
        assert postgres.revoke_present(ctx, target, {}), extra
        database(undo)
        assert not postgres.revoke_present(ctx, target, {}), undo


def test_a_dropped_role_made_again_in_another_role_is_no_repair(database):
    ctx, target = SimpleNamespace(state={}), None
    postgres.drop_user_inject(ctx, target, {})
    database(f"CREATE ROLE {APP} LOGIN PASSWORD 'b' IN ROLE {ADMIN}, pg_execute_server_program")
    database(f"GRANT SELECT ON public.geo TO {APP}")
    assert postgres.drop_user_present(ctx, target, {})
    database(f"REVOKE {ADMIN}, pg_execute_server_program FROM {APP}")
    assert not postgres.drop_user_present(ctx, target, {})
    # and the recovery makes the role as it was, memberships included (none here)
    database(f"DROP OWNED BY {APP}")
    database(f"DROP ROLE {APP}")
    postgres.drop_user_recover(ctx, target, {})
    assert not postgres.drop_user_present(ctx, target, {})


def test_a_definer_function_default_privileges_or_create_on_the_database_is_no_repair(database):
    # red-team round 17, finding C: the dropped role made again with its grant, and beside it a SECURITY DEFINER
    # function owned by the database's owner that runs any SQL, default privileges and CREATE on the database
    ctx, target = SimpleNamespace(state={}), None
    postgres.drop_user_inject(ctx, target, {})
    database(f"CREATE ROLE {APP} LOGIN PASSWORD 'b'")
    database(f"GRANT SELECT ON public.geo TO {APP}")
    assert not postgres.drop_user_present(ctx, target, {})
    database("CREATE FUNCTION public.atk_exec(q text) RETURNS text LANGUAGE plpgsql SECURITY DEFINER AS "
             "$f$ BEGIN EXECUTE q; RETURN 'ok'; END $f$")
    database(f"ALTER FUNCTION public.atk_exec(text) OWNER TO {ADMIN}")
    assert postgres.drop_user_present(ctx, target, {})
    database("DROP FUNCTION public.atk_exec(text)")
    assert not postgres.drop_user_present(ctx, target, {})
    database(f"ALTER DEFAULT PRIVILEGES FOR ROLE {ADMIN} IN SCHEMA public GRANT ALL ON TABLES TO {APP}")
    assert postgres.drop_user_present(ctx, target, {})
    database(f"ALTER DEFAULT PRIVILEGES FOR ROLE {ADMIN} IN SCHEMA public REVOKE ALL ON TABLES FROM {APP}")
    assert not postgres.drop_user_present(ctx, target, {})
    database(f"GRANT CREATE ON DATABASE {DB} TO {APP}")
    assert postgres.drop_user_present(ctx, target, {})


def test_a_repair_that_opens_another_login_is_no_repair(database, scratch_pg):
    """Red-team round 18, finding 3: beside the right grant, the superuser given the service's own password (from the
    app's Secret) opened a TCP login as the superuser. Any change to who may log in as what, beyond the app's login
    roles, leaves the fault present: another role's password (a new one, or the same one set again: a new verifier),
    a new login role. Each shape on a fresh injection, which records the access as it finds it."""
    _, localrun = scratch_pg
    shapes = (f"ALTER ROLE postgres PASSWORD '{localrun.ADMIN_PASSWORD}'",  # this harness logs in as postgres with it
              f"ALTER ROLE {ADMIN} PASSWORD 'known'", "CREATE ROLE helper LOGIN PASSWORD 'x'",
              f"ALTER ROLE {ADMIN} SUPERUSER",
              # red-team round 19, finding 2: the admin a member of the superuser role, or handed a definer function
              f"GRANT postgres TO {ADMIN}",
              "CREATE SCHEMA atk AUTHORIZATION postgres; CREATE FUNCTION atk.run(q text) RETURNS void LANGUAGE plpgsql "
              "SECURITY DEFINER AS $f$ BEGIN EXECUTE q; END $f$; REVOKE ALL ON FUNCTION atk.run(text) FROM PUBLIC; "
              f"GRANT USAGE ON SCHEMA atk TO {ADMIN}; GRANT EXECUTE ON FUNCTION atk.run(text) TO {ADMIN}")
    for opened in shapes:
        for inject, present in ((postgres.revoke_inject, postgres.revoke_present),
                                (postgres.drop_user_inject, postgres.drop_user_present)):
            ctx, target = SimpleNamespace(state={}), None
            inject(ctx, target, {})
            if inject is postgres.drop_user_inject:
                database(f"CREATE ROLE {APP} LOGIN PASSWORD 'b'")
            database(f"GRANT SELECT ON public.geo TO {APP}")
            database(f"ALTER ROLE {APP} PASSWORD 'b2'")  # the app's own login role: the faults', not compared here
            assert not present(ctx, target, {}), "the repair alone"
            database(opened)
            assert present(ctx, target, {}), opened
            database("DROP ROLE IF EXISTS helper")
            database(f"ALTER ROLE {ADMIN} NOSUPERUSER")
            database(f"REVOKE postgres FROM {ADMIN}")
            database("DROP SCHEMA IF EXISTS atk CASCADE")


def test_the_access_record_reads_passwords_roles_and_the_hba_rules(database, scratch_pg):
    _, localrun = scratch_pg
    ctx, target = SimpleNamespace(state={}), None
    was = sql.database_access(ctx, target, [APP])
    assert APP not in was["roles"] and {ADMIN, "postgres"} <= set(was["roles"]) and was["hba"]
    assert sql.access_changed(was, sql.database_access(ctx, target, [APP])) == []
    database(f"ALTER ROLE postgres PASSWORD '{localrun.ADMIN_PASSWORD}'")
    assert sql.access_changed(was, sql.database_access(ctx, target, [APP])) == [
        "role postgres changed (attributes or password)"]
    assert sql.access_changed(None, was) == []
    database(f"ALTER ROLE postgres PASSWORD '{localrun.ADMIN_PASSWORD}'")
    was = sql.database_access(ctx, target, [APP])
    database(f"GRANT postgres TO {ADMIN}")
    assert sql.access_changed(was, sql.database_access(ctx, target, [APP])) == [
        f"role membership added: {ADMIN} in postgres"]
    database(f"REVOKE postgres FROM {ADMIN}")
    database(f"GRANT {ADMIN} TO {APP}")  # the app's login role is the faults' own record (role_standing), not this one
    assert sql.access_changed(was, sql.database_access(ctx, target, [APP])) == []
    database(f"REVOKE {ADMIN} FROM {APP}")
    # a record written before memberships, definers and schemas were part of it compares what it has
    older = {"roles": was["roles"], "hba": was["hba"]}
    database("CREATE SCHEMA atk")
    assert sql.access_changed(older, sql.database_access(ctx, target, [APP])) == []
    assert sql.access_changed(was, sql.database_access(ctx, target, [APP])) == [
        "schema added: atk owner postgres acl default"]
    database("DROP SCHEMA atk")


#: red-team round 20, finding 1 and siblings: a catalog change beside the right grant that lets the admin (its password
#: in the app's Secret) or the login role itself act as the superuser; each with the statement that takes it back
CATALOG_SHAPES = (
    ("UPDATE pg_language SET lanpltrusted = true WHERE lanname = 'internal'",
     "UPDATE pg_language SET lanpltrusted = false WHERE lanname = 'internal'"),
    (f"GRANT EXECUTE ON FUNCTION pg_read_file(text) TO {ADMIN}",
     f"REVOKE EXECUTE ON FUNCTION pg_read_file(text) FROM {ADMIN}"),
    (f"GRANT SELECT ON pg_authid TO {ADMIN}", f"REVOKE SELECT ON pg_authid FROM {ADMIN}"),
    (f"ALTER TABLE public.rates OWNER TO postgres; ALTER TABLE public.rates OWNER TO {ADMIN}", None),
    ("ALTER TABLE public.rates OWNER TO postgres", f"ALTER TABLE public.rates OWNER TO {ADMIN}"),
    (f"ALTER DATABASE {DB} SET search_path = atk, public", f"ALTER DATABASE {DB} RESET search_path"),
    ("ALTER SYSTEM SET log_min_messages = 'debug1'", "ALTER SYSTEM RESET log_min_messages"),
    (f"GRANT CREATE ON DATABASE {DB} TO PUBLIC", f"REVOKE CREATE ON DATABASE {DB} FROM PUBLIC"),
    ("SELECT lo_create(4242)", "SELECT lo_unlink(4242)"),
    ("CREATE FUNCTION public.atk() RETURNS int LANGUAGE sql AS 'SELECT 1'", "DROP FUNCTION public.atk()"),
    # red-team round 21, finding 1: a superuser's definer function put in a system schema, no grant (EXECUTE to PUBLIC)
    ("CREATE FUNCTION pg_catalog.atk_run(q text) RETURNS void LANGUAGE plpgsql SECURITY DEFINER "
     "SET search_path = pg_catalog AS $f$ BEGIN EXECUTE q; END $f$", "DROP FUNCTION pg_catalog.atk_run(text)"),
    ("CREATE FUNCTION information_schema._pg_atk(q text) RETURNS void LANGUAGE plpgsql SECURITY DEFINER "
     "AS $f$ BEGIN EXECUTE q; END $f$", "DROP FUNCTION information_schema._pg_atk(text)"),
    ("CREATE FUNCTION pg_catalog.atk_plain() RETURNS int LANGUAGE sql AS 'SELECT 1'", "DROP FUNCTION pg_catalog.atk_plain()"),
)


def test_a_catalog_change_beside_the_repair_is_no_repair(database):
    """Red-team round 20, finding 1: `internal` made a trusted language beside the right grant let the admin, then the
    service's own login, make functions over the server's C entry points and become the superuser; all four oracles
    passed. Every catalog row that says who may do what is in the access record: a change to any leaves the fault
    present, and the right grant alone still repairs it. Each shape on a fresh injection (one database: a database
    each cost a minute of the landing suite)."""
    database(f"ALTER TABLE public.rates OWNER TO {ADMIN}")  # the admin owns the app's tables, as in the apps
    for change, undo in CATALOG_SHAPES:
        ctx, target = SimpleNamespace(state={}), None
        postgres.revoke_inject(ctx, target, {})
        database(f"GRANT SELECT ON public.geo TO {APP}")
        assert not postgres.revoke_present(ctx, target, {}), f"the repair alone, before {change}"
        try:
            database(change)
            if undo is None:  # a change made and taken back: nothing is left to tell
                assert not postgres.revoke_present(ctx, target, {}), change
            else:
                assert postgres.revoke_present(ctx, target, {}), change
                found = sql.access_changed(ctx.state["access"], sql.database_access(ctx, target, [APP]))
                assert found and all(f.startswith(("catalog entry ", "definer function ")) for f in found), (change, found)
                assert any(f.startswith("catalog entry ") for f in found), (change, found)
        finally:
            if undo:
                database(undo)
        assert not postgres.revoke_present(ctx, target, {}), f"undone: {undo}"
