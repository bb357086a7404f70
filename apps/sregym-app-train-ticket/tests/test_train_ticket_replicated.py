"""The replicated industrial faults (F1-F22 of the TrainTicket fault-analysis study) on the real
services: every ts-* service runs in this process on its own HTTP port, wired to its peers and to a
real MariaDB, exactly as the pods run them (only the flag lookup is replaced: a set of flags that
are on). Each flag's code path is checked for the wrong outcome it must produce, the healthy path
for the right one, and switching the flag off for the fix. The workload generator runs against the
gateway to show that its content checks see the faults that return no error.
"""

from __future__ import annotations

import datetime as dt
import json
import time
import urllib.error
import urllib.request
from types import SimpleNamespace

import pytest
from sregym_app_train_ticket import data, flags, manifests, replicated, runtime, services, tokens, topology, workload
from sregym_app_train_ticket.workload import Generator, check_search


# ---------------------------------------------------------------------------- the helpers alone
def test_in_arrival_order_returns_answers_in_the_order_they_finish():
    def after(seconds, value):
        return lambda: (time.sleep(seconds), value)[1]

    assert replicated.in_arrival_order([after(0.3, "a"), after(0.0, "b"), after(0.15, "c")]) == ["b", "c", "a"]
    with pytest.raises(ZeroDivisionError):
        replicated.in_arrival_order([after(0.0, "a"), lambda: 1 / 0])


def test_dispatcher_runs_the_job_after_the_caller_has_moved_on():
    seen = []
    replicated.Dispatcher("t", 0.2).send(lambda: seen.append("late"))
    seen.append("caller")
    assert _later(lambda: seen == ["caller", "late"])


def test_starved_pool_serves_one_task_and_starves_two():
    pool = replicated.StarvedPool(workers=2, wait_s=0.5, stale_s=2.0)

    def task():
        time.sleep(0.05)  # its own work first (a trip's ticket information), then its sub-tasks
        return pool.gather({"x": lambda: "x", "y": lambda: "y"})

    assert pool.result(pool.start(task)) == {"x": "x", "y": "y"}  # one task: its sub-tasks find the free thread
    started = time.monotonic()
    a, b = pool.start(task), pool.start(task)  # two tasks fill both threads; their sub-tasks queue behind
    failures = []
    for future in (a, b):
        try:
            pool.result(future)
        except TimeoutError as exc:
            failures.append(str(exc))
    # one waits out its sub-tasks' wait and gives its thread up (then the other's sub-tasks run on it)
    assert failures and all("still queued after 0.5 s (all 2 threads busy)" in f for f in failures), failures
    assert time.monotonic() - started >= 0.5


def test_station_locks_are_released_the_wrong_way_round():
    locks = replicated.StationLocks()
    locks.lock_pairs({("shanghai", "nanjing")})
    locks.release({("shanghai", "nanjing")})
    assert locks.locked("shanghai", "nanjing")  # the lock stays


def test_batch_queue_waits_for_the_batch_and_drains_when_batching_stops():
    batching = {"on": True}
    done = []
    queue = replicated.BatchQueue("t", 30.0, lambda: batching["on"])
    queue.put(lambda: done.append(1))
    time.sleep(0.6)
    assert done == []
    batching["on"] = False
    assert _later(lambda: done == [1])


# --------------------------------------------------------------------- the services, in-process
class Cluster(SimpleNamespace):
    def http(self, service: str, method: str, path: str, body=None, timeout: float = 15.0):
        """(status, JSON answer) of one request to a service, as a logged-in user."""
        token = tokens.issue(data.account_id(1), data.username(1), manifests.JWT_KEY)
        req = urllib.request.Request(f"http://127.0.0.1:{self.ports[service]}{path}", method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"null")

    def book(self, n: int, trip: str, start: str, end: str, days: int = 3):
        date = (dt.date.today() + dt.timedelta(days=days)).isoformat()
        return self.http("ts-preserve-service", "POST", "/api/v1/preserveservice/preserve", {
            "accountId": data.account_id(n), "contactsId": data.contact_id(n), "tripId": trip, "date": date,
            "from": start, "to": end, "seatType": data.ECONOMY})

    def booked(self, n: int, trip: str = "G1234", start: str = "shanghai", end: str = "nanjing") -> tuple[str, float]:
        status, body = self.book(n, trip, start, end)
        assert status == 200 and body["status"] == 1, body
        return body["data"]["orderId"], body["data"]["price"]

    def pay(self, n: int, order: str, trip: str = "G1234"):
        return self.http("ts-inside-payment-service", "POST", "/api/v1/inside_pay_service/inside_payment",
                         {"orderId": order, "tripId": trip, "userId": data.account_id(n)})

    def cancel(self, n: int, order: str, trip: str = "G1234"):
        return self.http("ts-cancel-service", "GET", f"/api/v1/cancelservice/cancel/{order}/{data.account_id(n)}?tripId={trip}")

    def order_status(self, order: str) -> int:
        status, body = self.http("ts-order-service", "GET", f"/api/v1/orderservice/order/{order}")
        assert status == 200, body
        return body["data"]["status"]

    def money(self, n: int) -> float:
        rows = self.dbs["ts-inside-payment-service"].run("SELECT money FROM money WHERE user_id=%s", (data.account_id(n),))
        return rows[0]["money"]

    def search(self, service: str, start: str, end: str, days: int = 5):
        prefix = "/api/v1/travelservice" if service == "ts-travel-service" else "/api/v1/travel2service"
        date = (dt.date.today() + dt.timedelta(days=days)).isoformat()
        return self.http(service, "POST", f"{prefix}/trips/left", {"startPlace": start, "endPlace": end,
                                                                   "departureTime": date})


@pytest.fixture(scope="module")
def tt(mariadb):
    from sregym_app_train_ticket.db import Database

    mp = pytest.MonkeyPatch()
    on: set[str] = set()
    mp.setattr(flags, "enabled", lambda key: key in on)
    mp.setenv("JWT_SECRET", manifests.JWT_KEY)  # as the ts-jwt Secret gives every service
    # the faulty paths' waits, short enough for a unit test (the same relations as in the pods)
    peer_timeout = 3.0  # generous: the machine may be busy; the faulty waits keep their relations to it
    mp.setattr(services, "BANK_SETTLEMENT_S", peer_timeout + 0.5)
    # the batch must stay well behind what a loaded machine takes to answer the requests before it (the pay
    # and the read that sees it unpaid): the tests that wait for it wait for the event
    mp.setattr(services, "PAYMENT_BATCH_S", 8.0)
    # the generator reads a cancelled order back this long after: time for the faulty path's late refund
    # (ASYNC_DELIVERY_S) to land first even on a loaded machine
    mp.setattr(workload, "READ_BACK_S", 3.0)
    mp.setattr(services, "TASK_WAIT_S", 1.5)
    mp.setattr(services, "TASK_STALE_S", 3.0)
    mp.setattr(services, "ROUTE_PREFETCH_S", 1.0)
    names = [n for n in topology.SERVICES if n != topology.FLAGD_SERVICE]
    # every server binds a port the kernel picks (a port probed free and bound later can be taken in between by
    # another worker's connection: CI of stop 51); the peers are filled in once every port is known
    servers, dbs, peers = [], {}, {n: {} for n in names}
    for name in names:
        schema = topology.schema_of(name)
        if schema:
            dbs[name] = Database(name, {"MYSQL_ADDR": f"127.0.0.1:{mariadb}", "MYSQL_DATABASE": schema,
                                        "MYSQL_USER": manifests.db_user(name), "MYSQL_PASSWORD": data.service_password(name)})
        servers.append(runtime.HttpServer(name, 0, services.BUILDERS[name](services.Ctx(name, peers[name], dbs.get(name)))))
    ports = {name: server.port for name, server in zip(names, servers)}
    for name in names:
        peers[name].update({p: runtime.Peer(name, p, f"127.0.0.1:{ports[p]}", peer_timeout) for p in topology.peers(name)})
    for server in servers:
        server.start()
    yield Cluster(on=on, ports=ports, dbs=dbs)
    for server in servers:
        server.stop()
    mp.undo()


@pytest.fixture
def flag(tt):
    """Switch flags on for one test; they are off again afterwards."""
    def switch(*keys):
        tt.on.update(keys)
    yield switch
    tt.on.clear()


#: an outer bound for waits that end on an event: it only catches a hang (the machine may be loaded)
HANG_S = 30.0


def _later(predicate, timeout: float = HANG_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


# --------------------------------------------------------------------- F1, F11, F13: cancellation
def test_healthy_cancellation_refunds_and_leaves_the_order_cancelled(tt, flag):
    order, price = tt.booked(2)
    before = tt.money(2)
    assert tt.pay(2, order)[0] == 200 and tt.order_status(order) == data.PAID
    status, body = tt.cancel(2, order)
    assert status == 200 and body["data"]["refund"] == data.refund(price, data.PAID)
    time.sleep(0.5)
    assert tt.order_status(order) == data.CANCELLED
    assert tt.money(2) == pytest.approx(before - price + data.refund(price, data.PAID))


def test_f1_the_asynchronous_refund_lands_after_the_cancellation(tt, flag):
    flag("tt-feat-1")
    order, price = tt.booked(3)
    before = tt.money(3)
    tt.pay(3, order)
    status, body = tt.cancel(3, order)
    assert status == 200 and body["data"]["refund"] == data.refund(price, data.PAID)  # the user is told all is well
    assert tt.order_status(order) == data.CANCELLED  # at first
    assert _later(lambda: tt.order_status(order) == data.CANCELLING)  # then the late refund's status write lands
    refunded = before - price + data.refund(price, data.PAID)
    assert _later(lambda: abs(tt.money(3) - refunded) < 0.01)  # and the money did come back


def test_f11_the_refund_writes_its_status_after_the_canceller_unless_the_refund_is_unusual(tt, flag):
    flag("tt-feat-11")
    cheap, cheap_price = tt.booked(4, "G1236", "shanghai", "nanjing")  # refund 91.2: no recheck
    dear, dear_price = tt.booked(4, "G1234", "shanghai", "taiyuan")  # refund 395.2: rechecked
    assert data.refund(cheap_price, data.PAID) < services.RECHECK_REFUND_ABOVE < data.refund(dear_price, data.PAID)
    for order, trip in ((cheap, "G1236"), (dear, "G1234")):
        tt.pay(4, order, trip)
        assert tt.cancel(4, order, trip)[0] == 200
    assert _later(lambda: tt.order_status(cheap) == data.CANCELLING)
    assert tt.order_status(dear) == data.CANCELLED


def test_f13_a_queued_payment_lets_a_cancellation_through_unrefunded_then_charges_it(tt, flag):
    flag("tt-feat-13")
    order, price = tt.booked(5)
    before = tt.money(5)
    status, body = tt.pay(5, order)
    assert status == 200 and body["status"] == 1  # the user is told it is paid
    assert tt.order_status(order) == data.NOT_PAID  # it is not, yet
    status, body = tt.cancel(5, order)
    assert status == 200 and body["data"]["refund"] == 0.0  # so nothing is refunded
    assert _later(lambda: tt.order_status(order) == data.PAID)  # the batch charges the cancelled order
    assert tt.money(5) == pytest.approx(before - price)


def test_f13_switching_the_flag_off_drains_the_queue_at_once(tt, flag):
    flag("tt-feat-13")
    order, _price = tt.booked(6)
    tt.pay(6, order)
    started = time.monotonic()
    tt.on.discard("tt-feat-13")
    assert _later(lambda: tt.order_status(order) == data.PAID)
    # at once: not by the batch, due PAYMENT_BATCH_S after the payment was queued
    assert time.monotonic() - started < services.PAYMENT_BATCH_S


# ----------------------------------------------------------------------- F12: locked stations
def test_f12_listing_orders_leaves_their_stations_locked(tt, flag):
    order, _price = tt.booked(7)
    flag("tt-feat-12")
    status, body = tt.http("ts-order-service", "POST", "/api/v1/orderservice/order/refresh",
                           {"loginId": data.account_id(7)})
    assert status == 200 and any(o["id"] == order for o in body["data"])
    status, body = tt.pay(7, order)
    assert status == 409 and "locked stations shanghai and nanjing" in body["msg"]
    tt.on.discard("tt-feat-12")
    assert tt.pay(7, order)[0] == 200  # off: the locks are not consulted


# ------------------------------------------------------------------------------- F7: third party
def test_f7_the_gateway_settles_longer_than_its_caller_waits(tt, flag):
    flag("tt-feat-7")
    order, _price = tt.booked(8)
    before = tt.money(8)
    status, body = tt.pay(8, order)
    assert status == 502 and "timed out" in body["msg"]
    assert tt.order_status(order) == data.NOT_PAID and tt.money(8) == before
    payments = tt.dbs["ts-payment-service"]
    assert _later(lambda: payments.run("SELECT id FROM payment WHERE order_id=%s", (order,)))  # charged anyway
    tt.on.discard("tt-feat-7")
    order, _price = tt.booked(8)
    assert tt.pay(8, order)[0] == 200


# ------------------------------------------------------------------------ F8, F10: the booking
def test_f8_a_vip_members_booking_loses_the_key_on_the_way(tt, flag):
    assert data.vip_key(1) and not data.vip_key(data.ACCOUNTS)
    assert tt.book(1, "G1234", "shanghai", "nanjing")[0] == 200  # healthy: the key goes along
    flag("tt-feat-8")
    status, body = tt.book(1, "G1234", "shanghai", "nanjing")
    assert status == 409 and "VIP order without the member's VIP key" in body["msg"]
    assert tt.book(data.ACCOUNTS, "G1234", "shanghai", "nanjing")[0] == 200  # an ordinary member is fine


def test_f10_advance_bookings_ask_the_contacts_by_account_api_for_a_contacts_id(tt, flag):
    flag("tt-feat-10")
    ahead = services.ADVANCE_BOOKING_DAYS
    status, body = tt.book(9, "G1234", "shanghai", "nanjing", days=ahead + 1)
    assert status == 200 and body["status"] == 0 and body["msg"] == "No contacts according to contacts id"
    assert tt.book(9, "G1234", "shanghai", "nanjing", days=ahead - 1)[1]["status"] == 1
    tt.on.discard("tt-feat-10")
    assert tt.book(9, "G1234", "shanghai", "nanjing", days=ahead + 1)[1]["status"] == 1


# ----------------------------------------------------------------------------- F2, F5, F6: search
def _prices(answer):
    return sorted((t["priceForEconomyClass"], t["priceForConfortClass"]) for t in answer["data"])


def test_f2_parallel_answers_are_matched_to_trips_as_they_arrive(tt, flag):
    status, healthy = tt.search("ts-travel-service", "shanghai", "nanjing")
    assert status == 200 and check_search(healthy, "shanghai", "nanjing", True) == ""
    flag("tt-feat-2")
    for _ in range(5):
        status, body = tt.search("ts-travel-service", "shanghai", "nanjing")
        assert status == 200
        # the same trips and the same details, each set of details on whichever trip it arrived for
        assert sorted(t["tripId"] for t in body["data"]) == data.expected_trips("shanghai", "nanjing", True)
        assert _prices(body) == _prices(healthy)


def test_f5_two_trips_starve_the_task_pool(tt, flag):
    flag("tt-feat-5")
    status, body = tt.search("ts-travel-service", "nanjing", "beijing")  # one trip: its sub-tasks find a thread
    assert status == 200 and check_search(body, "nanjing", "beijing", True) == ""
    started = time.monotonic()
    status, body = tt.search("ts-travel-service", "shanghai", "nanjing")  # four trips: both threads wait
    assert status == 500 and "async task pool" in body["msg"]
    assert time.monotonic() - started >= services.TASK_WAIT_S
    tt.on.discard("tt-feat-5")
    status, body = tt.search("ts-travel-service", "shanghai", "nanjing")
    assert status == 200 and check_search(body, "shanghai", "nanjing", True) == ""


def test_f6_an_sql_error_in_the_route_service_sets_off_recursive_requests(tt, flag):
    status, body = tt.http("ts-route-service", "POST", "/api/v1/routeservice/routes/byIds", {"ids": []})
    assert status == 500 and "1064" in body["msg"]  # MariaDB rejects "IN ()"

    def route_sql_errors() -> float:
        from prometheus_client import REGISTRY

        return REGISTRY.get_sample_value("ts_sql_queries_total", {"service": "ts-route-service", "outcome": "error"}) or 0

    before = route_sql_errors()
    flag("tt-feat-6")
    started = time.monotonic()
    status, body = tt.search("ts-travel2-service", "shanghai", "nanjing")
    assert status == 500 and "recursive attempts" in body["msg"]
    assert time.monotonic() - started >= services.ROUTE_PREFETCH_S
    assert route_sql_errors() - before >= 5  # one failing statement per recursion
    tt.on.discard("tt-feat-6")
    status, body = tt.search("ts-travel2-service", "shanghai", "nanjing")
    assert status == 200 and check_search(body, "shanghai", "nanjing", False) == ""


# ----------------------------------------------------------------- the workload's content checks
def _run(gen: Generator, *kinds: str) -> list[tuple]:
    for kind in kinds:
        gen.one(kind)
    return list(gen.log.records)


def test_the_workload_sees_a_cancellation_that_went_wrong(tt, flag):
    gateway = f"http://127.0.0.1:{tt.ports[topology.GATEWAY]}"
    healthy = Generator(gateway, rate=0, timeout_s=10, seed=11)
    records = _run(healthy, "book", "book", "pay", "pay", "cancel")
    assert all(r[4] for r in records), records  # every request right
    time.sleep(workload.VERIFY_AFTER_S + 0.1)  # the generator checks orders it changed at least this long ago
    assert _run(healthy, "orders")[-1][4]  # the cancelled and the paid order show as such

    flag("tt-feat-1")
    faulty = Generator(gateway, rate=0, timeout_s=10, seed=12)
    records = _run(faulty, "book", "pay", "cancel")
    assert records[-1][6] == "cancel: order not cancelled", records[-1]

    tt.on.clear()
    flag("tt-feat-13")
    queued = Generator(gateway, rate=0, timeout_s=10, seed=13)
    records = _run(queued, "book", "pay", "cancel")
    assert records[-1][6] == "cancel: wrong refund", records[-1]


def test_the_workload_checks_an_account_shows_what_it_just_paid(tt, flag):
    gateway = f"http://127.0.0.1:{tt.ports[topology.GATEWAY]}"
    flag("tt-feat-13")
    gen = Generator(gateway, rate=0, timeout_s=10, seed=21)
    _run(gen, "book", "pay")
    time.sleep(workload.VERIFY_AFTER_S + 0.1)  # the generator checks orders it changed at least this long ago
    assert _run(gen, "orders")[-1][6] == "orders: a paid order is not paid"  # well before the batch charges it
