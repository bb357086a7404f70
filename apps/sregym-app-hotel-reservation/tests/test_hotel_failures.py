"""Real failure paths: each fault shows up in the right service's logs and metrics, and recovers."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
import pytest
import yaml
from hotel_testlib import eventually, http, metric
from sregym_app_hotel_reservation import config
from sregym_app_hotel_reservation.localrun import free_port

SEARCH = "/hotels?inDate=2015-04-09&outDate=2015-04-11&lat=37.7867&lon=-122.4112"


def search_ok(hotel) -> bool:
    return http(hotel.frontend_url + SEARCH)[0] == 200


def error_events(hotel, service: str, event: str, since: int = 0) -> list[dict[str, Any]]:
    return [r for r in hotel.logs(service)[since:] if r.get("event") == event and r.get("level") == "error"]


@pytest.mark.slow
def test_stopped_database_is_named_in_logs_metrics_and_readiness(hotel):
    assert search_ok(hotel)
    mark = len(hotel.logs("geo"))
    hotel.postgres.stop()
    try:
        status, body = http(hotel.frontend_url + SEARCH)
        # geo waits DB_POOL_TIMEOUT_MS for a connection, longer than the callers' deadline: a 504.
        assert status in (502, 503, 504), body
        failures = eventually(lambda: error_events(hotel, "geo", "db_query_failed", mark))
        assert failures[0]["peer"] == "postgres-geo"
        assert failures[0]["addr"] == f"127.0.0.1:{hotel.postgres.port}"
        assert failures[0]["kind"] in ("connection", "pool_timeout")
        geo = hotel.metrics("geo")
        assert metric(geo, "hotel_db_errors_total", db="geo") >= 1
        status, report = hotel.readiness("geo")
        assert status == 503 and not report["checks"]["database"]["ok"]
        eventually(lambda: any(r.get("peer") == "geo" for r in error_events(hotel, "search", "rpc_failed")))
    finally:
        hotel.postgres.start()
    eventually(lambda: search_ok(hotel), timeout=30)
    assert hotel.readiness("geo")[0] == 200


@pytest.mark.slow
def test_wrong_port_in_config_names_the_peer_and_recovers(hotel):
    bad_port = free_port()
    broken = hotel.config_data("search")
    broken["peers"]["geo"] = f"127.0.0.1:{bad_port}"
    hotel.write_config("search", broken)
    hotel.restart_service("search", write_config=False)
    try:
        hotel.wait_ready(("search",))
        status, body = http(hotel.frontend_url + SEARCH)
        assert status == 503, body
        assert f"127.0.0.1:{bad_port}" in body["error"]
        failed = eventually(lambda: error_events(hotel, "search", "rpc_failed"))
        assert failed[-1]["peer"] == "geo" and failed[-1]["addr"] == f"127.0.0.1:{bad_port}"
        assert "UNAVAILABLE" in failed[-1]["error"]
        assert failed[-1]["attempts"] == 3  # RPC_RETRIES=2 by default
        search = hotel.metrics("search")
        assert metric(search, "hotel_rpc_client_errors_total", peer="geo", code="UNAVAILABLE") >= 1
        assert metric(search, "hotel_rpc_client_retries_total", peer="geo") >= 2
        status, report = hotel.readiness("search")
        assert report["checks"]["peer:geo"]["ok"] is False
    finally:
        assert hotel.stop_service("search") == 0, "SIGTERM must shut down cleanly"
        hotel.start_service("search")
    hotel.wait_ready(("search",))
    eventually(lambda: search_ok(hotel))
    assert any(r["event"] == "shutdown_complete" for r in hotel.logs("search"))


@pytest.mark.slow
def test_revoked_grant_is_a_permission_error_and_regranting_fixes_it(hotel):
    assert search_ok(hotel)
    admin = hotel.postgres.admin_dsn("geo")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("REVOKE SELECT ON geo FROM hotel_geo")
    try:
        status, body = http(hotel.frontend_url + SEARCH)
        assert status == 502 and "permission denied" in body["error"]
        failures = eventually(lambda: [r for r in error_events(hotel, "geo", "db_query_failed")
                                       if r["kind"] == "permission_denied"])
        assert failures[-1]["peer"] == "postgres-geo" and "permission denied for table geo" in failures[-1]["error"]
        assert failures[-1]["user"] == "hotel_geo"
        assert metric(hotel.metrics("geo"), "hotel_db_errors_total", kind="permission_denied") >= 1
        # Restarting the service does not undo the fault: migrations do not re-grant.
        hotel.restart_service("geo")
        hotel.wait_ready(("geo",))
        assert http(hotel.frontend_url + SEARCH)[0] == 502
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute("GRANT SELECT ON geo TO hotel_geo")
    eventually(lambda: search_ok(hotel))


@pytest.mark.slow
def test_buggy_image_variant_fails_on_month_crossing_stays(hotel):
    month_end = "/hotels?inDate=2015-04-29&outDate=2015-05-02&lat=37.7867&lon=-122.4112"
    assert http(hotel.frontend_url + month_end)[0] == 200
    hotel.restart_service("reservation", env={"HOTEL_BUILD_VARIANT": "buggy"})
    try:
        hotel.wait_ready(("reservation",))
        eventually(lambda: search_ok(hotel))
        status, body = http(hotel.frontend_url + month_end)
        assert status == 502 and "day is out of range" in body["error"]
        crashes = error_events(hotel, "reservation", "handler_crashed")
        assert crashes and crashes[-1]["method"] == "CheckAvailability"
        assert metric(hotel.metrics("reservation"), "hotel_rpc_server_requests_total",
                      method="CheckAvailability", code="INTERNAL") >= 1
    finally:
        hotel.restart_service("reservation", env={})
    hotel.wait_ready(("reservation",))
    eventually(lambda: http(hotel.frontend_url + month_end)[0] == 200)


@pytest.mark.slow
def test_feature_flag_enables_the_dormant_recommendation_defect(hotel):
    price = "/recommendations?require=price&lat=37.78&lon=-122.41"
    hotel.restart_service("recommendation", env={"FEATURE_RECOMMEND_V2": "true"})
    try:
        hotel.wait_ready(("recommendation",))
        eventually(lambda: http(hotel.frontend_url + "/recommendations?require=dis&lat=37.78&lon=-122.41")[0] == 200)
        status, body = http(hotel.frontend_url + price)
        assert status == 502 and "ZeroDivisionError" in body["error"]
    finally:
        hotel.restart_service("recommendation", env={})
    hotel.wait_ready(("recommendation",))
    eventually(lambda: http(hotel.frontend_url + price)[0] == 200)


@pytest.mark.slow
def test_retry_storm_knobs_amplify_load_on_a_rate_limited_backend(hotel):
    hotel.restart_service("geo", env={"BACKEND_RATE_LIMIT": "5"})
    hotel.restart_service("search", env={"RPC_TIMEOUT_MS": "50", "RPC_RETRIES": "8", "RPC_BACKOFF_MS": "1"})
    try:
        hotel.wait_ready(("geo", "search"))
        eventually(lambda: search_ok(hotel), timeout=20)
        before = metric(hotel.metrics("geo"), "hotel_rpc_server_requests_total", method="Nearby")
        with ThreadPoolExecutor(12) as pool:
            codes = list(pool.map(lambda _: http(hotel.frontend_url + SEARCH)[0], range(24)))
        assert codes.count(504) + codes.count(503) >= 6, codes
        search = hotel.metrics("search")
        assert metric(search, "hotel_rpc_client_retries_total", peer="geo") >= 24
        # Work the backend did for callers that had already given up: far more than the 24 requests.
        time.sleep(1.5)
        served = metric(hotel.metrics("geo"), "hotel_rpc_server_requests_total", method="Nearby") - before
        assert served > 24
    finally:
        hotel.restart_service("search", env={})
        hotel.restart_service("geo", env={})
    hotel.wait_ready(("geo", "search"))
    eventually(lambda: search_ok(hotel))


def test_invalid_config_exits_2_with_a_readable_log(tmp_path):
    data = config.example("geo", host="127.0.0.1", port=free_port(), admin_port=free_port())
    del data["database"]["port"]
    path = tmp_path / "geo.yaml"
    path.write_text(yaml.safe_dump(data))
    env = {**os.environ, "HOTEL_CONFIG": str(path), "DB_USER": "u", "DB_PASSWORD": "p", "RPC_TIMEOUT_MS": "soon"}
    env.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    proc = subprocess.run([sys.executable, "-m", "sregym_app_hotel_reservation.serve", "geo"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    lines = [yaml.safe_load(line) for line in proc.stdout.splitlines()]
    problems = {r["key"]: r for r in lines if r["event"] == "config_invalid"}
    assert set(problems) == {"database.port", "env.RPC_TIMEOUT_MS"}
    assert problems["database.port"]["level"] == "error" and problems["database.port"]["config"] == str(path)
    assert "hint" in problems["database.port"]


def test_unknown_service_is_a_usage_error():
    proc = subprocess.run([sys.executable, "-m", "sregym_app_hotel_reservation.serve", "billing"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "unknown service 'billing'" in proc.stderr
