"""The seed data set and the idempotent, versioned schema migrations for every datastore.

Data is generated deterministically (seeded RNG) so every deployment holds the same hotels, rates
and users: 300 hotels scattered around San Francisco, like DeathStarBench's, and users
``Cornell_0`` … ``Cornell_499`` whose password is the user's number written ten times
(``Cornell_7`` → ``7777777777``). Passwords are stored as SHA-256 hex digests.

Migrations run once per database (recorded in ``schema_migrations``), as the database admin, from
the ``migrate`` init step. They create the service's own login role and grant it only what it needs,
so revoking a grant or dropping the role is a real fault a restart does not undo.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sregym_appkit import logs

if TYPE_CHECKING:
    import psycopg

N_HOTELS = 300
N_USERS = 500
CITY_CENTER = (37.7867, -122.4112)
SPREAD_DEG = 0.15
ROOM_DATES = ("2015-04-01", "2015-05-31")
_STREETS = ("Market St", "Mission St", "Geary Blvd", "Van Ness Ave", "Valencia St", "Divisadero St",
            "Lombard St", "Columbus Ave", "Haight St", "Folsom St", "Castro St", "Hayes St")
_WORDS = ("Grand", "Bay", "Golden", "Harbor", "Union", "Pacific", "Park", "Hill", "Fog", "Presidio")


def hotel_id(i: int) -> str:
    return str(i + 1)


def hotels() -> list[dict[str, Any]]:
    rng = random.Random(20150409)
    out = []
    for i in range(N_HOTELS):
        lat = round(CITY_CENTER[0] + rng.uniform(-SPREAD_DEG, SPREAD_DEG), 6)
        lon = round(CITY_CENTER[1] + rng.uniform(-SPREAD_DEG, SPREAD_DEG), 6)
        name = f"{rng.choice(_WORDS)} {rng.choice(('Hotel', 'Inn', 'Suites', 'Lodge'))} {i + 1}"
        out.append({
            "id": hotel_id(i), "name": name, "phone": f"(415) {rng.randint(200, 999)}-{rng.randint(1000, 9999)}",
            "description": f"{name}: {rng.randint(20, 400)} rooms near {rng.choice(_STREETS)}.",
            "street_number": str(rng.randint(1, 3000)), "street_name": rng.choice(_STREETS),
            "city": "San Francisco", "state": "CA", "country": "United States",
            "postal_code": f"941{rng.randint(0, 99):02d}", "lat": lat, "lon": lon,
            "rate": round(rng.uniform(2.0, 5.0), 1), "price": round(rng.uniform(80, 450), 2),
            "capacity": rng.choice((50, 100, 200)),
        })
    return out


def rate_plans() -> list[dict[str, Any]]:
    rng = random.Random(7)
    plans = []
    for h in hotels():
        for code in ("RACK", "PROMO")[: rng.randint(1, 2)]:
            base = h["price"] * (0.8 if code == "PROMO" else 1.0)
            plans.append({
                "hotel_id": h["id"], "code": code, "in_date": ROOM_DATES[0], "out_date": ROOM_DATES[1],
                "room_code": rng.choice(("KNG", "QN", "DBL")), "currency": "USD",
                "bookable_rate": round(base, 2), "total_rate": round(base * 1.1, 2),
                "total_rate_inclusive": round(base * 1.25, 2),
                "room_description": rng.choice(("King sized bed", "Queen sized bed", "Two double beds")),
            })
    return plans


def user_password(i: int) -> str:
    return str(i) * 10


def password_digest(password: str) -> str:
    return hashlib.sha256(password.encode()).hexdigest()


def users() -> list[tuple[str, str]]:
    return [(f"Cornell_{i}", password_digest(user_password(i))) for i in range(N_USERS)]


# ---------------------------------------------------------------- schema and seed, per service

SCHEMAS: dict[str, list[str]] = {
    "geo": ["CREATE TABLE IF NOT EXISTS geo (hotel_id text PRIMARY KEY, lat double precision NOT NULL,"
            " lon double precision NOT NULL)"],
    "rate": ["CREATE TABLE IF NOT EXISTS rate_plans (hotel_id text NOT NULL, code text NOT NULL,"
             " in_date date NOT NULL, out_date date NOT NULL, room_code text, currency text,"
             " bookable_rate numeric(10,2), total_rate numeric(10,2), total_rate_inclusive numeric(10,2),"
             " room_description text, PRIMARY KEY (hotel_id, code))"],
    "profile": ["CREATE TABLE IF NOT EXISTS hotels (hotel_id text PRIMARY KEY, name text NOT NULL,"
                " phone_number text, description text, street_number text, street_name text, city text,"
                " state text, country text, postal_code text, lat double precision, lon double precision)"],
    "recommendation": ["CREATE TABLE IF NOT EXISTS recommendation (hotel_id text PRIMARY KEY,"
                       " lat double precision NOT NULL, lon double precision NOT NULL,"
                       " rate double precision NOT NULL, price numeric(10,2) NOT NULL)"],
    "user": ["CREATE TABLE IF NOT EXISTS users (username text PRIMARY KEY, password_sha256 text NOT NULL)"],
    "reservation": [
        "CREATE TABLE IF NOT EXISTS reservations (id bigserial PRIMARY KEY, hotel_id text NOT NULL,"
        " customer_name text NOT NULL, in_date date NOT NULL, out_date date NOT NULL, number integer NOT NULL,"
        " created_at timestamptz NOT NULL DEFAULT now())",
        "CREATE INDEX IF NOT EXISTS reservations_hotel_dates ON reservations (hotel_id, in_date, out_date)",
        "CREATE TABLE IF NOT EXISTS hotel_capacity (hotel_id text PRIMARY KEY, capacity integer NOT NULL)",
    ],
}
# What the service's own role may do on its tables: least privilege, like a real deployment.
GRANTS: dict[str, str] = {
    "geo": "GRANT SELECT ON geo TO {role}",
    "rate": "GRANT SELECT ON rate_plans TO {role}",
    "profile": "GRANT SELECT ON hotels TO {role}",
    "recommendation": "GRANT SELECT ON recommendation TO {role}",
    "user": "GRANT SELECT ON users TO {role}",
    "reservation": "GRANT SELECT, INSERT ON reservations TO {role}; GRANT SELECT ON hotel_capacity TO {role};"
                   " GRANT USAGE, SELECT ON SEQUENCE reservations_id_seq TO {role}",
}


SEED_COLUMNS: dict[str, tuple[str, str]] = {
    "geo": ("geo", "hotel_id, lat, lon"),
    "rate": ("rate_plans", "hotel_id, code, in_date, out_date, room_code, currency, bookable_rate, total_rate,"
                           " total_rate_inclusive, room_description"),
    "profile": ("hotels", "hotel_id, name, phone_number, description, street_number, street_name, city, state,"
                          " country, postal_code, lat, lon"),
    "recommendation": ("recommendation", "hotel_id, lat, lon, rate, price"),
    "user": ("users", "username, password_sha256"),
    "reservation": ("hotel_capacity", "hotel_id, capacity"),
}


def seed_rows(service: str) -> list[tuple[Any, ...]]:
    """The rows of ``service``'s seeded table, in SEED_COLUMNS order."""
    if service == "geo":
        return [(h["id"], h["lat"], h["lon"]) for h in hotels()]
    if service == "rate":
        return [(p["hotel_id"], p["code"], p["in_date"], p["out_date"], p["room_code"], p["currency"],
                 p["bookable_rate"], p["total_rate"], p["total_rate_inclusive"], p["room_description"])
                for p in rate_plans()]
    if service == "profile":
        return [(h["id"], h["name"], h["phone"], h["description"], h["street_number"], h["street_name"],
                 h["city"], h["state"], h["country"], h["postal_code"], h["lat"], h["lon"]) for h in hotels()]
    if service == "recommendation":
        return [(h["id"], h["lat"], h["lon"], h["rate"], h["price"]) for h in hotels()]
    if service == "user":
        return list(users())
    if service == "reservation":
        return [(h["id"], h["capacity"]) for h in hotels()]
    raise ValueError(f"unknown data service {service!r}")


def _seed(service: str, cur: psycopg.Cursor[Any]) -> int:
    # COPY: one round trip. The tables are new and empty here (the whole migration is one transaction).
    table, columns = SEED_COLUMNS[service]
    rows = seed_rows(service)
    with cur.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)
    return len(rows)


def migrate(service: str, admin_conninfo: str, role: str, role_password: str, *, wait_s: float = 60.0,
            sleep: Callable[[float], None] = time.sleep) -> bool:
    """Create role, schema, grants and seed data once; return True if this call applied them.

    Waits up to ``wait_s`` for the database to accept connections (it starts alongside us).
    """
    import psycopg  # here, not at module level: the workload generator imports this module for its data
    from psycopg import sql

    deadline = time.monotonic() + wait_s
    while True:
        try:
            conn = psycopg.connect(admin_conninfo, connect_timeout=3)
            break
        except psycopg.OperationalError as exc:
            if time.monotonic() > deadline:
                raise
            logs.warning("migrate_waiting_for_database", error=str(exc).strip().splitlines()[0])
            sleep(1.0)
    with conn:
        with conn.cursor() as cur:
            # Two replicas starting at once must not both seed.
            cur.execute("SELECT pg_advisory_xact_lock(424242)")
            cur.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY,"
                        " applied_at timestamptz NOT NULL DEFAULT now())")
            cur.execute("SELECT 1 FROM schema_migrations WHERE version = 1")
            if cur.fetchone():
                logs.info("migrate_skipped", reason="schema version 1 already applied")
                return False
            cur.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,))
            if cur.fetchone() is None:
                cur.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                    sql.Identifier(role), sql.Literal(role_password)))
            for statement in SCHEMAS[service]:
                cur.execute(statement)
            seeded = _seed(service, cur)
            for statement in GRANTS[service].split(";"):
                cur.execute(sql.SQL(statement.strip()).format(role=sql.Identifier(role)))
            cur.execute("INSERT INTO schema_migrations (version) VALUES (1)")
    # freeze and analyze the fresh seed once: later reads then set no hint bits and (autovacuum is off in
    # the manifests) nothing rewrites the files of a database nobody wrote to, so a reset keeps it running
    with psycopg.connect(admin_conninfo, autocommit=True) as settle:
        settle.execute("VACUUM (FREEZE, ANALYZE)")
    logs.info("migrate_applied", version=1, role=role, rows_seeded=seeded)
    return True
