"""Shared by the pack's tests that need a real PostgreSQL without a cluster."""

from __future__ import annotations

import pytest


@pytest.fixture
def scratch_pg(request):
    """``(server, localrun)``: a throwaway PostgreSQL on 127.0.0.1 (Hotel Reservation's local runner
    starts it; its superuser is ``postgres`` with ``localrun.ADMIN_PASSWORD``), stopped afterwards;
    skipped where the machine has no PostgreSQL or psycopg."""
    localrun = pytest.importorskip("sregym_app_hotel_reservation.localrun")
    pytest.importorskip("psycopg")
    try:
        localrun.pg_bin("initdb")
    except FileNotFoundError:
        pytest.skip("no PostgreSQL on this machine")
    with localrun.scratch_postgres(f"{request.node.name[:20]}-") as server:
        yield server, localrun
