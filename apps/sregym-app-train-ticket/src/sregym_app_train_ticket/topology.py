"""The topology in one place: services, ports, peers, data ownership, API prefixes and flags.

``manifests.py`` renders the Kubernetes objects from it and ``app.py`` the component inventory, so
they cannot drift apart (a test checks the shipped YAML equals the rendering).
"""

from __future__ import annotations

NAMESPACE = "train-ticket"
WORKLOAD_NAMESPACE = "train-ticket-workload"
ADMIN_PORT = 9464
MYSQL_SERVICE, MYSQL_PORT = "ts-mysql", 3306
FLAGD_SERVICE, FLAGD_PORT = "flagd", 8016
GATEWAY = "ts-ui-dashboard"

#: service → (port, peers it calls, its schema in ts-mysql or None, the gateway prefix it serves)
SERVICES: dict[str, tuple[int, tuple[str, ...], str | None, str | None]] = {
    "ts-ui-dashboard": (8080, (), None, None),
    "ts-auth-service": (12340, ("ts-verification-code-service",), "ts_auth", "/api/v1/users"),
    "ts-verification-code-service": (15678, (), None, "/api/v1/verifycode"),
    "ts-user-service": (12342, (), "ts_user", "/api/v1/userservice"),
    "ts-contacts-service": (12347, (), "ts_contacts", "/api/v1/contactservice"),
    "ts-station-service": (12345, (), "ts_station", "/api/v1/stationservice"),
    "ts-train-service": (14567, (), "ts_train", "/api/v1/trainservice"),
    "ts-config-service": (15679, (), "ts_config", "/api/v1/configservice"),
    "ts-route-service": (11178, (), "ts_route", "/api/v1/routeservice"),
    "ts-price-service": (16579, (), "ts_price", "/api/v1/priceservice"),
    "ts-basic-service": (15680, ("ts-station-service", "ts-train-service", "ts-route-service", "ts-price-service"),
                         None, "/api/v1/basicservice"),
    "ts-ticketinfo-service": (15681, ("ts-basic-service",), None, "/api/v1/ticketinfoservice"),
    "ts-order-service": (12031, (), "ts_order", "/api/v1/orderservice"),
    "ts-order-other-service": (12032, (), "ts_order_other", "/api/v1/orderOtherService"),
    "ts-seat-service": (18898, ("ts-order-service", "ts-order-other-service", "ts-config-service"), None,
                        "/api/v1/seatservice"),
    "ts-travel-service": (12346, ("ts-ticketinfo-service", "ts-seat-service", "ts-route-service"), "ts_travel",
                          "/api/v1/travelservice"),
    "ts-travel2-service": (16346, ("ts-ticketinfo-service", "ts-seat-service", "ts-route-service"), "ts_travel2",
                           "/api/v1/travel2service"),
    "ts-security-service": (11188, ("ts-order-service", "ts-order-other-service"), "ts_security",
                            "/api/v1/securityservice"),
    "ts-assurance-service": (18888, (), "ts_assurance", "/api/v1/assuranceservice"),
    "ts-food-service": (18856, (), "ts_food", "/api/v1/foodservice"),
    "ts-consign-service": (16111, (), "ts_consign", "/api/v1/consignservice"),
    "ts-notification-service": (17853, (), None, "/api/v1/notifyservice"),
    "ts-preserve-service": (14568, ("ts-security-service", "ts-contacts-service", "ts-travel-service",
                                    "ts-travel2-service", "ts-seat-service", "ts-order-service",
                                    "ts-order-other-service", "ts-assurance-service", "ts-food-service",
                                    "ts-consign-service", "ts-user-service", "ts-notification-service"),
                            None, "/api/v1/preserveservice"),
    "ts-payment-service": (19001, (), "ts_payment", "/api/v1/paymentservice"),
    "ts-inside-payment-service": (18673, ("ts-order-service", "ts-order-other-service", "ts-payment-service"),
                                  "ts_inside_payment", "/api/v1/inside_pay_service"),
    "ts-cancel-service": (18885, ("ts-order-service", "ts-order-other-service", "ts-inside-payment-service",
                                  "ts-notification-service"), None, "/api/v1/cancelservice"),
    FLAGD_SERVICE: (FLAGD_PORT, (), None, None),
}
#: the gateway's routing table: API prefix → service
ROUTES = {prefix: name for name, (_p, _peers, _s, prefix) in SERVICES.items() if prefix}
#: the gateway calls every service that has a prefix
GATEWAY_PEERS = tuple(sorted(ROUTES.values()))
#: trains whose trip ids start with G or D are high-speed: travel and order; the rest travel2 and order-other
HIGH_SPEED = ("G", "D")


def peers(service: str) -> tuple[str, ...]:
    return GATEWAY_PEERS if service == GATEWAY else SERVICES[service][1]


def schema_of(service: str) -> str | None:
    return SERVICES[service][2]


def db_services() -> list[str]:
    return [name for name, (_p, _peers, schema, _r) in SERVICES.items() if schema]


#: the flags: name → (the service that evaluates it, whether its "on" variant takes a faulty code
#: path, what it says). tt-feat-N guards the replication of fault FN of the TrainTicket
#: fault-analysis study (F1-F22) where this topology expresses it (README, "Replicated faults");
#: the others are decoys, as upstream switches decoy flags on beside the faulty one: decoys are
#: evaluated on real requests as well, but change nothing.
FLAGS: dict[str, tuple[str, bool, str]] = {
    "tt-feat-1": ("ts-cancel-service", True,
                  "refund sent asynchronously during cancellation (F1: asynchronous message delivery lacks sequence control)"),
    "tt-feat-2": ("ts-travel-service", True,
                  "trip details of a search fetched in parallel (F2: requests for one report returned in an unexpected order)"),
    "tt-feat-5": ("ts-travel-service", True,
                  "trip details collected by asynchronous tasks on a shared thread pool (F5: one load times another out)"),
    "tt-feat-6": ("ts-travel2-service", True,
                  "route prefetch retried recursively on failure (F6: endless recursive requests after SQL errors)"),
    "tt-feat-7": ("ts-payment-service", True,
                  "synchronous settlement with the bank (F7: a slow third-party service times its callers out)"),
    "tt-feat-8": ("ts-preserve-service", True,
                  "slim user record passed to the order service (F8: a VIP user's key is missing on delivery)"),
    "tt-feat-10": ("ts-preserve-service", True,
                   "contacts lookup for advance bookings (F10: the wrong API used in a special case)"),
    "tt-feat-11": ("ts-inside-payment-service", True,
                   "order status written after the refund (F11: two services set one value in the wrong sequence)"),
    "tt-feat-12": ("ts-order-service", True,
                   "station locks while the order list is read (F12: a service stuck in a specific status)"),
    "tt-feat-13": ("ts-inside-payment-service", True,
                   "payments applied by a batch queue (F13: requests of one user executed out of order)"),
    "tt-feat-17": ("ts-order-service", True,
                   "sold-ticket query with a nested select (F17: nested SQL select clause error)"),
    "tt-feat-22": ("ts-contacts-service", True,
                   "contacts query by the new column name (F22: SQL column name mismatch)"),
    **{f"tt-feat-{n}": (owner, False, f"TrainTicket feature toggle {n}") for n, owner in (
        (3, "ts-seat-service"), (4, "ts-basic-service"), (9, "ts-security-service"), (14, "ts-user-service"),
        (15, "ts-auth-service"), (16, "ts-assurance-service"), (18, "ts-contacts-service"),
        (19, "ts-ticketinfo-service"), (20, "ts-order-other-service"), (21, "ts-station-service"))},
}
FAULTY_FLAGS = tuple(sorted((name for name, (_o, real, _d) in FLAGS.items() if real),
                            key=lambda n: int(n.rsplit("-", 1)[1])))
DECOY_FLAGS = tuple(sorted((n for n, (_o, real, _d) in FLAGS.items() if not real),
                           key=lambda n: int(n.rsplit("-", 1)[1])))


def flags_of(service: str) -> tuple[str, ...]:
    return tuple(sorted(name for name, (owner, _r, _d) in FLAGS.items() if owner == service))
