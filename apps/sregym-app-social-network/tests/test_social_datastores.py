"""The app's code against real datastores (PostgreSQL, redis-server), where a restart must keep data.

The ``migrate`` init container runs on every start of a database owner's pod (a restart, a rollout).
It applies the schema once: a real PostgreSQL server, migrated, then changed the way the datastore
faults change it (the role's password rotated, the role's grants revoked), migrated again as a
restarted pod would, keeps the change. Before, every start set the password and grants back from the
Secret, so a blind restart of all pods repaired social-db-password-rotated-user-timeline-postgres
(restart-all passed mitigation on 2026-11-27).

user-timeline-service's cache: a write after user-timeline-redis restarted keeps the user's older posts
readable."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from sregym_app_social_network.config import database_name
from sregym_app_social_network.seed import USERS, migrate
from sregym_app_social_network.stores import conninfo
from sregym_core.testing.localservers import free_port, redis_command, start_server, stop_server

psycopg = pytest.importorskip("psycopg")

ROLE, PASSWORD = "sn_user_timeline", "user-timeline-Xy12z"


@pytest.fixture
def postgres() -> Iterator[tuple[Any, str]]:
    localrun = pytest.importorskip("sregym_app_hotel_reservation.localrun")
    with localrun.scratch_postgres_or_skip("sn-migrate-pg-") as server:
        yield server, localrun.ADMIN_PASSWORD


def _dsn(server: Any, user: str, password: str, store: str) -> str:
    return conninfo(f"127.0.0.1:{server.port}", database_name(store), user, password)


def _login_refused(dsn: str) -> bool:
    try:
        with psycopg.connect(dsn):
            return False
    except psycopg.OperationalError as exc:
        assert "password authentication failed" in str(exc)
        return True


def test_a_restart_keeps_a_rotated_password_and_revoked_grants(postgres):
    server, admin_password = postgres
    server.create_databases((database_name("user-timeline"),))
    admin = _dsn(server, "postgres", admin_password, "user-timeline")
    app = _dsn(server, ROLE, PASSWORD, "user-timeline")

    assert migrate("user-timeline", admin, ROLE, PASSWORD, wait_s=10) is True
    with psycopg.connect(app) as conn:  # the service's role logs in and writes its table
        conn.execute("INSERT INTO user_timeline (id, doc) VALUES (1, '{}'::jsonb)")

    with psycopg.connect(admin, autocommit=True) as conn:  # what db-password-rotated and db-revoke do
        conn.execute(f"ALTER ROLE {ROLE} PASSWORD 'rotated-2f9Kq'")
        conn.execute(f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {ROLE}")

    # the pod restarts: its init container runs again with the Secret's (now stale) password
    assert migrate("user-timeline", admin, ROLE, PASSWORD, wait_s=10) is False
    assert _login_refused(app)
    rotated = _dsn(server, ROLE, "rotated-2f9Kq", "user-timeline")
    with psycopg.connect(rotated) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("SELECT doc FROM user_timeline")


def test_the_first_start_seeds_once_and_a_second_start_changes_nothing(postgres):
    server, admin_password = postgres
    server.create_databases((database_name("user"),))
    admin = _dsn(server, "postgres", admin_password, "user")
    app = _dsn(server, "sn_user", "user-Qm27x", "user")

    assert migrate("user", admin, "sn_user", "user-Qm27x", wait_s=10) is True
    with psycopg.connect(app) as conn:
        assert conn.execute("SELECT count(*) FROM users").fetchone()[0] == USERS
        conn.execute("DELETE FROM users WHERE id = 'username_0'")  # the app's own change since
    assert migrate("user", admin, "sn_user", "user-Qm27x", wait_s=10) is False
    with psycopg.connect(app) as conn:
        assert conn.execute("SELECT count(*) FROM users").fetchone()[0] == USERS - 1
    with psycopg.connect(admin) as conn:
        assert conn.execute("SELECT version FROM schema_migrations").fetchall() == [(1,)]


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server (tools/setup.sh installs it)")
def test_a_write_after_the_cache_restarted_keeps_the_older_posts_of_the_user_timeline(postgres):
    """user-timeline-redis restarted (restart-all; a pod kill) comes back empty. The next post a user
    writes must not make a cache key of that post alone: reads would stop showing the older posts (the
    generator saw the newest post it had confirmed missing from a page of newer, failed composes)."""
    from sregym_app_social_network.services import Context, UserTimelineHandler
    from sregym_app_social_network.stores import DocumentStore, Redis

    server, admin_password = postgres
    server.create_databases((database_name("user-timeline"),))
    migrate("user-timeline", _dsn(server, "postgres", admin_password, "user-timeline"), ROLE, PASSWORD, wait_s=10)
    port = free_port()
    proc = start_server(redis_command(port, "--save", "", "--appendonly", "no"), port)
    db = DocumentStore("user-timeline-service", "user-timeline", {
        "addr": f"127.0.0.1:{server.port}", "database": database_name("user-timeline"), "user": ROLE,
        "password": PASSWORD})
    db.open()
    redis = Redis("user-timeline-service", "user-timeline", f"127.0.0.1:{port}")
    try:
        handler = UserTimelineHandler(Context(cfg=None, db=db, redis=redis))  # type: ignore[arg-type]
        handler.WriteUserTimeline(1, 101, 7, 1000, {})  # nothing cached yet: filled from the database
        handler.WriteUserTimeline(2, 102, 7, 2000, {})
        assert redis.run("zrevrange", "7", 0, -1) == ["102", "101"]
        redis.run("flushall")  # the cache restarted
        handler.WriteUserTimeline(3, 103, 7, 3000, {})
        assert redis.run("zrevrange", "7", 0, -1) == ["103", "102", "101"]
        handler.WriteUserTimeline(4, 104, 7, 4000, {})  # a cached key: the post is added
        assert redis.run("zrevrange", "7", 0, 9) == ["104", "103", "102", "101"]
        assert db.find("user_timeline", 7)["posts"][-1] == {"post_id": 104, "timestamp": 4000}
    finally:
        redis.close()
        db.close()
        stop_server(proc)
