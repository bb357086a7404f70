"""The seeded data and the SQL that creates each service's schema, user and tables in ts-mysql.

Every service that owns data has its own database (``ts_order``, ``ts_contacts``, ...) and its own
MySQL user with privileges on that database only. The workload generator checks answers against
the same seed (``expected_trips``, ``price``), so a wrong answer is a content error, not a success.
"""

from __future__ import annotations

from .topology import SERVICES

#: station id → (name, stay minutes)
STATIONS = {
    "shanghai": ("Shang Hai", 10), "shanghaihongqiao": ("Shang Hai Hong Qiao", 10), "nanjing": ("Nan Jing", 8),
    "suzhou": ("Su Zhou", 5), "wuxi": ("Wu Xi", 3), "zhenjiang": ("Zhen Jiang", 2), "beijing": ("Bei Jing", 10),
    "shijiazhuang": ("Shi Jia Zhuang", 8), "taiyuan": ("Tai Yuan", 5), "jinan": ("Ji Nan", 5),
    "xuzhou": ("Xu Zhou", 7), "hangzhou": ("Hang Zhou", 9), "jiaxingnan": ("Jia Xing Nan", 2),
}
#: train type → (economy seats, first-class seats, average speed km/h)
TRAIN_TYPES = {"GaoTieOne": (120, 30, 250), "GaoTieTwo": (100, 20, 200), "DongCheOne": (80, 20, 180),
               "ZhiDa": (100, 30, 120), "TeKuai": (100, 30, 120), "KuaiSu": (100, 30, 90)}
#: route id → (stations, distances from the first station in km)
ROUTES = {
    "r1": (("shanghai", "nanjing", "shijiazhuang", "taiyuan"), (0, 350, 1000, 1300)),
    "r2": (("nanjing", "xuzhou", "jinan", "beijing"), (0, 500, 700, 1200)),
    "r3": (("taiyuan", "shijiazhuang", "nanjing", "shanghai"), (0, 300, 950, 1300)),
    "r4": (("shanghai", "suzhou"), (0, 100)),
    "r5": (("shanghai", "wuxi", "zhenjiang", "nanjing"), (0, 128, 210, 300)),
    "r6": (("shanghaihongqiao", "jiaxingnan", "hangzhou"), (0, 80, 170)),
}
#: trip id → (train type, route, departs, arrives); G/D trips live in travel, the rest in travel2
TRIPS = {
    "G1234": ("GaoTieOne", "r1", "09:00", "15:00"), "G1235": ("GaoTieOne", "r1", "12:00", "18:00"),
    "G1236": ("GaoTieTwo", "r5", "07:00", "08:30"), "G1237": ("GaoTieTwo", "r2", "08:00", "13:00"),
    "D1345": ("DongCheOne", "r1", "08:00", "17:00"), "D1346": ("DongCheOne", "r6", "10:00", "11:30"),
    "Z1234": ("ZhiDa", "r1", "06:00", "18:00"), "Z1235": ("ZhiDa", "r2", "07:00", "15:00"),
    "T1235": ("TeKuai", "r3", "08:00", "20:00"), "K1345": ("KuaiSu", "r4", "09:00", "10:30"),
}
#: price rates per km: train type → (economy, first class)
PRICE_RATES = {"GaoTieOne": (0.38, 1.0), "GaoTieTwo": (0.38, 1.0), "DongCheOne": (0.3, 0.8),
               "ZhiDa": (0.2, 0.6), "TeKuai": (0.2, 0.6), "KuaiSu": (0.15, 0.5)}
CONFIGS = {"DirectTicketAllocationProportion": ("0.5", "share of seats sold to passengers riding end to end")}
SECURITY = {"max_order_1_hour": ("100", "orders an account may place per hour"),
            "max_not_use": ("200", "unpaid or unused orders an account may hold")}
ACCOUNTS = 20
#: the first VIP_ACCOUNTS accounts are VIP members: their bookings carry the member's VIP key
VIP_ACCOUNTS = 12
PASSWORD = "111111"
START_MONEY = 1_000_000_000
ASSURANCE_PRICE = 3.0
FOOD = {"Egg Fried Rice": 12.0, "Beef Noodles": 18.0, "Soy Milk": 4.0}
#: seat classes: 2 = first class, 3 = economy (TrainTicket's numbering)
FIRST, ECONOMY = 2, 3


def account_id(n: int) -> str:
    return f"4d2a46c7-71cb-4cf1-b5bb-{n:012d}"


def username(n: int) -> str:
    return f"fdse{n:02d}"


def vip_key(n: int) -> str | None:
    """The VIP member key of account ``n`` (None for an ordinary account)."""
    return f"VIP-{n:04d}-c7e1" if n <= VIP_ACCOUNTS else None


#: order statuses (TrainTicket's numbering; 5 = a cancellation whose refund is under way)
NOT_PAID, PAID, COLLECTED, CANCELLED, CANCELLING = 0, 1, 2, 4, 5
#: share of the price refunded when a paid order is cancelled
REFUND_SHARE = 0.8


def refund(price: float, status: int) -> float:
    """What cancelling an order of ``price`` in ``status`` refunds."""
    return round(float(price) * REFUND_SHARE, 2) if status == PAID else 0.0


def contact_id(n: int) -> str:
    return f"6e5e4a2b-0c39-4c3b-9a6d-{n:012d}"


def service_password(service: str) -> str:
    return f"{service.removeprefix('ts-').removesuffix('-service')}-pass-7f3a"


def segment(route: str, start: str, end: str) -> int | None:
    """Distance from ``start`` to ``end`` on ``route`` (None when the route does not go that way)."""
    stations, distances = ROUTES[route]
    if start not in stations or end not in stations:
        return None
    i, j = stations.index(start), stations.index(end)
    return distances[j] - distances[i] if i < j else None


def price(trip: str, start: str, end: str, seat_class: int) -> float:
    train, route, _dep, _arr = TRIPS[trip]
    distance = segment(route, start, end)
    if distance is None:
        raise ValueError(f"trip {trip} does not run from {start} to {end}")
    economy, first = PRICE_RATES[train]
    return round(distance * (first if seat_class == FIRST else economy), 2)


def expected_trips(start: str, end: str, high_speed: bool) -> list[str]:
    """The trips a search from ``start`` to ``end`` must return, G/D ones or the others."""
    return sorted(t for t, (_tr, route, _d, _a) in TRIPS.items()
                  if t.startswith(("G", "D")) == high_speed and segment(route, start, end) is not None)


def _q(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def _insert(table: str, columns: tuple[str, ...], rows: list[tuple[object, ...]]) -> str:
    values = ",\n  ".join("(" + ", ".join(_q(v) for v in row) + ")" for row in rows)
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES\n  {values};"


TABLES: dict[str, list[str]] = {
    "ts_auth": ["CREATE TABLE auth_user (user_id VARCHAR(64) PRIMARY KEY, username VARCHAR(64) NOT NULL UNIQUE, "
                "password VARCHAR(64) NOT NULL, roles VARCHAR(64) NOT NULL DEFAULT 'ROLE_USER')"],
    "ts_user": ["CREATE TABLE user (user_id VARCHAR(64) PRIMARY KEY, user_name VARCHAR(64) NOT NULL, "
                "email VARCHAR(128) NOT NULL, document_type INT NOT NULL, document_num VARCHAR(64) NOT NULL, "
                "vip_key VARCHAR(64) NULL)"],
    "ts_contacts": ["CREATE TABLE contacts (id VARCHAR(64) PRIMARY KEY, account_id VARCHAR(64) NOT NULL, "
                    "name VARCHAR(64) NOT NULL, document_type INT NOT NULL, document_number VARCHAR(64) NOT NULL, "
                    "phone_number VARCHAR(32) NOT NULL, INDEX (account_id))"],
    "ts_station": ["CREATE TABLE station (id VARCHAR(64) PRIMARY KEY, name VARCHAR(64) NOT NULL UNIQUE, "
                   "stay_time INT NOT NULL)"],
    "ts_train": ["CREATE TABLE train_type (name VARCHAR(64) PRIMARY KEY, economy_class INT NOT NULL, "
                 "confort_class INT NOT NULL, average_speed INT NOT NULL)"],
    "ts_config": ["CREATE TABLE config (name VARCHAR(64) PRIMARY KEY, value VARCHAR(64) NOT NULL, "
                  "description VARCHAR(255) NOT NULL)"],
    "ts_route": ["CREATE TABLE route (id VARCHAR(64) PRIMARY KEY, stations VARCHAR(512) NOT NULL, "
                 "distances VARCHAR(512) NOT NULL, start_station VARCHAR(64) NOT NULL, end_station VARCHAR(64) NOT NULL)"],
    "ts_price": ["CREATE TABLE price_config (id VARCHAR(64) PRIMARY KEY, train_type VARCHAR(64) NOT NULL, "
                 "route_id VARCHAR(64) NOT NULL, basic_price_rate DOUBLE NOT NULL, first_class_price_rate DOUBLE NOT NULL, "
                 "UNIQUE (train_type, route_id))"],
    "ts_security": ["CREATE TABLE security_config (name VARCHAR(64) PRIMARY KEY, value VARCHAR(64) NOT NULL, "
                    "description VARCHAR(255) NOT NULL)"],
    "ts_assurance": ["CREATE TABLE assurance (id VARCHAR(64) PRIMARY KEY, order_id VARCHAR(64) NOT NULL, "
                     "type_index INT NOT NULL, price DOUBLE NOT NULL, INDEX (order_id))"],
    "ts_food": ["CREATE TABLE food_order (id VARCHAR(64) PRIMARY KEY, order_id VARCHAR(64) NOT NULL, "
                "food_type INT NOT NULL, station_name VARCHAR(64), store_name VARCHAR(64), food_name VARCHAR(64) NOT NULL, "
                "price DOUBLE NOT NULL, INDEX (order_id))"],
    "ts_consign": ["CREATE TABLE consign_record (id VARCHAR(64) PRIMARY KEY, order_id VARCHAR(64) NOT NULL, "
                   "account_id VARCHAR(64) NOT NULL, handle_date VARCHAR(32) NOT NULL, target_date VARCHAR(32) NOT NULL, "
                   "from_place VARCHAR(64) NOT NULL, to_place VARCHAR(64) NOT NULL, consignee VARCHAR(64) NOT NULL, "
                   "phone VARCHAR(32) NOT NULL, weight DOUBLE NOT NULL, price DOUBLE NOT NULL, INDEX (order_id))"],
    "ts_payment": ["CREATE TABLE payment (id VARCHAR(64) PRIMARY KEY, order_id VARCHAR(64) NOT NULL, "
                   "user_id VARCHAR(64) NOT NULL, price DOUBLE NOT NULL, paid_at DATETIME NOT NULL, INDEX (order_id))"],
    "ts_inside_payment": [
        "CREATE TABLE inside_payment (id VARCHAR(64) PRIMARY KEY, order_id VARCHAR(64) NOT NULL, "
        "user_id VARCHAR(64) NOT NULL, price DOUBLE NOT NULL, type VARCHAR(16) NOT NULL, INDEX (order_id))",
        "CREATE TABLE money (user_id VARCHAR(64) PRIMARY KEY, money DOUBLE NOT NULL)"],
}
_ORDER_TABLE = ("CREATE TABLE orders (id VARCHAR(64) PRIMARY KEY, bought_date DATETIME NOT NULL, "
                "travel_date DATE NOT NULL, account_id VARCHAR(64) NOT NULL, contacts_name VARCHAR(64) NOT NULL, "
                "document_type INT NOT NULL, contacts_document_number VARCHAR(64) NOT NULL, "
                "train_number VARCHAR(16) NOT NULL, coach_number INT NOT NULL, seat_class INT NOT NULL, "
                "seat_number VARCHAR(16) NOT NULL, from_station VARCHAR(64) NOT NULL, to_station VARCHAR(64) NOT NULL, "
                "status INT NOT NULL, price DOUBLE NOT NULL, INDEX (train_number, travel_date), INDEX (account_id))")
TABLES["ts_order"] = [_ORDER_TABLE]
TABLES["ts_order_other"] = [_ORDER_TABLE]
_TRIP_TABLE = ("CREATE TABLE trip (id VARCHAR(16) PRIMARY KEY, train_type_name VARCHAR(64) NOT NULL, "
               "route_id VARCHAR(64) NOT NULL, start_station VARCHAR(64) NOT NULL, terminal_station VARCHAR(64) NOT NULL, "
               "start_time VARCHAR(8) NOT NULL, end_time VARCHAR(8) NOT NULL)")
TABLES["ts_travel"] = [_TRIP_TABLE]
TABLES["ts_travel2"] = [_TRIP_TABLE]


def seed_rows() -> dict[str, list[str]]:
    accounts = range(1, ACCOUNTS + 1)
    trips: dict[str, list[tuple[object, ...]]] = {"ts_travel": [], "ts_travel2": []}
    for trip, (train, route, dep, arr) in TRIPS.items():
        stations = ROUTES[route][0]
        trips["ts_travel" if trip.startswith(("G", "D")) else "ts_travel2"].append(
            (trip, train, route, stations[0], stations[-1], dep, arr))
    trip_columns = ("id", "train_type_name", "route_id", "start_station", "terminal_station", "start_time", "end_time")
    return {
        "ts_auth": [_insert("auth_user", ("user_id", "username", "password"),
                            [(account_id(n), username(n), PASSWORD) for n in accounts])],
        "ts_user": [_insert("user", ("user_id", "user_name", "email", "document_type", "document_num", "vip_key"),
                            [(account_id(n), username(n), f"{username(n)}@trainticket.example", 1, f"DOC{n:06d}",
                              vip_key(n)) for n in accounts])],
        "ts_contacts": [_insert("contacts", ("id", "account_id", "name", "document_type", "document_number", "phone_number"),
                                [(contact_id(n), account_id(n), f"Contacts_{n:02d}", 1, f"DocumentNumber_{n:02d}",
                                  f"1380000{n:04d}") for n in accounts])],
        "ts_station": [_insert("station", ("id", "name", "stay_time"),
                               [(sid, name, stay) for sid, (name, stay) in STATIONS.items()])],
        "ts_train": [_insert("train_type", ("name", "economy_class", "confort_class", "average_speed"),
                             [(name, *spec) for name, spec in TRAIN_TYPES.items()])],
        "ts_config": [_insert("config", ("name", "value", "description"),
                              [(k, v, d) for k, (v, d) in CONFIGS.items()])],
        "ts_security": [_insert("security_config", ("name", "value", "description"),
                                [(k, v, d) for k, (v, d) in SECURITY.items()])],
        "ts_route": [_insert("route", ("id", "stations", "distances", "start_station", "end_station"),
                             [(rid, ",".join(st), ",".join(map(str, di)), st[0], st[-1])
                              for rid, (st, di) in ROUTES.items()])],
        "ts_price": [_insert("price_config", ("id", "train_type", "route_id", "basic_price_rate", "first_class_price_rate"),
                             [(f"p-{train}-{route}", train, route, *PRICE_RATES[train])
                              for train, route in sorted({(t, r) for t, r, _d, _a in TRIPS.values()})])],
        "ts_travel": [_insert("trip", trip_columns, trips["ts_travel"])],
        "ts_travel2": [_insert("trip", trip_columns, trips["ts_travel2"])],
        "ts_inside_payment": [_insert("money", ("user_id", "money"), [(account_id(n), START_MONEY) for n in accounts])],
    }


def init_sql() -> str:
    """The whole init script: per-service databases, users with grants on their own database, tables, seed."""
    seeds = seed_rows()
    out = ["-- TrainTicket schemas: one database and one user per service that owns data.",
           "SET GLOBAL max_connections = 200;"]
    for service, (_port, _peers, schema, _prefix) in SERVICES.items():
        if not schema:
            continue
        user = service.removeprefix("ts-")
        out += [f"CREATE DATABASE `{schema}`;",
                f"CREATE USER '{user}'@'%' IDENTIFIED BY '{service_password(service)}';",
                f"GRANT SELECT, INSERT, UPDATE, DELETE ON `{schema}`.* TO '{user}'@'%';",
                f"USE `{schema}`;"]
        out += [stmt + ";" for stmt in TABLES[schema]]
        out += seeds.get(schema, [])
    return "\n".join(out) + "\n"
