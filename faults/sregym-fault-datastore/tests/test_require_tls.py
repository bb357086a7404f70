"""db-require-tls without a cluster: the pg_hba.conf rewrite as text, then the whole fault against a
real local PostgreSQL. Only kubectl is stood in for: its ``exec`` runs the fault's own shell and psql
against the local server, as in the pod; what clients see is asked with psycopg, plain and over TLS."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from sregym_fault_datastore import tls
from sregym_fault_datastore.tls import REJECT_PLAIN, allow_plain, plain_refused, require_tls

from sregym_core.errors import TemporaryFaultError
from sregym_core.types import ComponentSpec

DEBIAN_HBA = """# TYPE  DATABASE        USER            ADDRESS                 METHOD

# "local" is for Unix domain socket connections only
local   all             all                                     trust
# IPv4 local connections:
host    all             all             127.0.0.1/32            scram-sha-256
host    all             all             all                     scram-sha-256
"""


def test_the_reject_rule_goes_ahead_of_every_rule_once():
    hardened = require_tls(DEBIAN_HBA)
    rules = [line for line in hardened.splitlines() if line and not line.startswith("#")]
    assert rules[0] == REJECT_PLAIN  # first-match: it decides every plain-text TCP connection
    assert rules[1:] == [line for line in DEBIAN_HBA.splitlines() if line and not line.startswith("#")]
    assert require_tls(hardened) == hardened  # idempotent
    assert require_tls("") == f"{tls.REJECT_COMMENT}\n{REJECT_PLAIN}\n"
    crlf = DEBIAN_HBA.replace("\n", "\r\n")
    assert f"{REJECT_PLAIN}\r\n" in require_tls(crlf)


def test_the_fix_takes_out_only_the_rules_refusing_plain_text():
    assert allow_plain(require_tls(DEBIAN_HBA)) == DEBIAN_HBA  # byte for byte
    hand_written = DEBIAN_HBA + "hostnossl  app_db  app  10.0.0.0/8  reject   # audit 2026\n"
    assert allow_plain(hand_written) == DEBIAN_HBA
    # a hostssl rule, or a hostnossl rule that lets clients in, is not the refusal
    kept = "hostssl all all all scram-sha-256\nhostnossl all all 127.0.0.1/32 scram-sha-256\n"
    assert allow_plain(kept) == kept


@pytest.mark.parametrize("answer, refused", [
    ('psql: error: connection to server at "127.0.0.5", port 5432 failed: FATAL:  pg_hba.conf rejects connection '
     'for host "127.0.0.5", user "sn_url_shorten", database "url_shorten_db", no encryption', True),
    ('FATAL:  no pg_hba.conf entry for host "10.1.2.3", user "app", database "app", SSL off', True),
    ("psql: error: connection to server ... failed: fe_sendauth: no password supplied", False),
    ('FATAL:  password authentication failed for user "app"', False),
    ("1\n", False),  # trust
    ("psql: error: connection to server at ... failed: Connection refused", None),  # nothing listening
    ("HTTP/1.0 400 Bad Request", None),  # a stub in the database's place
])
def test_what_a_plain_text_login_tells(answer, refused):
    assert plain_refused(answer) is refused


# ------------------------------------------------------------------ against a real PostgreSQL

APP_ROLE, APP_PASSWORD, APP_DB = "sn_url_shorten", "url-shorten-Rb81k", "url_shorten_db"
APP_OWNER, APP_OWNER_PASSWORD = "sn_url_shorten_admin", "admin-url-shorten-Rb81k"


class LocalPod:
    """kubectl for one PostgreSQL pod whose ``exec`` runs on this machine against ``server``."""

    def __init__(self, server, admin_password: str) -> None:
        self.server, self.namespace, self.state = server, "social-network", {}
        # as the curated apps' database containers: the superuser without a password of its own in the
        # environment (here the scratch server wants one on its socket too: PGPASSWORD, not read over
        # TCP), the database's owner as DB_ADMIN_USER/DB_ADMIN_PASSWORD
        self.env = {**os.environ, "POSTGRES_USER": "postgres", "POSTGRES_DB": APP_DB, "POD_IP": "127.0.0.1",
                    "PGPORT": str(server.port), "PGHOST": str(server.root), "PGPASSWORD": admin_password,
                    "DB_ADMIN_USER": APP_OWNER, "DB_ADMIN_PASSWORD": APP_OWNER_PASSWORD}
        for name in ("PGSSLMODE", "POSTGRES_PASSWORD"):
            self.env.pop(name, None)

    def kubectl(self, *args: str, check: bool = True, **_kw) -> str:
        if args[0] == "get" and args[1] == "pods":
            return json.dumps({"items": [{"metadata": {"name": "url-shorten-postgres-0"},
                                          "status": {"conditions": [{"type": "Ready", "status": "True"}]}}]})
        if args[0] == "get":
            return json.dumps({"spec": {"selector": {"matchLabels": {"app": "url-shorten-postgres"}}}})
        if args[0] == "exec":
            command = list(args[args.index("--") + 1:])
            # like kubectl exec: the command's stdout only (its stderr goes to kubectl's stderr)
            return subprocess.run(command, capture_output=True, text=True, env=self.env, timeout=60).stdout
        raise AssertionError(f"unexpected kubectl {args}")


class _Target:
    component = ComponentSpec(name="url-shorten-postgres", kind="StatefulSet", roles=("db:postgres",), ports=(5432,),
                              container="postgres", service="url-shorten-postgres")


@pytest.fixture
def pod(scratch_pg, owned_database):
    server, localrun = scratch_pg
    owned_database(APP_DB, (APP_OWNER, APP_OWNER_PASSWORD), (APP_ROLE, APP_PASSWORD))
    return LocalPod(server, localrun.ADMIN_PASSWORD)


def _login(pod: LocalPod, sslmode: str) -> str:
    """What the app's client sees: 'ok', or the server's refusal."""
    import psycopg

    try:
        with psycopg.connect(host="127.0.0.1", port=pod.server.port, dbname=APP_DB, user=APP_ROLE,
                             password=APP_PASSWORD, sslmode=sslmode, connect_timeout=5) as conn:
            conn.execute("SELECT 1")
        return "ok"
    except psycopg.OperationalError as exc:
        return str(exc)


def _files(pod: LocalPod) -> dict[str, bytes | None]:
    data = pod.server.data
    return {name: (data / name).read_bytes() if (data / name).exists() else None
            for name in ("pg_hba.conf", "postgresql.auto.conf", "server.crt", "server.key")}


def test_plain_text_clients_are_refused_tls_ones_served_and_recover_puts_every_byte_back(pod, monkeypatch):
    target, before = _Target(), _files(pod)
    assert _login(pod, "disable") == "ok"
    assert tls.is_present(pod, target, {}) is False

    tls.inject(pod, target, {})
    refusal = _login(pod, "disable")  # the app's client: plain text
    assert "pg_hba.conf rejects connection" in refusal and "no encryption" in refusal, refusal
    assert _login(pod, "require") == "ok"  # TLS is offered and works
    assert tls.is_present(pod, target, {}) is True
    key = pod.server.data / "server.key"
    assert key.stat().st_mode & 0o077 == 0  # PostgreSQL refuses a key others can read

    with monkeypatch.context() as patch:  # a stub on 5432 answering anything but PostgreSQL is never "fixed"
        patch.setattr(tls, "plain_login", lambda ctx, target, role: "HTTP/1.0 200 OK\n")
        with pytest.raises(TemporaryFaultError):
            tls.is_present(pod, target, {})

    tls.inject(pod, target, {})  # again: nothing doubles, the originals saved the first time stay
    assert _files(pod)["pg_hba.conf"].count(REJECT_PLAIN.encode()) == 1
    assert bytes.fromhex(pod.state["saved_hba"]) == before["pg_hba.conf"]

    tls.recover(pod, target, {})
    assert _files(pod) == before  # pg_hba.conf, postgresql.auto.conf byte for byte; no certificate left
    assert _login(pod, "disable") == "ok"
    assert tls.is_present(pod, target, {}) is False


def test_a_restart_keeps_it_and_the_reference_fix_lets_plain_text_in_with_tls_still_on(pod):
    target = _Target()
    tls.inject(pod, target, {})
    pod.server.stop()  # a blind restart: everything is in the data directory
    pod.server.start()
    assert "pg_hba.conf rejects connection" in _login(pod, "disable")
    assert tls.is_present(pod, target, {}) is True

    tls.reference_fix(pod, target, {})
    assert _login(pod, "disable") == "ok" and _login(pod, "require") == "ok"
    assert tls.is_present(pod, target, {}) is False
    tls.recover(pod, target, {})  # after a fix: harmless, and it puts ssl back off
    assert _login(pod, "disable") == "ok"
    assert "server does not support SSL" in _login(pod, "require")

