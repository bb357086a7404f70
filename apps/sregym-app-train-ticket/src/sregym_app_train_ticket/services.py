"""The TrainTicket services: each ``build_<name>(ctx)`` returns its routes (JSON over HTTP).

Answers use TrainTicket's envelope ``{"status": 1, "msg": ..., "data": ...}``; a business refusal
is ``status 0`` with HTTP 200, a failure (SQL error, a peer down) an HTTP error whose ``msg`` names
the cause. Bodies are JSON; an empty body falls back to the query string, so ``GET``-style calls
(probes, curl) work too. High-speed trips (G/D) go to travel and order, the rest to travel2 and
order-other, as in the original.
"""

from __future__ import annotations

import datetime as dt
import random
import time
import uuid
from collections.abc import Callable
from typing import Any

from . import data, flags, replicated, runtime, tokens
from .db import Database
from .runtime import HttpError, Peer, Request
from .topology import GATEWAY, HIGH_SPEED, ROUTES, SERVICES, flags_of

Routes = list[tuple[str, str, Callable[[Request], Any]]]
#: a booking this many days ahead or more is an advance booking (tt-feat-10's special case)
ADVANCE_BOOKING_DAYS = 14
#: tt-feat-5: how long a task waits for its sub-tasks, and after how long a queued task is dropped
TASK_WAIT_S, TASK_STALE_S = 3.0, 5.0
#: tt-feat-6: how long the recursive route prefetch goes on (under the gateway's 5 s peer timeout)
ROUTE_PREFETCH_S = 4.5


class Ctx:
    """What a service's handlers share: its name, peers, database (if it owns one) and flags."""

    def __init__(self, service: str, peers: dict[str, Peer], db: Database | None) -> None:
        self.service, self.peers, self.db = service, peers, db
        self.flags = flags_of(service)

    @property
    def database(self) -> Database:
        """The service's own database (only a service that owns one has handlers that query it)."""
        if self.db is None:
            raise RuntimeError(f"{self.service} owns no database")
        return self.db

    def call(self, peer: str, method: str, path: str, body: Any = None) -> Any:
        answer = self.peers[peer].call(method, path, body)
        if isinstance(answer, dict) and answer.get("status") == 0:
            raise HttpError(409, f"{peer}: {answer.get('msg')}")
        return answer.get("data") if isinstance(answer, dict) else answer

    def flag(self, key: str) -> bool:
        return flags.enabled(key)

    def decoys(self) -> None:
        """Evaluate this service's decoy flags on a real request, as the faulty ones are: they change nothing."""
        for key in self.flags:
            flags.enabled(key)


def ok(value: Any, msg: str = "Success") -> dict[str, Any]:
    return {"status": 1, "msg": msg, "data": value}


def refuse(msg: str) -> dict[str, Any]:
    return {"status": 0, "msg": msg, "data": None}


def secured(handler: Callable[[Request], Any]) -> Callable[[Request], Any]:
    """A route that needs a login (Spring Security's JWT filter in the original): the request's
    Bearer token is checked against this service's own clock before the handler runs."""
    def guarded(request: Request) -> Any:
        try:
            tokens.check(request.get("authorization"), tokens.secret())
        except tokens.TokenRejected as exc:
            runtime.warning("token_rejected", path=request["path"], status=exc.status, error=exc.message)
            raise HttpError(exc.status, exc.message) from None
        return handler(request)
    return guarded


def arg(request: Request, name: str, default: Any = ...) -> Any:
    for source in (request["params"], request["body"] if isinstance(request["body"], dict) else {}, request["query"]):
        if name in source and source[name] not in (None, ""):
            return source[name]
    if default is ...:
        raise HttpError(400, f"missing parameter {name!r}")
    return default


def order_service(trip: str) -> str:
    return "ts-order-service" if trip.startswith(HIGH_SPEED) else "ts-order-other-service"


def order_prefix(trip: str) -> str:
    return "/api/v1/orderservice/order" if trip.startswith(HIGH_SPEED) else "/api/v1/orderOtherService/orderOther"


def travel_service(trip: str) -> tuple[str, str]:
    return ("ts-travel-service", "/api/v1/travelservice") if trip.startswith(HIGH_SPEED) else \
        ("ts-travel2-service", "/api/v1/travel2service")


# --------------------------------------------------------------------------------- the gateway
def build_ui_dashboard(ctx: Ctx) -> Routes:
    """ts-ui-dashboard: the front door; forwards ``/api/v1/<prefix>/...`` to the owning service."""
    by_length = sorted(ROUTES.items(), key=lambda kv: -len(kv[0]))

    def forward(request: Request) -> Any:
        path = request["path"]
        for prefix, service in by_length:
            if path == prefix or path.startswith(prefix + "/"):
                query = "&".join(f"{k}={v}" for k, v in request["query"].items())
                return ctx.peers[service].call(request["method"], path + (f"?{query}" if query else ""),
                                               request["body"] if request["method"] != "GET" else None)
        raise HttpError(404, f"no service serves {path}")

    def home(_request: Request) -> Any:
        return ok({"app": "TrainTicket", "stations": len(data.STATIONS), "api": sorted(ROUTES)})

    return [("GET", "/", home), ("GET", "/index.html", home),
            *[(m, r"/api/v1/.*", forward) for m in ("GET", "POST", "PUT", "DELETE")]]


# ----------------------------------------------------------------------------- login and users
def build_verification_code(ctx: Ctx) -> Routes:
    codes: dict[str, str] = {}

    def generate(_request: Request) -> Any:
        code_id, code = uuid.uuid4().hex, f"{random.randrange(10000):04d}"
        if len(codes) > 10000:
            codes.clear()
        codes[code_id] = code
        return ok({"id": code_id, "code": code})

    def verify(request: Request) -> Any:
        code_id, code = arg(request, "id"), str(arg(request, "code"))
        return ok(codes.pop(code_id, None) == code)

    return [("GET", "/api/v1/verifycode/generate", generate), ("POST", "/api/v1/verifycode/verify", verify),
            ("GET", r"/api/v1/verifycode/verify/(?P<id>[^/]+)/(?P<code>[^/]+)", verify)]


def build_auth(ctx: Ctx) -> Routes:
    def login(request: Request) -> Any:
        ctx.decoys()
        name, password = arg(request, "username"), arg(request, "password")
        verified = ctx.call("ts-verification-code-service", "POST", "/api/v1/verifycode/verify",
                            {"id": arg(request, "verificationCodeId"), "code": arg(request, "verificationCode")})
        if not verified:
            return refuse("Verification failed.")
        rows = ctx.database.run("SELECT user_id, password FROM auth_user WHERE username=%s", (name,))
        if not rows or rows[0]["password"] != password:
            return refuse("Incorrect username or password.")
        token = tokens.issue(rows[0]["user_id"], name, tokens.secret())
        return ok({"userId": rows[0]["user_id"], "username": name, "token": token}, "login success")

    return [("POST", "/api/v1/users/login", login)]


def build_user(ctx: Ctx) -> Routes:
    def by_id(request: Request) -> Any:
        ctx.decoys()
        rows = ctx.database.run("SELECT user_id, user_name, email, document_type, document_num, vip_key FROM user "
                          "WHERE user_id=%s", (arg(request, "id"),))
        if not rows:
            return refuse("No User")
        r = rows[0]
        return ok({"userId": r["user_id"], "userName": r["user_name"], "email": r["email"],
                   "documentType": r["document_type"], "documentNum": r["document_num"], "vipKey": r["vip_key"]})

    return [("GET", r"/api/v1/userservice/users/id/(?P<id>[^/]+)", by_id)]


def build_contacts(ctx: Ctx) -> Routes:
    def query(where: str, args: tuple[Any, ...]) -> list[dict[str, Any]]:
        # F17-style bug family (tt-feat-22): the flagged code path reads the document number through a
        # column name that does not exist in this schema; MariaDB answers 1054 Unknown column.
        column = "document_num" if ctx.flag("tt-feat-22") else "document_number"
        ctx.decoys()
        rows = ctx.database.run(f"SELECT id, account_id, name, document_type, {column} AS document_number, phone_number "
                          f"FROM contacts WHERE {where}", args)
        return [{"id": r["id"], "accountId": r["account_id"], "name": r["name"], "documentType": r["document_type"],
                 "documentNumber": r["document_number"], "phoneNumber": r["phone_number"]} for r in rows]

    def by_id(request: Request) -> Any:
        rows = query("id=%s", (arg(request, "id"),))
        return ok(rows[0]) if rows else refuse("No contacts according to contacts id")

    def by_account(request: Request) -> Any:
        return ok(query("account_id=%s", (arg(request, "accountId"),)))

    return [("GET", r"/api/v1/contactservice/contacts/account/(?P<accountId>[^/]+)", by_account),
            ("GET", r"/api/v1/contactservice/contacts/(?P<id>[^/]+)", by_id)]


# ----------------------------------------------------------------------- the basic information
def build_station(ctx: Ctx) -> Routes:
    def all_stations(_request: Request) -> Any:
        ctx.decoys()
        return ok([{"id": r["id"], "name": r["name"], "stayTime": r["stay_time"]}
                   for r in ctx.database.run("SELECT id, name, stay_time FROM station ORDER BY id")])

    def id_of(request: Request) -> Any:
        ctx.decoys()
        rows = ctx.database.run("SELECT id FROM station WHERE name=%s OR id=%s", (arg(request, "name"),) * 2)
        return ok(rows[0]["id"]) if rows else refuse("Station not exist")

    def names(request: Request) -> Any:
        ids = list(arg(request, "ids"))
        if not ids:
            return ok({})
        rows = ctx.database.run(f"SELECT id, name FROM station WHERE id IN ({','.join(['%s'] * len(ids))})", ids)
        return ok({r["id"]: r["name"] for r in rows})

    return [("GET", "/api/v1/stationservice/stations", all_stations),
            ("GET", r"/api/v1/stationservice/stations/id/(?P<name>[^/]+)", id_of),
            ("POST", "/api/v1/stationservice/stations/namelist", names)]


def build_train(ctx: Ctx) -> Routes:
    def by_name(request: Request) -> Any:
        ctx.decoys()
        rows = ctx.database.run("SELECT name, economy_class, confort_class, average_speed FROM train_type WHERE name=%s",
                          (arg(request, "name"),))
        if not rows:
            return refuse("no such train type")
        r = rows[0]
        return ok({"name": r["name"], "economyClass": r["economy_class"], "confortClass": r["confort_class"],
                   "averageSpeed": r["average_speed"]})

    return [("GET", r"/api/v1/trainservice/trains/byName/(?P<name>[^/]+)", by_name)]


def build_config(ctx: Ctx) -> Routes:
    def get(request: Request) -> Any:
        rows = ctx.database.run("SELECT name, value FROM config WHERE name=%s", (arg(request, "name"),))
        return ok({"name": rows[0]["name"], "value": rows[0]["value"]}) if rows else refuse("No content")

    return [("GET", r"/api/v1/configservice/configs/(?P<name>[^/]+)", get)]


def route_of(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": row["id"], "stations": row["stations"].split(","),
            "distances": [int(d) for d in row["distances"].split(",")],
            "startStation": row["start_station"], "endStation": row["end_station"]}


def build_route(ctx: Ctx) -> Routes:
    def by_id(request: Request) -> Any:
        ctx.decoys()
        rows = ctx.database.run("SELECT * FROM route WHERE id=%s", (arg(request, "id"),))
        return ok(route_of(rows[0])) if rows else refuse("No content with the routeId")

    def by_ids(request: Request) -> Any:
        # an empty list is not special-cased: MariaDB rejects "IN ()" (1064). No healthy caller sends
        # one; tt-feat-6's route prefetch in ts-travel2-service does.
        ids = list(arg(request, "ids"))
        rows = ctx.database.run(f"SELECT * FROM route WHERE id IN ({','.join(['%s'] * len(ids))})", ids)
        return ok([route_of(r) for r in rows])

    return [("GET", r"/api/v1/routeservice/routes/(?P<id>[^/]+)", by_id),
            ("POST", "/api/v1/routeservice/routes/byIds", by_ids)]


def build_price(ctx: Ctx) -> Routes:
    def get(request: Request) -> Any:
        ctx.decoys()
        rows = ctx.database.run("SELECT basic_price_rate, first_class_price_rate FROM price_config "
                          "WHERE route_id=%s AND train_type=%s", (arg(request, "routeId"), arg(request, "trainType")))
        if not rows:
            return refuse("No price config")
        return ok({"basicPriceRate": rows[0]["basic_price_rate"], "firstClassPriceRate": rows[0]["first_class_price_rate"]})

    return [("GET", r"/api/v1/priceservice/prices/(?P<routeId>[^/]+)/(?P<trainType>[^/]+)", get)]


def build_basic(ctx: Ctx) -> Routes:
    def travel(request: Request) -> Any:
        """Station ids, train type, route and the two prices of one trip between two stations."""
        ctx.decoys()
        trip, start, end = arg(request, "trip"), arg(request, "startPlace"), arg(request, "endPlace")
        start_id = ctx.call("ts-station-service", "GET", f"/api/v1/stationservice/stations/id/{start}")
        end_id = ctx.call("ts-station-service", "GET", f"/api/v1/stationservice/stations/id/{end}")
        train = ctx.call("ts-train-service", "GET", f"/api/v1/trainservice/trains/byName/{trip['trainTypeName']}")
        route = ctx.call("ts-route-service", "GET", f"/api/v1/routeservice/routes/{trip['routeId']}")
        stations = route["stations"]
        if start_id not in stations or end_id not in stations or stations.index(start_id) >= stations.index(end_id):
            return refuse("Start and end station not in this route")
        rate = ctx.call("ts-price-service", "GET",
                        f"/api/v1/priceservice/prices/{trip['routeId']}/{trip['trainTypeName']}")
        distance = route["distances"][stations.index(end_id)] - route["distances"][stations.index(start_id)]
        return ok({"startId": start_id, "endId": end_id, "trainType": train, "route": route,
                   "prices": {"economyClass": round(distance * rate["basicPriceRate"], 2),
                              "confortClass": round(distance * rate["firstClassPriceRate"], 2)}})

    return [("POST", "/api/v1/basicservice/basic/travel", travel)]


def build_ticketinfo(ctx: Ctx) -> Routes:
    def travel(request: Request) -> Any:
        ctx.decoys()
        # basic's answer as it is: "status 0" (the trip does not run that way) is an answer, not a failure
        return ctx.peers["ts-basic-service"].call("POST", "/api/v1/basicservice/basic/travel", request["body"])

    return [("POST", "/api/v1/ticketinfoservice/ticketinfo", travel)]


# ---------------------------------------------------------------------------- orders and seats
def build_order(ctx: Ctx, prefix: str) -> Routes:
    locks = replicated.StationLocks()

    def locking() -> bool:
        return "tt-feat-12" in ctx.flags and ctx.flag("tt-feat-12")

    def row(r: dict[str, Any]) -> dict[str, Any]:
        return {"id": r["id"], "boughtDate": str(r["bought_date"]), "travelDate": str(r["travel_date"]),
                "accountId": r["account_id"], "contactsName": r["contacts_name"], "trainNumber": r["train_number"],
                "coachNumber": r["coach_number"], "seatClass": r["seat_class"], "seatNumber": r["seat_number"],
                "from": r["from_station"], "to": r["to_station"], "status": r["status"], "price": r["price"]}

    def sold(request: Request) -> Any:
        """The seats already sold on one train and day (seat asks before it picks a seat)."""
        ctx.decoys()
        args = (arg(request, "trainNumber"), arg(request, "travelDate"))
        if "tt-feat-17" in ctx.flags and ctx.flag("tt-feat-17"):
            # F17, nested SQL select clause error: the flagged rewrite filters through a nested select
            # whose select clause lists two columns where IN needs one; MariaDB answers 1241.
            sql = ("SELECT seat_number, seat_class, from_station, to_station FROM orders WHERE id IN "
                   "(SELECT id, status FROM orders WHERE train_number=%s AND travel_date=%s) AND status IN (0, 1, 2)")
        else:
            sql = ("SELECT seat_number, seat_class, from_station, to_station FROM orders "
                   "WHERE train_number=%s AND travel_date=%s AND status IN (0, 1, 2)")
        rows = ctx.database.run(sql, args)
        return ok([{"seatNo": r["seat_number"], "seatClass": r["seat_class"], "startStation": r["from_station"],
                    "destStation": r["to_station"]} for r in rows])

    def create(request: Request) -> Any:
        ctx.decoys()
        o = request["body"]
        if o.get("accountType") == "VIP" and not o.get("vipKey"):
            return refuse("VIP order without the member's VIP key")
        order_id = str(uuid.uuid4())
        ctx.database.run("INSERT INTO orders (id, bought_date, travel_date, account_id, contacts_name, document_type, "
                   "contacts_document_number, train_number, coach_number, seat_class, seat_number, from_station, "
                   "to_station, status, price) VALUES (%s, NOW(), %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, 0, %s)",
                   (order_id, o["travelDate"], o["accountId"], o["contactsName"], o["documentType"],
                    o["contactsDocumentNumber"], o["trainNumber"], o["coachNumber"], o["seatClass"], o["seatNumber"],
                    o["from"], o["to"], o["price"]))
        return ok({**o, "id": order_id, "status": 0}, "Add new Order Success")

    def get(request: Request) -> Any:
        rows = ctx.database.run("SELECT * FROM orders WHERE id=%s", (arg(request, "id"),))
        return ok(row(rows[0])) if rows else refuse("Order Not Found")

    def set_status(request: Request) -> Any:
        if locking():
            # F12 (tt-feat-12): no status change on an order between locked stations
            found = ctx.database.run("SELECT from_station, to_station FROM orders WHERE id=%s", (arg(request, "id"),))
            if found and locks.locked(found[0]["from_station"], found[0]["to_station"]):
                return refuse(f"Order between locked stations {found[0]['from_station']} and "
                              f"{found[0]['to_station']}: status change rejected")
        ctx.database.run("UPDATE orders SET status=%s WHERE id=%s", (int(arg(request, "status")), arg(request, "id")))
        return get(request)

    def refresh(request: Request) -> Any:
        ctx.decoys()
        rows = ctx.database.run("SELECT * FROM orders WHERE account_id=%s ORDER BY bought_date DESC LIMIT 20",
                          (arg(request, "loginId"),))
        if locking():
            # F12 (tt-feat-12): the stations of the listed orders are locked while the list is read, so
            # no status change interleaves; the release names each pair the other way round, so the
            # locks stay and every later payment or cancellation between those stations is rejected
            pairs = {(r["from_station"], r["to_station"]) for r in rows}
            locks.lock_pairs(pairs)
            listed = [row(r) for r in rows]
            locks.release(pairs)
            return ok(listed)
        return ok([row(r) for r in rows])

    def security(request: Request) -> Any:
        account, since = arg(request, "accountId"), arg(request, "checkDate")
        rows = ctx.database.run("SELECT SUM(bought_date >= %s) AS recent, SUM(status IN (0, 1)) AS unused "
                          "FROM orders WHERE account_id=%s", (since, account))
        return ok({"orderNumInLastOneHour": int(rows[0]["recent"] or 0), "orderNumOfValidOrder": int(rows[0]["unused"] or 0)})

    return [("POST", f"{prefix}/tickets", sold), ("POST", prefix, create),
            ("POST", f"{prefix}/refresh", secured(refresh)), ("GET", f"{prefix}/security/(?P<checkDate>[^/]+)/(?P<accountId>[^/]+)",
                                                     security),
            ("GET", f"{prefix}/status/(?P<id>[^/]+)/(?P<status>[0-9]+)", set_status),
            ("GET", f"{prefix}/(?P<id>[^/]+)", get)]


def build_seat(ctx: Ctx) -> Routes:
    def _sold(trip: str, date: str) -> list[dict[str, Any]]:
        return ctx.call(order_service(trip), "POST", f"{order_prefix(trip)}/tickets",
                        {"trainNumber": trip, "travelDate": date})

    def _capacity(body: dict[str, Any]) -> int:
        total = int(body["totalNum"])
        stations = body["stations"]
        if body["startStation"] == stations[0] and body["destStation"] == stations[-1]:
            return total
        share = float(ctx.call("ts-config-service", "GET",
                               "/api/v1/configservice/configs/DirectTicketAllocationProportion")["value"])
        return total - int(total * share)  # the share kept for end-to-end passengers is not sold in part

    def left(request: Request) -> Any:
        ctx.decoys()
        body = request["body"]
        sold = [s for s in _sold(body["trainNumber"], body["travelDate"]) if s["seatClass"] == int(body["seatType"])]
        return ok(max(0, min(int(body["totalNum"]), _capacity(body)) - len(sold)))

    def distribute(request: Request) -> Any:
        body = request["body"]
        taken = {s["seatNo"] for s in _sold(body["trainNumber"], body["travelDate"])
                 if s["seatClass"] == int(body["seatType"])}
        free = [n for n in range(1, int(body["totalNum"]) + 1) if f"{n}" not in taken]
        if not free:
            return refuse("no seat left")
        return ok({"seatNo": str(random.choice(free)), "coachNumber": 5, "seatClass": int(body["seatType"])})

    return [("POST", "/api/v1/seatservice/seats/left_tickets", left), ("POST", "/api/v1/seatservice/seats", distribute)]


def build_travel(ctx: Ctx, prefix: str) -> Routes:
    pool = replicated.StarvedPool(workers=2, wait_s=TASK_WAIT_S, stale_s=TASK_STALE_S)  # tt-feat-5's tasks
    route_cache: dict[str, Any] = {}  # tt-feat-6's route prefetch

    def flag(key: str) -> bool:
        return key in ctx.flags and ctx.flag(key)

    def trip_row(r: dict[str, Any]) -> dict[str, Any]:
        return {"tripId": r["id"], "trainTypeName": r["train_type_name"], "routeId": r["route_id"],
                "startTime": r["start_time"], "endTime": r["end_time"]}

    def detail(trip: dict[str, Any], start: str, end: str, date: str,
               gather: Callable[[dict[Any, Callable[[], Any]]], dict[Any, Any]] | None = None) -> dict[str, Any] | None:
        info = ctx.peers["ts-ticketinfo-service"].call("POST", "/api/v1/ticketinfoservice/ticketinfo",
                                                       {"trip": trip, "startPlace": start, "endPlace": end})
        if info.get("status") != 1:
            return None  # the trip does not run that way
        basic = info["data"]

        def left_tickets(seat_class: int, total: int) -> Callable[[], Any]:
            return lambda: ctx.call("ts-seat-service", "POST", "/api/v1/seatservice/seats/left_tickets", {
                "trainNumber": trip["tripId"], "travelDate": date, "seatType": seat_class, "totalNum": total,
                "startStation": basic["startId"], "destStation": basic["endId"], "stations": basic["route"]["stations"]})

        lookups = {data.FIRST: left_tickets(data.FIRST, basic["trainType"]["confortClass"]),
                   data.ECONOMY: left_tickets(data.ECONOMY, basic["trainType"]["economyClass"])}
        seats = gather(lookups) if gather else {k: lookup() for k, lookup in lookups.items()}
        return {**trip, "startStation": basic["startId"], "terminalStation": basic["endId"],
                "economyClass": seats[data.ECONOMY], "confortClass": seats[data.FIRST],
                "totalEconomy": basic["trainType"]["economyClass"], "totalConfort": basic["trainType"]["confortClass"],
                "stations": basic["route"]["stations"],
                "priceForEconomyClass": basic["prices"]["economyClass"],
                "priceForConfortClass": basic["prices"]["confortClass"]}

    def details(trips: list[dict[str, Any]], start: str, end: str, date: str) -> list[dict[str, Any] | None]:
        if flag("tt-feat-5"):
            # F5: one asynchronous task per trip on the shared two-thread pool, each running its seat
            # lookups as sub-tasks on the same pool: two trips fill both threads with tasks waiting for
            # sub-tasks that cannot start, until the wait times out; bookings queue behind them
            tasks = [pool.start(lambda t=t: detail(t, start, end, date, gather=pool.gather)) for t in trips]
            return [pool.result(task) for task in tasks]
        if flag("tt-feat-2"):
            # F2: the trips' details are requested in parallel and the answers are matched to the trips
            # in the order they arrive, not the order they were asked for: a trip can show another
            # trip's prices, seats and stations
            answers = replicated.in_arrival_order([lambda t=t: detail(t, start, end, date) for t in trips])
            return [None if a is None else {**a, **t} for t, a in zip(trips, answers)]
        return [detail(t, start, end, date) for t in trips]

    def prefetch_routes(rows: list[dict[str, Any]], deadline: float, attempt: int = 1) -> None:
        """F6 (tt-feat-6): fetch the routes not cached yet. The missing ids are computed the wrong way
        round (cached minus wanted: an empty list), which ts-route-service's SQL rejects; the failure
        is taken for a stale cache and the prefetch asks again, recursively, until the deadline."""
        wanted = {row["route_id"] for row in rows}
        missing = sorted(set(route_cache) - wanted)
        try:
            for route in ctx.call("ts-route-service", "POST", "/api/v1/routeservice/routes/byIds", {"ids": missing}):
                route_cache[route["id"]] = route
        except HttpError as exc:
            if time.monotonic() >= deadline:
                raise HttpError(500, f"route prefetch failed after {attempt} recursive attempts: {exc.message}") from None
            time.sleep(0.1)
            prefetch_routes(rows, deadline, attempt + 1)

    def left(request: Request) -> Any:
        ctx.decoys()
        start, end, date = arg(request, "startPlace"), arg(request, "endPlace"), arg(request, "departureTime")
        rows = ctx.database.run("SELECT * FROM trip ORDER BY id")
        if flag("tt-feat-6"):
            prefetch_routes(rows, time.monotonic() + ROUTE_PREFETCH_S)
        # the routes first: only trips whose route runs from start to end are priced and seated
        routes = {r["id"]: r["stations"] for r in ctx.call("ts-route-service", "POST", "/api/v1/routeservice/routes/byIds",
                                                           {"ids": sorted({row["route_id"] for row in rows})})}
        known = {s for stations in routes.values() for s in stations}

        def runs(route: str) -> bool:
            if start not in known or end not in known:
                return True  # station names, not ids: basic resolves them
            stations = routes.get(route, [])
            return start in stations and end in stations and stations.index(start) < stations.index(end)

        trips = [trip_row(row) for row in rows if runs(row["route_id"])]
        return ok([found for found in details(trips, start, end, date) if found])

    def one(request: Request) -> Any:
        rows = ctx.database.run("SELECT * FROM trip WHERE id=%s", (arg(request, "tripId"),))
        if not rows:
            return refuse("Trip not found")
        found = details([trip_row(rows[0])], arg(request, "from"), arg(request, "to"), arg(request, "travelDate"))[0]
        return ok(found) if found else refuse("Trip does not run between these stations")

    return [("POST", f"{prefix}/trips/left", left), ("GET", f"{prefix}/trips/left", left),
            ("POST", f"{prefix}/trip_detail", one)]


def build_security(ctx: Ctx) -> Routes:
    def check(request: Request) -> Any:
        ctx.decoys()
        account = arg(request, "accountId")
        limits = {r["name"]: int(r["value"]) for r in ctx.database.run("SELECT name, value FROM security_config")}
        since = (dt.datetime.now() - dt.timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S")
        recent = unused = 0
        for service, prefix in (("ts-order-service", "/api/v1/orderservice/order"),
                                ("ts-order-other-service", "/api/v1/orderOtherService/orderOther")):
            info = ctx.call(service, "GET", f"{prefix}/security/{since.replace(' ', 'T')}/{account}")
            recent += info["orderNumInLastOneHour"]
            unused += info["orderNumOfValidOrder"]
        if recent > limits.get("max_order_1_hour", 100) or unused > limits.get("max_not_use", 200):
            return refuse("Too much order in last one hour or too much valid order")
        return ok(True, "Success.r")

    return [("GET", r"/api/v1/securityservice/securityConfigs/(?P<accountId>[^/]+)", check)]


# ------------------------------------------------------------------ booking extras and payment
def build_simple_insert(ctx: Ctx, prefix: str, table: str, columns: tuple[str, ...]) -> Routes:
    """assurance, food, consign: one row per order; the list by order id."""
    def create(request: Request) -> Any:
        ctx.decoys()
        values = {"id": str(uuid.uuid4()), **{c: request["body"][c] for c in columns}}
        ctx.database.run(f"INSERT INTO {table} ({', '.join(values)}) VALUES ({', '.join(['%s'] * len(values))})",
                   list(values.values()))
        return ok(values)

    def by_order(request: Request) -> Any:
        return ok(ctx.database.run(f"SELECT * FROM {table} WHERE order_id=%s", (arg(request, "orderId"),)))

    return [("POST", prefix, create), ("GET", f"{prefix}/order/(?P<orderId>[^/]+)", by_order)]


def build_notification(ctx: Ctx) -> Routes:
    def send(request: Request) -> Any:
        body = request["body"]
        runtime.info("notification_sent", kind=body.get("kind", "order"), email=body.get("email"),
                     order=body.get("orderId"))
        return ok(True)

    return [("POST", r"/api/v1/notifyservice/notification/(?P<kind>[a-z_]+)", send)]


def build_preserve(ctx: Ctx) -> Routes:
    def preserve(request: Request) -> Any:
        """Book one ticket: the booking path through the whole system (20 services)."""
        ctx.decoys()
        account, contacts_id = arg(request, "accountId"), arg(request, "contactsId")
        trip_id, date = arg(request, "tripId"), arg(request, "date")
        start, end, seat_type = arg(request, "from"), arg(request, "to"), int(arg(request, "seatType", data.ECONOMY))
        ctx.call("ts-security-service", "GET", f"/api/v1/securityservice/securityConfigs/{account}")
        advance = dt.date.fromisoformat(str(date)[:10]) >= dt.date.today() + dt.timedelta(days=ADVANCE_BOOKING_DAYS)
        if advance and ctx.flag("tt-feat-10"):
            # F10: advance bookings look the contact up through the other contacts API (by account),
            # handing it the contacts id: no account has that id, so no contact comes back
            found = ctx.call("ts-contacts-service", "GET", f"/api/v1/contactservice/contacts/account/{contacts_id}")
            if not found:
                return refuse("No contacts according to contacts id")
            contact = found[0]
        else:
            contact = ctx.call("ts-contacts-service", "GET", f"/api/v1/contactservice/contacts/{contacts_id}")
        if contact["accountId"] != account:
            return refuse("Contacts do not belong to this account")
        user = ctx.call("ts-user-service", "GET", f"/api/v1/userservice/users/id/{account}")
        member = {"accountType": "VIP" if user.get("vipKey") else "NORMAL", "vipKey": user.get("vipKey")}
        if ctx.flag("tt-feat-8"):
            # F8: the order request is built from a slim copy of the user that leaves the VIP key out,
            # so a VIP member's order arrives without it and the order service refuses it
            member = {"accountType": member["accountType"]}
        travel, prefix = travel_service(trip_id)
        trip = ctx.call(travel, "POST", f"{prefix}/trip_detail",
                        {"tripId": trip_id, "from": start, "to": end, "travelDate": date})
        left = trip["confortClass"] if seat_type == data.FIRST else trip["economyClass"]
        if left <= 0:
            return refuse("Seat Not Enough")
        seat = ctx.call("ts-seat-service", "POST", "/api/v1/seatservice/seats", {
            "trainNumber": trip_id, "travelDate": date, "seatType": seat_type,
            "totalNum": trip["totalConfort"] if seat_type == data.FIRST else trip["totalEconomy"],
            "startStation": trip["startStation"], "destStation": trip["terminalStation"], "stations": trip["stations"]})
        price = trip["priceForConfortClass"] if seat_type == data.FIRST else trip["priceForEconomyClass"]
        order = ctx.call(order_service(trip_id), "POST", order_prefix(trip_id), {
            "travelDate": date, "accountId": account, "contactsName": contact["name"],
            "documentType": contact["documentType"], "contactsDocumentNumber": contact["documentNumber"],
            "trainNumber": trip_id, "coachNumber": seat["coachNumber"], "seatClass": seat_type,
            "seatNumber": seat["seatNo"], "from": trip["startStation"], "to": trip["terminalStation"], "price": price,
            **member})
        if int(arg(request, "assurance", 0)):
            ctx.call("ts-assurance-service", "POST", "/api/v1/assuranceservice/assurances",
                     {"order_id": order["id"], "type_index": 1, "price": data.ASSURANCE_PRICE})
        food = arg(request, "foodName", "")
        if food:
            ctx.call("ts-food-service", "POST", "/api/v1/foodservice/orders",
                     {"order_id": order["id"], "food_type": 1, "station_name": None, "store_name": None,
                      "food_name": food, "price": data.FOOD.get(food, 10.0)})
        consignee = arg(request, "consigneeName", "")
        if consignee:
            ctx.call("ts-consign-service", "POST", "/api/v1/consignservice/consigns", {
                "order_id": order["id"], "account_id": account, "handle_date": date, "target_date": date,
                "from_place": start, "to_place": end, "consignee": consignee,
                "phone": arg(request, "consigneePhone", ""), "weight": float(arg(request, "consigneeWeight", 1.0)),
                "price": 8.0})
        ctx.call("ts-notification-service", "POST", "/api/v1/notifyservice/notification/preserve_success",
                 {"email": user["email"], "orderId": order["id"], "kind": "preserve_success"})
        return ok({"orderId": order["id"], "price": price, "seatNo": seat["seatNo"], "tripId": trip_id},
                  "Success.")

    return [("POST", "/api/v1/preserveservice/preserve", secured(preserve))]


#: how long tt-feat-7's settlement with the bank keeps a charge open (the bank lies outside the
#: cluster: its latency is modelled); longer than a caller's PEER_TIMEOUT_S (5 s)
BANK_SETTLEMENT_S = 6.0
#: tt-feat-1 / tt-feat-11: delivery delay of an asynchronous message; tt-feat-13: how long a batch fills
ASYNC_DELIVERY_S, PAYMENT_BATCH_S = 0.2, 10.0
#: tt-feat-11 rechecks an order before writing its status only for a refund above this (an unusual one)
RECHECK_REFUND_ABOVE = 350.0


def build_payment(ctx: Ctx) -> Routes:
    """ts-payment-service: the payment gateway (TrainTicket's third-party payment)."""
    def pay(request: Request) -> Any:
        ctx.decoys()
        body = request["body"]
        if ctx.flag("tt-feat-7"):
            # F7: the gateway settles each charge with the bank before answering; settlement takes
            # longer than its callers wait, so every payment times out upstream (and completes here)
            time.sleep(BANK_SETTLEMENT_S)
        ctx.database.run("INSERT INTO payment (id, order_id, user_id, price, paid_at) VALUES (%s, %s, %s, %s, NOW())",
                   (str(uuid.uuid4()), body["orderId"], body["userId"], float(body["price"])))
        return ok(True, "Pay Success")

    return [("POST", "/api/v1/paymentservice/payment", pay)]


def build_inside_payment(ctx: Ctx) -> Routes:
    payments = replicated.BatchQueue("payments", PAYMENT_BATCH_S, lambda: ctx.flag("tt-feat-13"))
    later = replicated.Dispatcher("order-status", ASYNC_DELIVERY_S)

    def charge(order_id: str, trip: str, user: str, price: float) -> None:
        ctx.call("ts-payment-service", "POST", "/api/v1/paymentservice/payment",
                 {"orderId": order_id, "userId": user, "price": price})
        ctx.database.run("UPDATE money SET money = money - %s WHERE user_id=%s", (price, user))
        ctx.database.run("INSERT INTO inside_payment (id, order_id, user_id, price, type) VALUES (%s, %s, %s, %s, 'P')",
                   (str(uuid.uuid4()), order_id, user, price))
        ctx.call(order_service(trip), "GET", f"{order_prefix(trip)}/status/{order_id}/{data.PAID}")

    def pay(request: Request) -> Any:
        ctx.decoys()
        order_id, trip, user = arg(request, "orderId"), arg(request, "tripId"), arg(request, "userId")
        order = ctx.call(order_service(trip), "GET", f"{order_prefix(trip)}/{order_id}")
        if order["status"] != data.NOT_PAID:
            return refuse("Error. Order status Not allowed to Pay.")
        price = float(order["price"])
        balance = ctx.database.run("SELECT money FROM money WHERE user_id=%s", (user,))
        if not balance or balance[0]["money"] < price:
            return refuse("Insufficient Balance")
        if ctx.flag("tt-feat-13"):
            # F13: the payment is queued and applied in a batch, PAYMENT_BATCH_S after the batch's first
            # payment; the user is told it succeeded. A cancellation in between finds the order unpaid (no refund), and the batch
            # then charges the cancelled order and marks it paid.
            payments.put(lambda: charge(order_id, trip, user, price), order=order_id)
            return ok(True, "Payment Success")
        charge(order_id, trip, user, price)
        return ok(True, "Payment Success")

    def mark_cancelling(order_id: str, trip: str, recheck: bool) -> None:
        prefix = order_prefix(trip)
        if recheck and ctx.call(order_service(trip), "GET", f"{prefix}/{order_id}")["status"] == data.CANCELLED:
            return
        ctx.call(order_service(trip), "GET", f"{prefix}/status/{order_id}/{data.CANCELLING}")

    def drawback(request: Request) -> Any:
        """Refund a cancelled order: mark it cancelling, then give the money back (the canceller then
        marks it cancelled)."""
        user, money = arg(request, "userId"), float(arg(request, "money"))
        order_id, trip = arg(request, "orderId", ""), arg(request, "tripId", "")
        deferred = ctx.flag("tt-feat-11")
        if order_id and trip and not deferred:
            mark_cancelling(order_id, trip, recheck=False)
        ctx.database.run("UPDATE money SET money = money + %s WHERE user_id=%s", (money, user))
        ctx.database.run("INSERT INTO inside_payment (id, order_id, user_id, price, type) VALUES (%s, %s, %s, %s, 'D')",
                   (str(uuid.uuid4()), order_id, user, money))
        if order_id and trip and deferred:
            # F11: the status is written after answering, so it lands after the canceller's own write;
            # the recheck that would notice the order is already cancelled runs for unusual refunds only
            later.send(lambda: mark_cancelling(order_id, trip, recheck=money > RECHECK_REFUND_ABOVE), order=order_id)
        return ok(True, "Draw Back Money Success")

    return [("POST", "/api/v1/inside_pay_service/inside_payment", secured(pay)),
            ("POST", "/api/v1/inside_pay_service/inside_payment/drawback", drawback)]


def build_cancel(ctx: Ctx) -> Routes:
    messages = replicated.Dispatcher("drawback", ASYNC_DELIVERY_S)

    def cancel(request: Request) -> Any:
        """Cancel an order: refund a paid one through inside-payment (which marks it cancelling),
        then mark it cancelled."""
        ctx.decoys()
        order_id, login = arg(request, "orderId"), arg(request, "loginId")
        trip = arg(request, "tripId", "G")  # which order service holds it (G/D: order)
        service, prefix = order_service(trip), order_prefix(trip)
        order = ctx.call(service, "GET", f"{prefix}/{order_id}")
        if order["accountId"] != login:
            return refuse("Order does not belong to this account")
        if order["status"] not in (data.NOT_PAID, data.PAID, data.COLLECTED):
            return refuse("Order Status Cancel Not Permitted")
        refund = data.refund(order["price"], order["status"])
        if refund:
            def draw_back() -> Any:
                return ctx.call("ts-inside-payment-service", "POST", "/api/v1/inside_pay_service/inside_payment/drawback",
                                {"userId": login, "money": refund, "orderId": order_id, "tripId": trip})

            if ctx.flag("tt-feat-1"):
                # F1: the refund is sent as an asynchronous message with no sequence control; the
                # status reset below completes first, and the late refund marks the order cancelling
                messages.send(draw_back, order=order_id)
            else:
                draw_back()
        ctx.call(service, "GET", f"{prefix}/status/{order_id}/{data.CANCELLED}")
        ctx.call("ts-notification-service", "POST", "/api/v1/notifyservice/notification/order_cancel_success",
                 {"orderId": order_id, "kind": "order_cancel_success"})
        return ok({"refund": refund}, "Success.")

    return [("GET", r"/api/v1/cancelservice/cancel/(?P<orderId>[^/]+)/(?P<loginId>[^/]+)", secured(cancel)),
            ("POST", "/api/v1/cancelservice/cancel", secured(cancel))]


BUILDERS: dict[str, Callable[[Ctx], Routes]] = {
    GATEWAY: build_ui_dashboard,
    "ts-verification-code-service": build_verification_code,
    "ts-auth-service": build_auth,
    "ts-user-service": build_user,
    "ts-contacts-service": build_contacts,
    "ts-station-service": build_station,
    "ts-train-service": build_train,
    "ts-config-service": build_config,
    "ts-route-service": build_route,
    "ts-price-service": build_price,
    "ts-basic-service": build_basic,
    "ts-ticketinfo-service": build_ticketinfo,
    "ts-order-service": lambda c: build_order(c, "/api/v1/orderservice/order"),
    "ts-order-other-service": lambda c: build_order(c, "/api/v1/orderOtherService/orderOther"),
    "ts-seat-service": build_seat,
    "ts-travel-service": lambda c: build_travel(c, "/api/v1/travelservice"),
    "ts-travel2-service": lambda c: build_travel(c, "/api/v1/travel2service"),
    "ts-security-service": build_security,
    "ts-assurance-service": lambda c: build_simple_insert(c, "/api/v1/assuranceservice/assurances", "assurance",
                                                          ("order_id", "type_index", "price")),
    "ts-food-service": lambda c: build_simple_insert(c, "/api/v1/foodservice/orders", "food_order",
                                                     ("order_id", "food_type", "station_name", "store_name",
                                                      "food_name", "price")),
    "ts-consign-service": lambda c: build_simple_insert(c, "/api/v1/consignservice/consigns", "consign_record",
                                                        ("order_id", "account_id", "handle_date", "target_date",
                                                         "from_place", "to_place", "consignee", "phone", "weight",
                                                         "price")),
    "ts-notification-service": build_notification,
    "ts-preserve-service": build_preserve,
    "ts-payment-service": build_payment,
    "ts-inside-payment-service": build_inside_payment,
    "ts-cancel-service": build_cancel,
}
assert set(BUILDERS) == set(SERVICES) - {"flagd"}, "every service has a builder"
