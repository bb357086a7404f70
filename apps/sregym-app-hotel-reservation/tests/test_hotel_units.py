"""Fast tests of the pieces that need no server: config validation, data, mix, stats, defects."""

from __future__ import annotations

import datetime as dt
import json
import random
import time
from urllib.parse import urlencode

import pytest
from sregym_app_hotel_reservation import config, data
from sregym_app_hotel_reservation.rpc import TokenBucket
from sregym_app_hotel_reservation.services.recommendation import value_scores
from sregym_app_hotel_reservation.services.reservation import nights, nights_buggy
from sregym_app_hotel_reservation.workload import content, mix
from sregym_app_hotel_reservation.workload.generator import validate_run
from sregym_appkit.stats import Record, RequestLog, percentile

DB_ENV = {"DB_USER": "hotel_geo", "DB_PASSWORD": "pw"}


def test_example_config_of_every_service_validates():
    for service in config.SERVICES:
        cfg = config.load(service, config.example(service), DB_ENV)
        assert cfg.port == config.DEFAULT_PORTS[service]
        assert set(cfg.peers) == set(config.PEERS[service])
        assert (cfg.database is not None) == (service in config.DATA_SERVICES)
        assert (cfg.cache is not None) == (service in config.CACHED_SERVICES)


def test_missing_key_is_reported_with_its_path():
    broken = config.example("search")
    del broken["peers"]["geo"]
    with pytest.raises(config.ConfigInvalid) as info:
        config.load("search", broken, {})
    assert [p[0] for p in info.value.problems] == ["peers.geo"]
    assert "missing required key" in info.value.problems[0][1]


def test_every_problem_is_collected_at_once():
    broken = config.example("geo")
    broken["listen"]["port"] = 70000
    del broken["database"]["name"]
    with pytest.raises(config.ConfigInvalid) as info:
        config.load("geo", broken, {"RPC_RETRIES": "many"})
    paths = {p[0] for p in info.value.problems}
    assert paths == {"listen.port", "database.name", "env.DB_USER", "env.DB_PASSWORD", "env.RPC_RETRIES"}


def test_env_knobs_are_parsed_and_bounded():
    env = {**DB_ENV, "RPC_TIMEOUT_MS": "50", "RPC_RETRIES": "30", "BACKEND_RATE_LIMIT": "12.5",
           "QUEUE_DEPTH": "4", "FEATURE_RECOMMEND_V2": "true", "DB_POOL_MAX": "2", "CACHE_ENABLED": "off"}
    cfg = config.load("rate", config.example("rate"), env)
    assert (cfg.rpc.timeout_ms, cfg.rpc.retries, cfg.rpc.rate_limit, cfg.rpc.queue_depth) == (50, 30, 12.5, 4)
    assert cfg.features["recommend_v2"] is True
    assert cfg.database is not None and cfg.database.pool_max == 2
    assert cfg.cache is not None and cfg.cache.enabled is False
    with pytest.raises(config.ConfigInvalid, match="env.QUEUE_DEPTH"):
        config.load("rate", config.example("rate"), {**DB_ENV, "QUEUE_DEPTH": "0"})


def test_address_env_overrides_the_file():
    cfg = config.load("search", config.example("search"), {"GEO_ADDR": "geo:9999"})
    assert cfg.peers["geo"] == "geo:9999"
    with pytest.raises(config.ConfigInvalid, match="env.GEO_ADDR"):
        config.load("search", config.example("search"), {"GEO_ADDR": "geo"})


def test_config_file_for_another_service_is_rejected(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("service: geo\nlisten: {port: 1}\n")
    with pytest.raises(config.ConfigInvalid, match="runs 'rate'"):
        config.load("rate", config.read_file(path), DB_ENV)
    path.write_text("[unclosed")
    with pytest.raises(config.ConfigInvalid, match="not valid YAML"):
        config.read_file(path)
    with pytest.raises(config.ConfigInvalid, match="cannot read"):
        config.read_file(tmp_path / "missing.yaml")


def test_seed_data_is_deterministic_and_realistic():
    hotels = data.hotels()
    assert len(hotels) == data.N_HOTELS == len({h["id"] for h in hotels})
    assert hotels == data.hotels()
    assert all(abs(h["lat"] - data.CITY_CENTER[0]) <= data.SPREAD_DEG for h in hotels)
    assert data.user_password(7) == "7777777777"
    assert dict(data.users())["Cornell_12"] == data.password_digest("12" * 10)
    assert {p["hotel_id"] for p in data.rate_plans()} == {h["id"] for h in hotels}


def test_buggy_variant_fails_only_on_month_crossing_stays():
    a, b = dt.date(2015, 4, 9), dt.date(2015, 4, 12)
    assert nights(a, b) == nights_buggy(a, b)
    c, d = dt.date(2015, 4, 29), dt.date(2015, 5, 2)
    assert nights(c, d) == [dt.date(2015, 4, 29), dt.date(2015, 4, 30), dt.date(2015, 5, 1)]
    with pytest.raises(ValueError, match="day is out of range"):
        nights_buggy(c, d)


def test_recommend_v2_defect_needs_a_five_star_hotel():
    assert value_scores([("1", 4.0, 100.0), ("2", 3.0, 100.0)])[0] == (50.0, "2")
    with pytest.raises(ZeroDivisionError):
        value_scores([("1", 5.0, 100.0)])
    assert any(h["rate"] == 5.0 for h in data.hotels()), "the seed must contain the trigger"


def test_mix_proportions_check_the_user_path_often():
    rng = random.Random(1)
    counts = {name: 0 for name in mix.ENDPOINTS}
    for _ in range(20000):
        counts[mix.choose(rng)] += 1
    assert abs(counts["search"] / 20000 - 0.55) < 0.02
    assert abs(counts["recommend"] / 20000 - 0.35) < 0.02
    assert abs(counts["login"] / 20000 - 0.06) < 0.01 and abs(counts["reserve"] / 20000 - 0.04) < 0.01
    method, path = mix.request_for("reserve", rng)
    assert method == "POST" and path.startswith("/reservation?") and "password=" in path
    # about half the logins carry a wrong password (the frontend must refuse them)
    logins = [content.query_params(mix.request_for("login", rng)[1]) for _ in range(400)]
    wrong = sum(content.expected_status("login", q) == 401 for q in logins)
    assert 140 < wrong < 260


def test_some_searches_cross_into_may():
    rng = random.Random(3)
    paths = [mix.request_for("search", rng)[1] for _ in range(500)]
    crossing = sum("outDate=2015-05" in p for p in paths)
    assert 0.05 < crossing / 500 < 0.25


def test_stats_window_and_percentiles():
    log = RequestLog(capacity=100)
    now = time.time()
    for i in range(100):
        log.add(Record(t=now - 99.5 + i, endpoint="search" if i % 2 else "recommend", status=200 if i % 10 else 503,
                       latency_ms=float(i), ok=bool(i % 10)))
    s = log.stats(30)
    assert s["count"] == 30 and s["errors"] == 3 and s["success_rate"] == 0.9
    assert s["p50_ms"] == 84.0 and s["p99_ms"] == 99.0
    assert set(s["by_endpoint"]) == {"search", "recommend"}
    assert percentile([], 0.5) is None
    assert log.stats(30)["error_kinds"] == {"503": 3}


def test_control_body_validation():
    base = validate_run({"rate": 5, "duration": 10, "max_requests": 100})
    assert validate_run({"rate": 50}, base).duration == 10
    for bad in ({"rate": -1}, {"rate": "x"}, {"duration": 0}, {"distribution": "bursty"}, {"bogus": 1}):
        with pytest.raises(ValueError):
            validate_run(bad, base)


def test_token_bucket_paces_requests():
    bucket = TokenBucket(rate=100, burst=1)
    start = time.monotonic()
    for _ in range(11):
        bucket.acquire()
    assert time.monotonic() - start > 0.08  # paced: ten refills at 100/s (a slow machine only adds)


def test_seed_rows_match_their_columns():
    for service, (table, columns) in data.SEED_COLUMNS.items():
        rows = data.seed_rows(service)
        assert len(rows) >= data.N_HOTELS
        assert {len(r) for r in rows} == {len(columns.split(","))}, table
        assert f"TABLE IF NOT EXISTS {table} " in " ".join(data.SCHEMAS[service])


# ---------------------------------------------------------------- content checks against the seeded data


def _feature(h):
    return {"type": "Feature", "id": h["id"], "properties": {"name": h["name"], "phone_number": h["phone"]},
            "geometry": {"type": "Point", "coordinates": [h["lon"], h["lat"]]}}


def _collection(ids):
    by_id = {h["id"]: h for h in data.hotels()}
    return json.dumps({"type": "FeatureCollection", "features": [_feature(by_id[i]) for i in ids]}).encode()


SEARCH_PATH = "/hotels?inDate=2015-04-10&outDate=2015-04-12&lat=37.7867&lon=-122.4112"


def test_content_search_accepts_the_nearest_hotels_and_nothing_else():
    allowed = content.search_allowed(37.7867, -122.4112)
    assert len(allowed) == 5
    nearest = sorted(allowed)
    assert content.check("search", SEARCH_PATH, 200, _collection(nearest)) is None
    assert content.check("search", SEARCH_PATH, 200, _collection(nearest[:2])) is None  # availability may drop some
    assert content.check("search", SEARCH_PATH, 200, _collection([])) == "search found no hotel"
    far = next(h["id"] for h in data.hotels() if h["id"] not in allowed)
    assert content.check("search", SEARCH_PATH, 200, _collection([nearest[0], far])) == \
        "search returned hotels that are not the nearest"
    assert content.check("search", SEARCH_PATH, 200, b'{"status": "ok"}') == "not a GeoJSON FeatureCollection"
    assert content.check("search", SEARCH_PATH, 200, b"<html>") == "answer is not JSON"
    tampered = json.loads(_collection(nearest[:1]))
    tampered["features"][0]["properties"]["name"] = "Stub Hotel"
    assert content.check("search", SEARCH_PATH, 200, json.dumps(tampered).encode()) == \
        "hotel name or phone differs from the data"


def test_content_recommendations_are_the_seeded_top_five():
    for require in ("rate", "price"):
        path = f"/recommendations?require={require}&lat=37.78&lon=-122.41"
        top = sorted(content.recommendations_expected(require, 37.78, -122.41))
        assert len(top) == 5
        assert content.check("recommend", path, 200, _collection(top)) is None
        assert content.check("recommend", path, 200, _collection(top[:4])) == f"wrong recommendations for require={require}"
    best = max(data.hotels(), key=lambda h: (h["rate"], -int(h["id"])))
    assert best["id"] in content.recommendations_expected("rate", 0, 0)
    path = "/recommendations?require=dis&lat=37.78&lon=-122.41"
    assert content.check("recommend", path, 200, _collection(sorted(content.recommendations_expected("dis", 37.78, -122.41)))) is None


def test_content_login_and_reservation():
    good = "/user?" + urlencode({"username": "Cornell_7", "password": "7777777777"})
    bad = "/user?" + urlencode({"username": "Cornell_7", "password": "7777777770"})
    ok = json.dumps({"message": "Login successfully!"}).encode()
    refused = json.dumps({"message": "Login failed: wrong username or password"}).encode()
    assert content.expected_status("login", content.query_params(good)) == 200
    assert content.expected_status("login", content.query_params(bad)) == 401
    assert content.check("login", good, 200, ok) is None
    assert content.check("login", bad, 401, refused) is None
    assert content.check("login", bad, 200, ok) == "login with a wrong password accepted"
    assert content.check("login", good, 200, b'{"status": "ok"}') == "login answer without success message"
    reserve = "/reservation?" + urlencode({"hotelId": "3", "username": "Cornell_1", "password": "1111111111"})
    assert content.check("reserve", reserve, 200, json.dumps({"message": "Reserve successfully!"}).encode()) is None
    assert content.check("reserve", reserve, 200, json.dumps({"message": "Failed. Already reserved."}).encode()) is None
    assert content.check("reserve", reserve, 200, b"{}") == "reservation answer without an outcome"


def test_stats_count_content_errors_as_failures():
    log = RequestLog(100)
    now = time.time()
    log.add(Record(t=now, endpoint="search", status=200, latency_ms=5, ok=True))
    log.add(Record(t=now, endpoint="search", status=200, latency_ms=5, ok=False, content_error="search found no hotel"))
    log.add(Record(t=now, endpoint="search", status=503, latency_ms=5, ok=False))
    stats = log.stats(60)
    assert stats["count"] == 3 and stats["success"] == 1
    assert stats["content_errors"] == 1 and stats["content_error_kinds"] == {"search found no hotel": 1}
    assert stats["error_kinds"] == {"503": 1}
