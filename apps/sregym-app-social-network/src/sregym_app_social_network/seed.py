"""The seeded data set and the databases' schema (the ``migrate`` init container).

The social graph is generated deterministically (seed 7): ``USERS`` users ``username_<i>`` with
password ``password_<i>``, each following ``FOLLOWS`` others chosen with a preference for nearby
ids (a small-world graph like the Facebook graphs DeathStarBench loads, at a size two cores serve).
The workload generator derives the same graph, so it knows every correct follower list.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from functools import cache

from sregym_appkit import logs

from .stores import COLLECTIONS

USERS = 120
FOLLOWS = 8
SEED = 7


def username(user_id: int) -> str:
    return f"username_{user_id}"


def password(user_id: int) -> str:
    return f"password_{user_id}"


def hash_password(password_: str, salt: str) -> str:
    return hashlib.sha256((password_ + salt).encode()).hexdigest()


@cache
def followees() -> dict[int, frozenset[int]]:
    """user id -> the ids it follows."""
    rng = random.Random(SEED)
    out: dict[int, frozenset[int]] = {}
    for uid in range(USERS):
        chosen: set[int] = set()
        while len(chosen) < FOLLOWS:
            other = (uid + int(rng.gauss(0, USERS / 8))) % USERS if rng.random() < 0.7 else rng.randrange(USERS)
            if other != uid:
                chosen.add(other)
        out[uid] = frozenset(chosen)
    return out


@cache
def followers() -> dict[int, frozenset[int]]:
    out: dict[int, set[int]] = {uid: set() for uid in range(USERS)}
    for uid, followed in followees().items():
        for other in followed:
            out[other].add(uid)
    return {uid: frozenset(s) for uid, s in out.items()}


def user_doc(user_id: int) -> dict[str, object]:
    salt = hashlib.sha256(f"salt-{user_id}".encode()).hexdigest()[:16]
    return {"user_id": user_id, "first_name": f"first_name_{user_id}", "last_name": f"last_name_{user_id}",
            "username": username(user_id), "salt": salt, "password": hash_password(password(user_id), salt)}


#: the schema version the ``migrate`` init container applies (recorded in ``schema_migrations``)
SCHEMA_VERSION = 1


def migrate(database: str, admin_conninfo: str, role: str, role_password: str, wait_s: float = 120) -> bool:
    """Create the service's login role, the collections, their grants and (user, social-graph) the seed
    data, once: the version is recorded in ``schema_migrations`` and a later start (every restart of the
    service's pod runs this init container) finds it applied and changes nothing. Like a real schema
    migration, it does not put the role's password or grants back as they were on every start: a
    password rotated or a grant revoked in the database since stays so across restarts. Returns whether
    it applied the migration."""
    import psycopg
    from psycopg import sql

    deadline = time.monotonic() + wait_s
    while True:
        try:
            conn = psycopg.connect(admin_conninfo)
            break
        except psycopg.OperationalError as exc:
            if time.monotonic() > deadline:
                raise
            logs.info("migrate_waiting", database=database, error=str(exc).strip().splitlines()[0][:200])
            time.sleep(1)
    with conn, conn.cursor() as cur:  # one transaction: all of it or nothing
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (424243,))  # two replicas starting at once
        cur.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY,"
                    " applied_at timestamptz NOT NULL DEFAULT now())")
        cur.execute("SELECT 1 FROM schema_migrations WHERE version = %s", (SCHEMA_VERSION,))
        if cur.fetchone() is not None:
            logs.info("migrate_skipped", database=database, reason=f"schema version {SCHEMA_VERSION} already applied")
            return False
        cur.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,))
        if cur.fetchone() is None:
            cur.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(role),
                                                                           sql.Literal(role_password)))
        for collection, key_type in COLLECTIONS[database].items():
            cur.execute(sql.SQL("CREATE TABLE IF NOT EXISTS {} (id {} PRIMARY KEY, doc jsonb NOT NULL)").format(
                sql.Identifier(collection), sql.SQL(key_type)))
            cur.execute(sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON {} TO {}").format(
                sql.Identifier(collection), sql.Identifier(role)))
        seeded = 0
        if database == "user":
            cur.executemany("INSERT INTO users (id, doc) VALUES (%s, %s::jsonb) ON CONFLICT (id) DO NOTHING",
                            [(username(u), json.dumps(user_doc(u))) for u in range(USERS)])
            seeded = USERS
        elif database == "social-graph":
            now = 0  # seeded edges predate every post
            rows = [(u, json.dumps({"user_id": u,
                                    "followees": [{"user_id": f, "timestamp": now} for f in sorted(followees()[u])],
                                    "followers": [{"user_id": f, "timestamp": now} for f in sorted(followers()[u])]}))
                    for u in range(USERS)]
            cur.executemany("INSERT INTO social_graph (id, doc) VALUES (%s, %s::jsonb) ON CONFLICT (id) DO NOTHING",
                            rows)
            seeded = USERS
        cur.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (SCHEMA_VERSION,))
    _settle(admin_conninfo)
    logs.info("migrate_done", database=database, role=role, collections=sorted(COLLECTIONS[database]),
              seeded=seeded, version=SCHEMA_VERSION)
    return True


def _settle(admin_conninfo: str) -> None:
    """Freeze and analyze the fresh seed once: later reads then set no hint bits and (autovacuum is off
    in the manifests) nothing rewrites the files of a database nobody wrote to, so a reset keeps it."""
    import psycopg

    with psycopg.connect(admin_conninfo, autocommit=True) as conn:
        conn.execute("VACUUM (FREEZE, ANALYZE)")
