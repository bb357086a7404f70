"""The whole app as real local processes: the workload succeeds and traces span every hop."""

from __future__ import annotations

import re
import time

import pytest
from hotel_testlib import http, metric
from pymemcache.client.base import Client

pytestmark = pytest.mark.slow

SEARCH = "/hotels?inDate=2015-04-09&outDate=2015-04-11&lat=37.7867&lon=-122.4112"


def test_workload_window_succeeds(hotel, workload_factory):
    # Behaviour, not a service level: the bounded window ends on its own, every answer is checked
    # against the seeded data and none contradicts it, every request kind succeeds. How many requests a
    # loaded machine gets through, and how fast, is not graded here (validation runs grade the SLO).
    wl = workload_factory(hotel.frontend_url, rate=40, duration=8, max_requests=1000, seed=11,
                          distribution="poisson")
    progress = wl.wait_finished(300)  # an outer bound against hangs
    stats = wl.stats(600)
    assert 0 < progress["sent"] <= 500  # the 8 s duration bound ends the window (40/s, Poisson)
    assert stats["count"] == progress["sent"]
    # every answer checked against the seeded data: the real services answer right
    assert stats["content_errors"] == 0, stats["content_error_kinds"]
    assert {"search", "recommend", "login"} <= set(stats["by_endpoint"])
    assert all(stats["by_endpoint"][kind]["success"] >= 1 for kind in ("search", "recommend", "login")), stats
    assert stats["p50_ms"] is not None and stats["p50_ms"] < stats["p99_ms"] + 0.01
    # The same numbers are exported for Prometheus.
    status, text = http(wl.url("/metrics"))
    assert status == 200 and "workload_requests_total" in text
    # A second, bounded run through the control API (count bound wins over duration).
    status, body = wl.control(rate=50, duration=30, max_requests=25, distribution="constant")
    assert status == 200 and body["running"]
    assert wl.wait_finished(300)["sent"] == 25
    assert wl.control(rate=-5)[0] == 400


def test_every_endpoint_answers(hotel):
    status, body = http(hotel.frontend_url + SEARCH)
    assert status == 200 and body["type"] == "FeatureCollection" and body["features"]
    status, body = http(hotel.frontend_url + "/recommendations?require=rate&lat=37.78&lon=-122.41")
    assert status == 200 and len(body["features"]) == 5
    assert http(hotel.frontend_url + "/user?username=Cornell_3&password=3333333333") == (
        200, {"message": "Login successfully!"})
    assert http(hotel.frontend_url + "/user?username=Cornell_3&password=wrong")[0] == 401
    reserve = ("/reservation?inDate=2015-04-10&outDate=2015-04-12&lat=37.78&lon=-122.41&hotelId=5"
               "&customerName=Cornell_3&username=Cornell_3&password=3333333333&number=1")
    assert http(hotel.frontend_url + reserve, "POST") == (200, {"message": "Reserve successfully!"})
    assert http(hotel.frontend_url + "/hotels?inDate=2015-04-12&outDate=2015-04-10&lat=1&lon=2")[0] == 400
    assert http(hotel.frontend_url + "/recommendations?require=cheap&lat=1&lon=2")[0] == 400
    assert http(hotel.frontend_url + "/nope")[0] == 404


def _ancestors(span, by_id):
    chain = [span]
    while chain[-1]["parent_id"] and chain[-1]["parent_id"] in by_id:
        chain.append(by_id[chain[-1]["parent_id"]])
    return chain


def test_traces_span_frontend_search_geo_rate_and_datastores(hotel, otlp):
    time.sleep(1)  # let spans of earlier tests' requests arrive first (services export every 200 ms)
    start = len(otlp.spans)
    # An empty rate cache: the first search reads PostgreSQL and fills memcached, the second hits it.
    Client(("127.0.0.1", hotel.memcached["rate"].port)).flush_all()
    for _ in range(2):
        assert http(hotel.frontend_url + "/hotels?inDate=2015-04-09&outDate=2015-04-10&lat=37.70&lon=-122.47")[0] == 200
    wanted = (("geo", "postgresql"), ("rate", "memcached"), ("rate", "postgresql"))
    deadline = time.monotonic() + 15
    while True:
        spans = otlp.spans[start:]
        by_id = {s["span_id"]: s for s in spans}
        # database span <- service server span <- search client span <- search server <- frontend client <- root
        complete: dict[tuple[str, str], list[str]] = {}
        for s in spans:
            key = (s["service"], s["attributes"].get("db.system"))
            chain = [a["service"] for a in _ancestors(s, by_id)]
            if key in wanted and chain[0] == key[0] and "search" in chain and chain[-1] == "frontend":
                complete[key] = chain
        if set(complete) == set(wanted) or time.monotonic() > deadline:
            break
        time.sleep(0.3)  # services export in batches; parents may arrive after children
    assert set(complete) == set(wanted), f"complete chains only for {sorted(complete)} among {len(spans)} spans"
    root = [s for s in spans if s["service"] == "frontend" and not s["parent_id"] and s["name"] == "HTTP GET /hotels"]
    assert root
    one_trace = {s["trace_id"] for s in spans if s["service"] == "geo"}
    assert one_trace & {s["trace_id"] for s in root}


def test_metrics_and_readiness(hotel):
    http(hotel.frontend_url + SEARCH)
    frontend = hotel.metrics("frontend")
    assert metric(frontend, "hotel_http_requests_total", endpoint="/hotels", code="200") >= 1
    assert metric(frontend, "hotel_http_latency_seconds_count", endpoint="/hotels") >= 1
    geo = hotel.metrics("geo")
    assert metric(geo, "hotel_rpc_server_requests_total", method="Nearby", code="OK") >= 1
    assert metric(geo, "hotel_db_pool_max", db="geo") == 4
    assert re.search(r'hotel_db_pool_connections\{db="geo",service="geo"\} [1-9]', geo)
    rate = hotel.metrics("rate")
    assert metric(rate, "hotel_cache_requests_total", result="hit") + metric(
        rate, "hotel_cache_requests_total", result="miss") >= 1
    status, report = hotel.readiness("reservation")
    assert status == 200 and report["checks"]["database"]["ok"] and report["checks"]["cache"]["ok"]
    status, report = hotel.readiness("frontend")
    assert status == 200 and report["checks"]["peer:search"]["ok"]
    assert http(hotel.admin_url("geo", "/healthz")) == (200, {"status": "ok"})


def test_a_stub_answering_200_to_everything_fails_the_content_checks(workload_factory, tmp_path):
    """A frontend replaced by a stub that says 200 {} to every request: every answer is wrong."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Stub(BaseHTTPRequestHandler):
        def log_message(self, *args):
            return

        def _answer(self):
            body = json.dumps({"type": "FeatureCollection", "features": [], "message": "ok"}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

    server = ThreadingHTTPServer(("127.0.0.1", 0), Stub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        wl = workload_factory(f"http://127.0.0.1:{server.server_port}", rate=40, duration=4, max_requests=300,
                              seed=3, distribution="constant")
        wl.wait_finished(30)
        stats = wl.stats(60)
    finally:
        server.shutdown()
    assert stats["count"] >= 100
    assert stats["success_rate"] == 0.0, stats
    assert stats["content_errors"] == stats["count"]
    kinds = stats["content_error_kinds"]
    assert kinds.get("search found no hotel") and kinds.get("wrong recommendations for require=dis", 0) + kinds.get(
        "wrong recommendations for require=rate", 0) + kinds.get("wrong recommendations for require=price", 0)
