"""TrainTicket without a cluster: topology, manifests, seed and SQL, flags, workload checks, fault params.

``TestRealSql`` runs the services' SQL (healthy and flagged paths) against a real MariaDB started
through the embedded cluster's own mariadb entrypoint (skipped where mariadb-server is missing).
"""

from __future__ import annotations

import json
import random
import threading
import time
from types import SimpleNamespace

import pytest
import yaml
from sregym_app_train_ticket import data, flags, manifests, topology
from sregym_app_train_ticket.faults import _flag
from sregym_app_train_ticket.workload import ENDPOINTS, JOURNEYS, MAX_LAG_S, MIX, Generator, check_search, request_for
from sregym_appkit.testing import assert_shipped_files_are_built

from sregym_core.errors import FaultError


def test_topology_has_the_booking_path_and_every_peer_exists():
    assert len([s for s in topology.SERVICES if s.startswith("ts-")]) >= 25
    for name in topology.SERVICES:
        for peer in topology.peers(name):
            assert peer in topology.SERVICES, (name, peer)
    # the gateway reaches every API prefix, each served by exactly one service
    assert sorted(topology.ROUTES.values()) == sorted(set(topology.ROUTES.values()))
    assert set(topology.GATEWAY_PEERS) == set(topology.ROUTES.values())
    assert set(topology.peers("ts-preserve-service")) >= {"ts-security-service", "ts-contacts-service",
                                                         "ts-travel-service", "ts-seat-service", "ts-order-service"}


def test_flags_faulty_and_decoys_are_disjoint_and_owned():
    # tt-feat-N replicates the study's fault FN: 12 of F1-F22 here, the other flags are decoys
    assert {int(f.rsplit("-", 1)[1]) for f in topology.FAULTY_FLAGS} == {1, 2, 5, 6, 7, 8, 10, 11, 12, 13, 17, 22}
    assert len(topology.FLAGS) == 22 and len(topology.DECOY_FLAGS) == 10
    assert not set(topology.DECOY_FLAGS) & set(topology.FAULTY_FLAGS)
    for name, (owner, _real, _desc) in topology.FLAGS.items():
        assert owner in topology.SERVICES, name
    # every faulty flag's code path is described for the ground truth, with the study's fault id
    from sregym_app_train_ticket.faulty_paths import CODE_PATHS
    assert set(CODE_PATHS) == set(topology.FAULTY_FLAGS)
    for flag, path in CODE_PATHS.items():
        assert path.study.startswith(f"F{flag.rsplit('-', 1)[1]}:"), flag


def test_shipped_manifests_are_the_rendering(tmp_path):
    assert_shipped_files_are_built(manifests.SHIPPED, tmp_path)


def test_render_applies_params_and_rejects_unknown_ones():
    docs = manifests.render({"image_tag": "9.9", "otlp_endpoint": "http://otel:4318", "workload_rate": 7})
    containers = [c for d in docs for c in d.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])]
    ours = [c for c in containers if c["image"].startswith("sregym/train-ticket:")]
    assert ours and all(c["image"] == "sregym/train-ticket:9.9" for c in ours)
    order = next(c for c in containers if c["name"] == "ts-order-service")
    env = {e["name"]: e.get("value") for e in order["env"]}
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://otel:4318" and env["MYSQL_DATABASE"] == "ts_order"
    loadgen = next(c for c in containers if c["name"] == "load-generator")
    assert {e["name"]: e["value"] for e in loadgen["env"]}["WORKLOAD_RATE"] == "7"
    with pytest.raises(ValueError, match="unknown manifest parameters: bogus"):
        manifests.render({"bogus": 1})


def test_each_data_owner_gets_its_own_database_and_user_with_grants_on_it_only():
    sql = data.init_sql()
    for service in topology.db_services():
        schema, user = topology.schema_of(service), manifests.db_user(service)
        assert f"CREATE DATABASE `{schema}`;" in sql
        assert f"GRANT SELECT, INSERT, UPDATE, DELETE ON `{schema}`.* TO '{user}'@'%';" in sql
    assert sql.count("CREATE USER") == len(topology.db_services())
    assert "GRANT ALL" not in sql


def test_seed_search_answers_and_prices():
    assert data.expected_trips("shanghai", "nanjing", True) == ["D1345", "G1234", "G1235", "G1236"]
    assert data.expected_trips("shanghai", "nanjing", False) == ["Z1234"]
    assert data.expected_trips("nanjing", "shanghai", True) == []  # r3 runs the other way with a Z/T train only
    assert data.price("G1234", "shanghai", "nanjing", data.ECONOMY) == 133.0
    assert data.price("G1234", "shanghai", "nanjing", data.FIRST) == 350.0
    with pytest.raises(ValueError, match="does not run"):
        data.price("G1234", "nanjing", "shanghai", data.ECONOMY)
    for start, end in JOURNEYS:  # every journey the workload uses has trips of both kinds
        assert data.expected_trips(start, end, True) and data.expected_trips(start, end, False)


def _answer(trips, start, end, bump=0.0):
    return {"status": 1, "data": [{"tripId": t, "priceForEconomyClass": data.price(t, start, end, data.ECONOMY) + bump,
                                   "priceForConfortClass": data.price(t, start, end, data.FIRST)} for t in trips]}


def test_search_content_check_catches_wrong_trips_and_prices():
    good = data.expected_trips("shanghai", "nanjing", True)
    assert check_search(_answer(good, "shanghai", "nanjing"), "shanghai", "nanjing", True) == ""
    assert check_search(_answer(good[:-1], "shanghai", "nanjing"), "shanghai", "nanjing", True) == "search: wrong trips"
    assert check_search(_answer(good, "shanghai", "nanjing", 1.0), "shanghai", "nanjing", True) == "search: wrong price"
    assert check_search({"status": 0, "msg": "x"}, "shanghai", "nanjing", True) == "search: refused"


def test_request_for_gives_bare_requests_for_the_probe_kinds():
    import random
    rng = random.Random(3)
    for kind in ("search", "search-other", "book", "orders", "home", "contacts", "stations"):
        method, path = request_for(kind, rng)
        assert method in ("GET", "POST") and path.startswith("/")
    with pytest.raises(ValueError):
        request_for("pay", rng)  # needs an order from the workload's own booking
    assert set(ENDPOINTS) >= {"search", "book", "pay", "cancel", "login"}


class _SlowStart(Generator):
    """The generator's own loop, each request start taking ``start_s`` (a starved CPU); the first
    one stalls ``stall_s`` (a process descheduled for a while). Starts are recorded, not sent."""

    def __init__(self, rate: float, seed: int, start_s: float, stall_s: float = 0.0) -> None:
        super().__init__("http://127.0.0.1:9", rate=rate, timeout_s=1, seed=seed)
        self.start_s, self.stall_s, self.started = start_s, stall_s, []

    def dispatch(self, kind: str) -> None:
        self.started.append(time.monotonic())
        time.sleep(self.stall_s if len(self.started) == 1 else self.start_s)

    def run_for(self, seconds: float) -> float:
        stop = threading.Event()
        thread = threading.Thread(target=self.run, args=(stop,))
        began = time.monotonic()
        thread.start()
        time.sleep(seconds)
        stop.set()
        thread.join(5)
        assert not thread.is_alive()
        return began


def _arrivals(rate: float, seed: int, seconds: float) -> int:
    """How many Poisson arrivals the generator's seeded draws put in ``seconds``."""
    rng, kinds, weights, t, n = random.Random(seed), list(MIX), list(MIX.values()), 0.0, 0
    while True:
        t += rng.expovariate(rate)
        if t > seconds:
            return n
        rng.choices(kinds, weights)
        n += 1


def test_workload_keeps_its_rate_when_starting_requests_is_slow():
    """Arrivals are due on the clock: 15 ms per start at 50/s (mean gap 20 ms) must not stretch the
    gaps (sleeping a fresh gap after each start sent about 57 instead of about 100 in 2 s)."""
    gen = _SlowStart(rate=50, seed=5, start_s=0.015)
    gen.run_for(2.0)
    expected = _arrivals(50, 5, 2.0)
    assert expected * 0.9 <= len(gen.started) <= expected + 3, (len(gen.started), expected)


def test_workload_drops_arrivals_it_could_not_start_for_long_instead_of_bursting():
    gen = _SlowStart(rate=50, seed=7, start_s=0.0, stall_s=2.5)
    began = gen.run_for(3.5)
    after = [t for t in gen.started[1:] if t - gen.started[1] < 0.05]  # the catch-up right after the stall
    assert 20 <= len(after) <= 50 * MAX_LAG_S + 15, len(after)  # at most MAX_LAG_S of backlog, not 2.5 s of it
    assert len(gen.started) < _arrivals(50, 7, 3.5) - 50 * (2.5 - MAX_LAG_S) * 0.6
    assert gen.started[0] - began < 0.5


def test_flagd_file_errors_name_the_json_path(tmp_path):
    with pytest.raises(ValueError, match=r"\$.flags.x.defaultVariant"):
        flags.parse(json.dumps({"flags": {"x": {"state": "ENABLED", "variants": {"on": True}, "defaultVariant": "no"}}}))
    with pytest.raises(ValueError, match="not JSON"):
        flags.parse("{")
    path = tmp_path / "flags.json"
    path.write_text(manifests.flagd_json())
    store = flags.FlagFile(str(path))
    store.reload()
    assert store.evaluate("tt-feat-17")[1]["value"] is False
    doc = json.loads(path.read_text())
    doc["flags"]["tt-feat-17"]["defaultVariant"] = "on"
    doc["flags"]["tt-feat-1"]["state"] = "DISABLED"
    path.write_text(json.dumps(doc))
    store.reload()
    assert store.evaluate("tt-feat-17") == (200, {"key": "tt-feat-17", "value": True, "variant": "on",
                                                  "reason": "STATIC", "metadata": {}})
    assert store.evaluate("tt-feat-1")[1]["errorCode"] == "FLAG_NOT_FOUND"
    path.write_text("not json")  # a broken edit keeps the last good flags
    store.reload()
    assert store.evaluate("tt-feat-17")[1]["value"] is True


def _target(name):
    return SimpleNamespace(component=SimpleNamespace(name=name))


def test_fault_params_must_name_a_faulty_flag_of_the_target_and_real_decoys():
    assert _flag(_target("ts-order-service"), {}) == ("tt-feat-12", [])  # the first faulty flag it owns
    assert _flag(_target("ts-order-service"), {"flag": "tt-feat-17"}) == ("tt-feat-17", [])
    assert _flag(_target("ts-contacts-service"), {"decoys": ["tt-feat-4"]}) == ("tt-feat-22", ["tt-feat-4"])
    with pytest.raises(FaultError, match="evaluated by ts-contacts-service"):
        _flag(_target("ts-order-service"), {"flag": "tt-feat-22"})
    with pytest.raises(FaultError, match="not a flag with a faulty code path"):
        _flag(_target("ts-order-service"), {"flag": "tt-feat-3"})
    with pytest.raises(FaultError, match="not decoy flags"):
        _flag(_target("ts-order-service"), {"decoys": ["tt-feat-22"]})


# ------------------------------------------------------------------------------ real MariaDB
def _ctx(service, port, monkeypatch, on=()):
    from sregym_app_train_ticket.db import Database
    from sregym_app_train_ticket.services import Ctx

    monkeypatch.setattr(flags, "enabled", lambda key: key in on)
    db = Database(service, {"MYSQL_ADDR": f"127.0.0.1:{port}", "MYSQL_DATABASE": topology.schema_of(service),
                            "MYSQL_USER": manifests.db_user(service), "MYSQL_PASSWORD": data.service_password(service)})
    return Ctx(service, {}, db)


def _handler(builder, ctx, method, suffix):
    return next(h for m, p, h in builder(ctx) if m == method and p.endswith(suffix))


class TestRealSql:
    def test_sold_tickets_healthy_and_the_f17_nested_select(self, mariadb, monkeypatch):
        import pymysql
        from sregym_app_train_ticket.services import build_order

        def sold(on=()):
            ctx = _ctx("ts-order-service", mariadb, monkeypatch, on)
            handler = _handler(lambda c: build_order(c, "/api/v1/orderservice/order"), ctx, "POST", "/tickets")
            return handler({"params": {}, "query": {}, "body": {"trainNumber": "G1234", "travelDate": "2030-01-01"}})

        assert sold() == {"status": 1, "msg": "Success", "data": []}
        assert sold(on=("tt-feat-1", "tt-feat-2"))["status"] == 1  # decoys change nothing
        with pytest.raises(pymysql.err.OperationalError, match="Operand should contain 1 column"):
            sold(on=("tt-feat-17",))

    def test_contacts_healthy_and_the_f22_column_mismatch(self, mariadb, monkeypatch):
        import pymysql
        from sregym_app_train_ticket.services import build_contacts

        def by_id(on=()):
            ctx = _ctx("ts-contacts-service", mariadb, monkeypatch, on)
            handler = _handler(build_contacts, ctx, "GET", "contacts/(?P<id>[^/]+)")
            return handler({"params": {"id": data.contact_id(3)}, "query": {}, "body": {}})

        assert by_id()["data"]["documentNumber"] == "DocumentNumber_03"
        assert by_id(on=("tt-feat-18",))["data"]["accountId"] == data.account_id(3)
        with pytest.raises(pymysql.err.OperationalError, match="Unknown column 'document_num'"):
            by_id(on=("tt-feat-22",))

    def test_a_service_user_cannot_read_another_services_schema(self, mariadb):
        import pymysql

        conn = pymysql.connect(host="127.0.0.1", port=mariadb, user="contacts-service",
                               password=data.service_password("ts-contacts-service"))
        with pytest.raises(pymysql.err.OperationalError, match="denied"), conn.cursor() as cur:
            cur.execute("SELECT * FROM ts_order.orders")
        conn.close()

    def test_root_needs_the_password_from_any_address(self, mariadb):
        # the pods share the loopback: the root@127.0.0.1 and root@::1 accounts install-db makes
        # without a password must be gone
        import pymysql

        with pytest.raises(pymysql.err.OperationalError, match="denied"):
            pymysql.connect(host="127.0.0.1", port=mariadb, user="root", password="")


def test_lite_holds_validated_problems_of_both_kinds():
    """lite holds TrainTicket problems sound in the latest `sregym validate` (docs/validation.md): k8s or
    network faults and replicated F-faults (tt-flag) both, each with a symptom that shows."""
    from pathlib import Path

    import sregym_app_train_ticket

    problems = [yaml.safe_load(p.read_text())
                for p in sorted((Path(sregym_app_train_ticket.__file__).parent / "problems").glob("*.yaml"))]
    assert len(problems) == 27
    lite = [p for p in problems if "lite" in p["tags"]]
    assert len(lite) >= 5
    flag = [p for p in lite if p["faults"][0]["fault"] == "tt-flag"]
    assert len(flag) >= 2 and len(lite) - len(flag) >= 2
    assert all(p["symptom"] not in ("latent", ["latent"]) for p in lite)
    assert not [p["id"] for p in problems if "lite" in p["tags"] and "full" in p["tags"]]


def test_the_flagd_process_serves_ofrep_follows_its_file_and_answers_on_the_admin_port(tmp_path, monkeypatch):
    """The real ``serve flagd`` process (the shared appkit flag store, admin port and logs)."""
    import sys
    import urllib.error
    import urllib.request

    from sregym_core.testing.localservers import free_port, start_server, stop_server

    path = tmp_path / "flags.json"
    path.write_text(manifests.flagd_json())
    port, admin = free_port(), free_port()
    monkeypatch.setenv("FLAGD_OFREP_PORT", str(port))
    monkeypatch.setenv("ADMIN_PORT", str(admin))
    monkeypatch.setenv("FLAGD_FILE", str(path))
    monkeypatch.setenv("FLAGD_RELOAD_S", "0.2")

    def call(url: str, method: str = "POST") -> tuple[int, dict | str]:
        request = urllib.request.Request(url, data=b"{}" if method == "POST" else None, method=method)
        try:
            with urllib.request.urlopen(request, timeout=5) as resp:
                status, body = resp.status, resp.read().decode()
        except urllib.error.HTTPError as exc:
            status, body = exc.code, exc.read().decode()
        try:
            return status, json.loads(body)
        except ValueError:
            return status, body

    proc = start_server([sys.executable, "-m", "sregym_app_train_ticket.serve", "flagd"], port, timeout=30)
    try:
        base = f"http://127.0.0.1:{port}/ofrep/v1/evaluate/flags"
        assert call(f"{base}/tt-feat-17") == (200, {"key": "tt-feat-17", "value": False, "variant": "off",
                                                    "reason": "STATIC", "metadata": {}})
        assert call(f"{base}/no-such-flag")[0] == 404
        status, bulk = call(base)
        assert status == 200 and len(bulk["flags"]) == len(topology.FLAGS)
        doc = json.loads(path.read_text())
        doc["flags"]["tt-feat-17"]["defaultVariant"] = "on"
        path.write_text(json.dumps(doc))
        deadline = time.monotonic() + 30  # an outer bound: it only catches a flagd that never rereads its file
        while call(f"{base}/tt-feat-17")[1].get("value") is not True:
            assert time.monotonic() < deadline, "flagd did not follow its file"
            time.sleep(0.1)
        status, ready = call(f"http://127.0.0.1:{admin}/readyz", "GET")
        assert status == 200 and ready == {"ready": True, "flags": len(topology.FLAGS)}
        status, metrics = call(f"http://127.0.0.1:{admin}/metrics", "GET")
        assert status == 200 and "python_info" in metrics
    finally:
        assert stop_server(proc) == 0
