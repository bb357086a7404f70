"""The workload generator (hidden namespace ``train-ticket-workload``): users logging in, searching,
booking, paying and cancelling, as an open loop (Poisson arrivals, ``WORKLOAD_RATE`` per second).

Every answer is checked against the seed (:mod:`data`) and against what this generator did itself:
a search must list exactly the trips that run between the two stations with the prices the rates
give; a booking must come back with an order of the right price; a login must name the right
account; cancelling a paid order must refund its share of the price, and the order read back right
after must be cancelled; an account's order list must show the orders this generator paid or
cancelled a few seconds ago in that state. A wrong answer counts as a content error.

Booking, paying, cancelling and listing orders need a login, as in TrainTicket: each account logs in
once (verification code, then ``/api/v1/users/login``) and sends its JWT as ``Authorization: Bearer``
until half its lifetime has passed or a service refuses it (401/403), then logs in again.

API (port 8089)::

    GET  /stats?window=30   {"count","success","errors","success_rate","content_errors","error_kinds",
                             "p50_ms","p95_ms","p99_ms","by_endpoint": {kind: {...}}}
    GET  /control           the current rate; POST /control {"rate": 3} changes it (0 pauses)
    GET  /healthz

The request log and its summaries are this app's own minimal copy, TO BE REPLACED by
``sregym_appkit``'s shared stats module once it lands.
"""

from __future__ import annotations

import datetime as dt
import http.client
import json
import os
import random
import socket
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import deque
from typing import Any

from . import data, runtime, tokens

#: kind → weight in the mix
MIX = {"search": 28, "search-other": 10, "login": 8, "book": 17, "pay": 12, "cancel": 10, "orders": 10, "home": 5}
ENDPOINTS = tuple(MIX)
#: an order list must show what this generator paid or cancelled between these many seconds ago (long
#: enough for the write to have landed; short enough that a fixed fault stops showing within a window)
VERIFY_AFTER_S, VERIFY_WITHIN_S = 1.5, 8.0
#: after cancelling, the order is read back this much later (a user looking at the order)
READ_BACK_S = 0.5
#: an arrival the generator could not start within this many seconds of its time is dropped
MAX_LAG_S = 1.0
#: an account logs in again after this many seconds (by this generator's clock), before its token expires
TOKEN_REFRESH_S = tokens.TOKEN_TTL_S / 2
#: (from, to) pairs the searches and bookings use, each with both kinds of trip
JOURNEYS = (("shanghai", "nanjing"), ("nanjing", "beijing"), ("shanghai", "taiyuan"), ("nanjing", "taiyuan"),
            ("shanghai", "shijiazhuang"))


def travel_date(rng: random.Random) -> str:
    """A day in the next two months: bookings spread over many trains' days, so seats never run out."""
    return (dt.date.today() + dt.timedelta(days=rng.randrange(1, 61))).isoformat()


def _q(params: dict[str, Any]) -> str:
    return urllib.parse.urlencode(params)


def query_of(path: str) -> dict[str, str]:
    """The query parameters of a path ``request_for`` built."""
    return dict(urllib.parse.parse_qsl(path.split("?", 1)[1]))


def request_for(kind: str, rng: random.Random) -> tuple[str, str]:
    """One request of ``kind`` as a bare method and path (all parameters in the query string)."""
    n = rng.randrange(1, data.ACCOUNTS + 1)
    start, end = rng.choice(JOURNEYS)
    if kind in ("search", "search-other"):
        service = "travelservice" if kind == "search" else "travel2service"
        return "GET", f"/api/v1/{service}/trips/left?" + _q({"startPlace": start, "endPlace": end,
                                                              "departureTime": travel_date(rng)})
    if kind == "book":
        trip = rng.choice(data.expected_trips(start, end, True))
        return "POST", "/api/v1/preserveservice/preserve?" + _q({
            "accountId": data.account_id(n), "contactsId": data.contact_id(n), "tripId": trip, "date": travel_date(rng),
            "from": start, "to": end, "seatType": data.ECONOMY})
    if kind == "orders":
        return "POST", "/api/v1/orderservice/order/refresh?" + _q({"loginId": data.account_id(n)})
    if kind == "contacts":
        return "GET", f"/api/v1/contactservice/contacts/account/{data.account_id(n)}"
    if kind == "stations":
        return "GET", "/api/v1/stationservice/stations"
    if kind == "home":
        return "GET", "/"
    raise ValueError(f"no bare request for {kind!r}")


# ----------------------------------------------------------------------------------- the log
class RequestLog:
    """Finished requests in a bounded ring buffer; windowed summaries for the oracles."""

    def __init__(self, capacity: int = 100_000) -> None:
        self.records: deque[tuple[float, str, int, float, bool, str, str]] = deque(maxlen=capacity)
        self.lock = threading.Lock()

    def add(self, kind: str, status: int, latency_ms: float, ok: bool, error: str = "", content: str = "") -> None:
        with self.lock:
            self.records.append((time.time(), kind, status, latency_ms, ok, error, content))

    @staticmethod
    def summarize(records: list[tuple[float, str, int, float, bool, str, str]]) -> dict[str, Any]:
        latencies = sorted(r[3] for r in records)
        success = sum(1 for r in records if r[4])
        errors: dict[str, int] = {}
        content: dict[str, int] = {}
        for _t, _k, status, _l, good, error, wrong in records:
            if wrong:
                content[wrong] = content.get(wrong, 0) + 1
            elif not good:
                key = str(status) if status else (error or "error")
                errors[key] = errors.get(key, 0) + 1

        def pct(q: float) -> float | None:
            return round(latencies[min(len(latencies) - 1, int(round(q * (len(latencies) - 1))))], 2) if latencies else None

        return {"count": len(records), "success": success, "errors": len(records) - success,
                "success_rate": round(success / len(records), 4) if records else None,
                "content_errors": sum(content.values()), "content_error_kinds": content, "error_kinds": errors,
                "p50_ms": pct(0.5), "p95_ms": pct(0.95), "p99_ms": pct(0.99)}

    def stats(self, window: float) -> dict[str, Any]:
        cutoff = time.time() - window
        with self.lock:
            records = [r for r in self.records if r[0] >= cutoff]
        out = self.summarize(records)
        kinds: dict[str, list[Any]] = {}
        for r in records:
            kinds.setdefault(r[1], []).append(r)
        out["window_s"] = window
        out["by_endpoint"] = {k: self.summarize(v) for k, v in sorted(kinds.items())}
        return out


# ----------------------------------------------------------------------------- the generator
def route_opener(route: Any) -> tuple[str, urllib.request.OpenerDirector]:
    """(base URL, opener) for a /control ``route`` ({"url", "connect": "host:port", "ca": PEM}): users
    ask the public name, connect to the ingress controller's Service and trust only the app's CA."""
    if not isinstance(route, dict) or set(route) - {"url", "connect", "ca"}:
        raise ValueError('route must be null or an object with "url", "connect" and optionally "ca"')
    url, connect, ca = route.get("url"), str(route.get("connect") or ""), route.get("ca") or ""
    host, _, port = connect.rpartition(":")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")) or not host or not port.isdigit():
        raise ValueError('route.url must be an http(s) URL and route.connect "host:port"')
    context = ssl.create_default_context(cadata=ca) if ca else ssl.create_default_context()
    pin = (host, int(port))

    class Pinned(http.client.HTTPSConnection):
        def connect(self) -> None:  # the public name resolves to the load balancer, as DNS would say
            self.sock = context.wrap_socket(socket.create_connection(pin, self.timeout),  # the context it was made with
                                                  server_hostname=self.host)

    class Handler(urllib.request.HTTPSHandler):
        def https_open(self, req: urllib.request.Request) -> Any:
            return self.do_open(Pinned, req, context=context)

    return url.rstrip("/"), urllib.request.build_opener(Handler())


class LoginRefused(ValueError):
    """An account's login answered 200 with a refusal or another account's id."""


class Generator:
    def __init__(self, target: str, rate: float, timeout_s: float, seed: int | None = None) -> None:
        self.target, self.rate, self.timeout_s = target.rstrip("/"), rate, timeout_s
        self.direct_target = self.target
        self.opener = self.direct_opener = urllib.request.build_opener()
        self.route: dict[str, str] | None = None
        self.log = RequestLog()
        self.rng = random.Random(seed)
        self.unpaid: deque[tuple[str, str, str, float]] = deque(maxlen=200)  # (order, trip, account, price)
        self.booked: deque[tuple[str, str, str, float]] = deque(maxlen=200)  # paid
        #: order → (account, the status it must show, when this generator set it)
        self.recent: dict[str, tuple[str, int, float]] = {}
        self.inflight = threading.Semaphore(int(os.environ.get("WORKLOAD_MAX_INFLIGHT", "24")))
        self.local = threading.local()  # per request: seconds spent waiting on purpose (not latency)
        self.lock = threading.Lock()
        #: account → (its login token, when it logged in: monotonic seconds)
        self.tokens: dict[str, tuple[str, float]] = {}
        self.numbers = {data.account_id(n): n for n in range(1, data.ACCOUNTS + 1)}

    def _http(self, method: str, path: str, body: Any = None, token: str | None = None) -> tuple[int, Any]:
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        req = urllib.request.Request(self.target + path, method=method,
                                     data=None if body is None else json.dumps(body).encode(), headers=headers)
        try:
            with self.opener.open(req, timeout=self.timeout_s) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as exc:
            return exc.code, None

    def one(self, kind: str) -> None:
        started = time.perf_counter()
        self.local.paused = 0.0
        status, error, content = 0, "", ""
        try:
            status, content = self._run(kind)
        except LoginRefused as exc:
            status, content = 200, str(exc)
        except (OSError, ValueError) as exc:
            error = type(exc).__name__ if not isinstance(exc, TimeoutError) else "timeout"
            if "timed out" in str(exc):
                error = "timeout"
        ok = status == 200 and not content and not error
        self.log.add(kind, status, (time.perf_counter() - started - self.local.paused) * 1000, ok, error, content)

    def _login(self, account: str) -> tuple[int, str]:
        """Log ``account`` in and keep its token: (HTTP status, content error or "")."""
        n = self.numbers[account]
        status, code = self._http("GET", "/api/v1/verifycode/generate")
        if status != 200:
            return status, ""
        status, body = self._http("POST", "/api/v1/users/login", {
            "username": data.username(n), "password": data.PASSWORD,
            "verificationCodeId": code["data"]["id"], "verificationCode": code["data"]["code"]})
        if status != 200:
            return status, ""
        if body.get("status") != 1 or body["data"]["userId"] != account or not body["data"].get("token"):
            return status, "login: wrong account or refused"
        with self.lock:
            self.tokens[account] = (body["data"]["token"], time.monotonic())
        return status, ""

    def _authed(self, method: str, path: str, account: str, body: Any = None) -> tuple[int, Any]:
        """A request that needs ``account``'s login: log in first when its token is missing or old;
        a refused token (401/403) is dropped, so the next request logs in again."""
        with self.lock:
            held = self.tokens.get(account)
        if held is None or time.monotonic() - held[1] > TOKEN_REFRESH_S:
            status, wrong = self._login(account)
            if wrong:  # the login answered, wrongly: the request fails as a wrong answer would
                raise LoginRefused(wrong)
            if status != 200:
                return status, None
            with self.lock:
                held = self.tokens[account]
        status, answer = self._http(method, path, body, token=held[0])
        if status in (401, 403):
            with self.lock:
                if self.tokens.get(account) == held:
                    del self.tokens[account]
        return status, answer

    def _orders_of_someone(self, rng: random.Random) -> int:
        method, path = request_for("orders", rng)
        return self._authed(method, path, query_of(path)["loginId"])[0]

    def _run(self, kind: str) -> tuple[int, str]:
        """(HTTP status, content error or "") of one request of ``kind``."""
        rng = self.rng
        n = rng.randrange(1, data.ACCOUNTS + 1)
        account = data.account_id(n)
        if kind == "login":
            return self._login(account)
        if kind in ("search", "search-other"):
            method, path = request_for(kind, rng)
            status, body = self._http(method, path)
            if status != 200:
                return status, ""
            params = query_of(path)
            start, end = params["startPlace"], params["endPlace"]
            return status, check_search(body, start, end, kind == "search")
        if kind == "book":
            method, path = request_for("book", rng)
            params = query_of(path)
            status, body = self._authed(method, path, params["accountId"])
            if status != 200:
                return status, ""
            if body.get("status") != 1:
                return status, f"book refused: {body.get('msg')}"
            expected = data.price(params["tripId"], params["from"], params["to"], data.ECONOMY)
            if abs(float(body["data"]["price"]) - expected) > 0.01:
                return status, "book: wrong price"
            with self.lock:
                self.unpaid.append((body["data"]["orderId"], params["tripId"], params["accountId"], expected))
            return status, ""
        if kind == "pay":
            with self.lock:
                item = self.unpaid.popleft() if self.unpaid else None
            if item is None:
                return self._orders_of_someone(rng), ""
            order, trip, owner, _price = item
            status, body = self._authed("POST", "/api/v1/inside_pay_service/inside_payment", owner,
                                        {"orderId": order, "tripId": trip, "userId": owner})
            if status == 200 and body.get("status") == 1:
                with self.lock:
                    self.booked.append(item)
                    self.recent[order] = (owner, data.PAID, time.time())
            return status, "" if status != 200 or body.get("status") == 1 else f"pay refused: {body.get('msg')}"
        if kind == "cancel":
            return self._cancel(rng)
        if kind == "orders":
            return self._orders(account)
        status, body = self._http(*request_for(kind, rng))
        return status, "" if status != 200 or body.get("status") == 1 else "home: bad answer"

    def _cancel(self, rng: random.Random) -> tuple[int, str]:
        """Cancel the most recently paid order (a user changing their mind), else an unpaid one; the
        refund must be the paid share, and the order read back must be cancelled."""
        with self.lock:
            item, paid = (self.booked.pop(), True) if self.booked else \
                ((self.unpaid.popleft(), False) if self.unpaid else (None, False))
            if item is not None:
                self.recent.pop(item[0], None)  # in flight: not checked by an order list meanwhile
        if item is None:
            return self._orders_of_someone(rng), ""
        order, trip, owner, price = item
        status, body = self._authed("GET", f"/api/v1/cancelservice/cancel/{order}/{owner}?tripId={trip}", owner)
        if status != 200:
            return status, ""
        if body.get("status") != 1:
            return status, f"cancel refused: {body.get('msg')}"
        with self.lock:
            self.recent[order] = (owner, data.CANCELLED, time.time())
        expected = data.refund(price, data.PAID if paid else data.NOT_PAID)
        if abs(float((body.get("data") or {}).get("refund", -1)) - expected) > 0.01:
            return status, "cancel: wrong refund"
        time.sleep(READ_BACK_S)
        self.local.paused += READ_BACK_S
        status, body = self._http("GET", f"/api/v1/orderservice/order/{order}")
        if status == 200 and (body.get("data") or {}).get("status") != data.CANCELLED:
            return status, "cancel: order not cancelled"
        return status, ""

    def _orders(self, account: str) -> tuple[int, str]:
        """The order list of the account whose order this generator paid or cancelled a few seconds
        ago (else of ``account``): the account's orders only, and those orders in that state."""
        now = time.time()
        with self.lock:
            for order, (_owner, _status, when) in list(self.recent.items()):
                if now - when > VERIFY_WITHIN_S:
                    del self.recent[order]
            due = [(when, owner) for owner, _s, when in self.recent.values() if now - when >= VERIFY_AFTER_S]
            account = max(due)[1] if due else account
            expect = {o: entry for o, entry in self.recent.items() if entry[0] == account and now - entry[2] >= VERIFY_AFTER_S}
        status, body = self._authed("POST", "/api/v1/orderservice/order/refresh", account, {"loginId": account})
        if status != 200:
            return status, ""
        if body.get("status") != 1 or any(o["accountId"] != account for o in body["data"]):
            return status, "orders: another account's orders"
        shown = {o["id"]: o["status"] for o in body["data"]}
        with self.lock:  # an order this generator started to change meanwhile proves nothing
            wanted_status = {o: entry[1] for o, entry in expect.items() if self.recent.get(o) == entry}
        for order, wanted in wanted_status.items():
            if order in shown and shown[order] != wanted:
                return status, "orders: a cancelled order is not cancelled" if wanted == data.CANCELLED else \
                    "orders: a paid order is not paid"
        return status, ""

    def run(self, stop: threading.Event) -> None:
        """Send requests at Poisson arrival times on the clock: each arrival is due an exponential gap
        after the previous one was *due*, not after the loop got round to it, so the time it takes
        to start a request (a starved CPU, a slow thread start) does not lower the rate. An arrival
        more than MAX_LAG_S late is dropped (a stalled process does not send a burst)."""
        kinds, weights = list(MIX), list(MIX.values())
        due = time.monotonic()
        while not stop.is_set():
            rate = self.rate
            if rate <= 0:
                stop.wait(0.5)
                due = time.monotonic()
                continue
            due = max(due + self.rng.expovariate(rate), time.monotonic() - MAX_LAG_S)
            if stop.wait(max(0.0, due - time.monotonic())):
                break
            self.dispatch(self.rng.choices(kinds, weights)[0])

    def dispatch(self, kind: str) -> None:
        """Start one request of ``kind`` on its own thread (logged as overload past the in-flight cap)."""
        if not self.inflight.acquire(blocking=False):
            self.log.add(kind, 0, 0.0, False, "overload")
            return

        def work() -> None:
            try:
                self.one(kind)
            finally:
                self.inflight.release()

        threading.Thread(target=work, daemon=True).start()


def check_search(body: Any, start: str, end: str, high_speed: bool) -> str:
    """"" when a search answer lists exactly the seeded trips with the seeded prices, else what is wrong."""
    if not isinstance(body, dict) or body.get("status") != 1:
        return "search: refused"
    trips = {t["tripId"]: t for t in body["data"]}
    expected = data.expected_trips(start, end, high_speed)
    if sorted(trips) != expected:
        return "search: wrong trips"
    for trip_id, trip in trips.items():
        if abs(trip["priceForEconomyClass"] - data.price(trip_id, start, end, data.ECONOMY)) > 0.01 or \
                abs(trip["priceForConfortClass"] - data.price(trip_id, start, end, data.FIRST)) > 0.01:
            return "search: wrong price"
    return ""


def main(argv: list[str]) -> int:
    runtime.configure_logs("load-generator")
    target = os.environ.get("WORKLOAD_TARGET", "http://ts-ui-dashboard.train-ticket.svc.cluster.local:8080")
    gen = Generator(target, float(os.environ.get("WORKLOAD_RATE", "2")), float(os.environ.get("WORKLOAD_TIMEOUT_S", "8")))
    stop = threading.Event()

    def control(request: runtime.Request) -> Any:
        if request["method"] == "POST":
            body = request["body"] or {}
            rate = float(body.get("rate", gen.rate))
            if not 0 <= rate <= 50:
                raise ValueError("rate must be between 0 and 50 requests per second")
            if "route" in body:  # users through an Ingress (sregym_appkit's /control route), or back
                if body["route"] is None:
                    gen.target, gen.opener, gen.route = gen.direct_target, gen.direct_opener, None
                else:
                    gen.target, gen.opener = route_opener(body["route"])
                    gen.route = {"url": body["route"]["url"], "connect": body["route"]["connect"]}
            gen.rate = rate
        return {"rate": gen.rate, "target": gen.target, "route": gen.route}

    server = runtime.HttpServer("load-generator", int(os.environ.get("WORKLOAD_PORT", "8089")), [
        ("GET", "/stats", lambda r: gen.log.stats(float(r["query"].get("window", "30")))),
        ("GET", "/control", control), ("POST", "/control", control),
        ("GET", "/healthz", lambda _r: {"status": "ok"})], traced=False)
    server.start()
    runtime.info("workload_started", target=target, rate=gen.rate)
    import signal
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    gen.run(stop)
    server.stop()
    return 0
