"""db-lock-contention's backfill and db-password-rotated's stale Secret, without a cluster: the
backfill's shell loop runs against a real local PostgreSQL; the rotation's checks run through a
fake kubectl."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import time

import pytest

from sregym_fault_datastore import postgres
from sregym_fault_datastore.postgres import (
    LOCK_RETRY_S, env_names_for, job_running, lock_job, lock_script, rotated_secret, rotated_secret_name)


# ------------------------------------------------------------------ db-lock-contention


def test_the_backfill_job_is_replaced_when_its_pod_goes_and_quotes_the_table():
    job = lock_job("analytics-backfill", "postgres:15", [{"name": "POSTGRES_USER", "value": "u"}], "postgres-x",
                   "Reservation")
    assert "backoffLimit" not in job["spec"]  # Kubernetes' default (6): a deleted pod is replaced
    script = job["spec"]["template"]["spec"]["containers"][0]["command"][2]
    assert script.startswith("while true; do ") and f"sleep {LOCK_RETRY_S}; done" in script
    assert 'LOCK TABLE public.\\"Reservation\\" IN ACCESS EXCLUSIVE MODE' in script


def test_the_backfill_logs_in_as_the_databases_admin_never_needing_a_superuser_password():
    """The curated apps' database containers carry their admin (the tables' owner, who may lock them) and
    no superuser password; a manifest with only the image's own POSTGRES_USER/PASSWORD still works."""
    admin = {"name": "DB_ADMIN_USER", "valueFrom": {"secretKeyRef": {"name": "geo-db", "key": "admin-username"}}}
    admin_pw = {"name": "DB_ADMIN_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "geo-db", "key": "admin-password"}}}
    curated = [{"name": "POSTGRES_USER", "value": "postgres"},
               {"name": "POSTGRES_PASSWORD_FILE", "value": "/proc/sys/kernel/random/uuid"}, admin, admin_pw,
               {"name": "DB_USER", "value": "hotel_geo"}, {"name": "POSTGRES_DB", "value": "geo"}]
    assert postgres.lock_env(curated) == [{**admin, "name": "PGUSER"}, {**admin_pw, "name": "PGPASSWORD"},
                                          {"name": "PGDATABASE", "value": "geo"}]
    plain = [{"name": "POSTGRES_USER", "value": "app"}, {"name": "POSTGRES_PASSWORD", "value": "pw"},
             {"name": "POSTGRES_DB", "value": "app"}]
    assert [(e["name"], e["value"]) for e in postgres.lock_env(plain)] == [
        ("PGUSER", "app"), ("PGPASSWORD", "pw"), ("PGDATABASE", "app")]


def test_a_job_runs_until_it_is_deleted_suspended_or_finished():
    assert job_running({"metadata": {}, "spec": {}, "status": {"active": 1}})
    assert not job_running(None)
    assert not job_running({"metadata": {"deletionTimestamp": "now"}, "spec": {}})
    assert not job_running({"metadata": {}, "spec": {"suspend": True}})
    assert not job_running({"metadata": {}, "spec": {}, "status": {"conditions": [{"type": "Failed", "status": "True"}]}})
    assert job_running({"metadata": {}, "spec": {}, "status": {"conditions": [{"type": "Suspended", "status": "False"}]}})


@pytest.fixture
def local_postgres(scratch_pg):
    server, localrun = scratch_pg
    return server, localrun.ADMIN_PASSWORD


def test_the_backfill_takes_the_lock_again_when_its_session_is_killed_and_lets_go_once_stopped(local_postgres):
    psycopg = pytest.importorskip("psycopg")
    server, password = local_postgres
    with psycopg.connect(server.admin_dsn("postgres"), autocommit=True) as admin:
        admin.execute("CREATE TABLE reservation (id int)")

        def holders() -> list[int]:
            return [r[0] for r in admin.execute(
                "SELECT l.pid FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
                "WHERE l.mode = 'AccessExclusiveLock' AND l.granted AND c.relname = 'reservation'").fetchall()]

        def wait(check, timeout=60.0):  # an outer bound: it only catches a hang (psql on a loaded machine)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if check():
                    return True
                time.sleep(0.2)
            return False

        env = {**os.environ, "PGUSER": "postgres", "PGPASSWORD": password, "PGDATABASE": "postgres",
               "PGPORT": str(server.port)}
        backfill = subprocess.Popen(["sh", "-c", lock_script("127.0.0.1", "reservation")], env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            assert wait(lambda: bool(holders()))
            first = holders()[0]
            admin.execute("SELECT pg_terminate_backend(%s)", (first,))  # what an SRE tries first
            # one snapshot per poll: the lock can go between two queries while the backfill retries
            assert wait(lambda: any(pid != first for pid in holders()), LOCK_RETRY_S + 60), \
                "the backfill reconnects and locks the table again"
        finally:
            os.killpg(backfill.pid, signal.SIGKILL)  # the Job deleted: its pod goes
            backfill.wait(10)
        # the server does not notice the vanished client while it sleeps: terminate the session too
        for pid in holders():
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        assert wait(lambda: not holders())
        time.sleep(LOCK_RETRY_S + 1)
        assert not holders(), "nothing takes the lock again once the backfill is stopped"


# ------------------------------------------------------------------ db-password-rotated


def test_the_rotation_leaves_the_new_password_beside_the_apps_secret():
    obj = rotated_secret("hotel", "profile-db", "password", "rotated-2f9Kq", "hotel_profile")
    assert obj["metadata"]["name"] == rotated_secret_name("profile-db") == "profile-db-rotated"
    assert obj["stringData"] == {"password": "rotated-2f9Kq"}
    assert obj["metadata"]["annotations"]["rotation/for-secret"] == "profile-db"


def test_env_names_for_finds_the_variables_filled_from_the_secret_key():
    spec = {"containers": [{"name": "profile", "env": [
        {"name": "DB_USER", "valueFrom": {"secretKeyRef": {"name": "profile-db", "key": "username"}}},
        {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "profile-db", "key": "password"}}},
        {"name": "OTHER", "valueFrom": {"secretKeyRef": {"name": "rate-db", "key": "password"}}},
        {"name": "PLAIN", "value": "x"}]}]}
    assert env_names_for(spec, "profile-db", "password") == [("profile", "DB_PASSWORD")]


class FakeCluster:
    """kubectl for one Secret, one Deployment and its pods; each pod's env is what it started with."""

    def __init__(self, secret_value: str, pod_env: dict[str, str]) -> None:
        self.secret_value = secret_value
        self.pod_env = pod_env  # pod name -> DB_PASSWORD it carries
        self.namespace = "hotel"
        self.state: dict = {"secret": "profile-db", "key": "password", "role": "hotel_profile",
                            "users": [("deployment", "profile")]}

    def kubectl(self, *args: str, check: bool = True, **_kw) -> str:
        if args[:3] == ("get", "secret", "profile-db"):
            return json.dumps({"data": {"password": base64.b64encode(self.secret_value.encode()).decode()}})
        if args[:3] == ("get", "deployment", "profile"):
            return json.dumps({"spec": {"selector": {"matchLabels": {"app": "profile"}}, "template": {"spec": {
                "containers": [{"name": "profile", "env": [
                    {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "profile-db", "key": "password"}}}]}]}}}})
        if args[:2] == ("get", "pods"):
            return json.dumps({"items": [{"metadata": {"name": n}, "status": {"phase": "Running"}} for n in self.pod_env]})
        if args[0] == "exec":
            return self.pod_env[args[1]] + "\n"
        raise AssertionError(f"unexpected kubectl {args}")


@pytest.mark.parametrize("secret, pods, present", [
    ("old", {"profile-1": "old"}, True),        # the incident: the app's Secret and pods hold the old one
    ("old", {"profile-2": "old"}, True),        # restarted: the new pod read the same stale Secret
    ("new", {"profile-1": "old"}, True),        # Secret fixed, pods not restarted yet
    ("new", {"profile-3": "new"}, False),       # Secret fixed and pods restarted
    ("old", {}, True),                          # scaled away: a pod started now still reads the old one
])
def test_present_while_the_app_or_its_secret_holds_a_password_the_database_refuses(monkeypatch, secret, pods,
                                                                                     present):
    monkeypatch.setattr(postgres, "login_refused", lambda ctx, target, role, password: password != "new")
    assert postgres.rotate_present(FakeCluster(secret, pods), None, {}) is present


def test_present_when_the_role_password_is_set_back_to_the_secrets(monkeypatch):
    # the other fix: the DBA puts the old password back on the role; the app's pods log in again
    monkeypatch.setattr(postgres, "login_refused", lambda ctx, target, role, password: password != "old")
    assert postgres.rotate_present(FakeCluster("old", {"profile-1": "old"}), None, {}) is False
