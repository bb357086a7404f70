"""Shared by the pack's tests that need a real PostgreSQL without a cluster."""

from __future__ import annotations

from collections.abc import Callable

import pytest


@pytest.fixture
def scratch_pg(request):
    """``(server, localrun)``: a throwaway PostgreSQL on 127.0.0.1 (Hotel Reservation's local runner
    starts it; its superuser is ``postgres`` with ``localrun.ADMIN_PASSWORD``), stopped afterwards;
    skipped where the machine has no PostgreSQL or psycopg."""
    localrun = pytest.importorskip("sregym_app_hotel_reservation.localrun")
    pytest.importorskip("psycopg")
    with localrun.scratch_postgres_or_skip(f"{request.node.name[:20]}-") as server:
        yield server, localrun


@pytest.fixture
def owned_database(scratch_pg) -> Callable[..., None]:
    """Makes an app's database as the curated apps do: a login role that owns it (no superuser) and
    the service's login role: ``owned_database(db, (owner, password), (app, password))``."""
    import psycopg

    server, _localrun = scratch_pg

    def make(db: str, owner: tuple[str, str], app: tuple[str, str]) -> None:
        with psycopg.connect(server.admin_dsn("postgres"), autocommit=True) as admin:
            for role, password in (app, owner):
                admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
            admin.execute(f"CREATE DATABASE {db} OWNER {owner[0]}")
    return make
