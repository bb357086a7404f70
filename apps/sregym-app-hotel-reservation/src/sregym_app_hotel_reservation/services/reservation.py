"""reservation: room availability per night and bookings, memcached in front of PostgreSQL.

The ``buggy`` build variant (image ``sregym/hotel-reservation:1.0-buggy``) walks the nights of a stay
by incrementing the day of the month instead of adding a timedelta, so any stay that crosses a month
boundary raises ``ValueError: day is out of range for month``. Searches for stays at the end of April
hit it, so the defect is dormant on most requests and real on some.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import grpc

from ..rpc import Handler, RpcError
from . import Context
from .rate import hotel_ids

MAX_NIGHTS = 31


def parse_date(value: Any, name: str) -> dt.date:
    try:
        return dt.date.fromisoformat(str(value))
    except ValueError as exc:
        raise RpcError(grpc.StatusCode.INVALID_ARGUMENT, f"{name} must be YYYY-MM-DD, got {value!r}") from exc


def nights(in_date: dt.date, out_date: dt.date) -> list[dt.date]:
    return [in_date + dt.timedelta(days=i) for i in range((out_date - in_date).days)]


def nights_buggy(in_date: dt.date, out_date: dt.date) -> list[dt.date]:
    # The defect shipped in 1.0-buggy: day-of-month arithmetic overflows at the end of the month.
    return [dt.date(in_date.year, in_date.month, in_date.day + i) for i in range((out_date - in_date).days)]


def stay(request: dict[str, Any]) -> tuple[dt.date, dt.date]:
    in_date, out_date = parse_date(request.get("inDate"), "inDate"), parse_date(request.get("outDate"), "outDate")
    if out_date <= in_date:
        raise RpcError(grpc.StatusCode.INVALID_ARGUMENT, "outDate must be after inDate")
    if (out_date - in_date).days > MAX_NIGHTS:
        raise RpcError(grpc.StatusCode.INVALID_ARGUMENT, f"stays are limited to {MAX_NIGHTS} nights")
    return in_date, out_date


def handlers(ctx: Context) -> dict[str, Handler]:
    store, cache = ctx.store, ctx.cache
    assert store is not None and cache is not None
    walk = nights_buggy if ctx.cfg.variant == "buggy" else nights

    def capacities(ids: list[str]) -> dict[str, int]:
        found = {k.removeprefix("cap:"): int(v) for k, v in cache.get_many([f"cap:{i}" for i in ids]).items()}
        missing = [i for i in ids if i not in found]
        if missing:
            rows = store.query("SELECT hotel_id, capacity FROM hotel_capacity WHERE hotel_id = ANY(%s)", (missing,))
            fresh = {r[0]: int(r[1]) for r in rows}
            cache.set_many({f"cap:{i}": c for i, c in fresh.items()})
            found.update(fresh)
        return found

    def booked(ids: list[str], dates: list[dt.date]) -> dict[tuple[str, dt.date], int]:
        keys = {(h, d): f"res:{h}:{d.isoformat()}" for h in ids for d in dates}
        cached = cache.get_many(list(keys.values()))
        counts = {hd: int(cached[k]) for hd, k in keys.items() if k in cached}
        missing_hotels = sorted({h for (h, d) in keys if (h, d) not in counts})
        if missing_hotels:
            rows = store.query(
                "SELECT h, d::date, coalesce(sum(r.number), 0)::int"
                " FROM unnest(%s::text[]) AS h"
                " CROSS JOIN generate_series(%s::date, %s::date, interval '1 day') AS d"
                " LEFT JOIN reservations r ON r.hotel_id = h AND r.in_date <= d AND r.out_date > d"
                " GROUP BY h, d", (missing_hotels, dates[0], dates[-1]))
            fresh = {(r[0], r[1]): int(r[2]) for r in rows}
            cache.set_many({keys[hd]: n for hd, n in fresh.items() if hd in keys})
            counts.update(fresh)
        return counts

    def available(ids: list[str], in_date: dt.date, out_date: dt.date, rooms: int) -> list[str]:
        dates = walk(in_date, out_date)
        caps = capacities(ids)
        counts = booked(ids, dates)
        return [h for h in ids if h in caps and all(counts.get((h, d), 0) + rooms <= caps[h] for d in dates)]

    def room_number(request: dict[str, Any]) -> int:
        try:
            rooms = int(request.get("roomNumber", 1))
        except (TypeError, ValueError) as exc:
            raise RpcError(grpc.StatusCode.INVALID_ARGUMENT, "roomNumber must be an integer") from exc
        if not 1 <= rooms <= 10:
            raise RpcError(grpc.StatusCode.INVALID_ARGUMENT, "roomNumber must be between 1 and 10")
        return rooms

    def check_availability(request: dict[str, Any]) -> dict[str, Any]:
        in_date, out_date = stay(request)
        return {"hotelIds": available(hotel_ids(request), in_date, out_date, room_number(request))}

    def make_reservation(request: dict[str, Any]) -> dict[str, Any]:
        in_date, out_date = stay(request)
        ids = hotel_ids(request)[:1]
        rooms = room_number(request)
        customer = str(request.get("customerName", ""))[:100]
        if not ids or not customer:
            raise RpcError(grpc.StatusCode.INVALID_ARGUMENT, "hotelIds and customerName are required")
        if not available(ids, in_date, out_date, rooms):
            return {"hotelIds": []}
        store.query("INSERT INTO reservations (hotel_id, customer_name, in_date, out_date, number)"
                    " VALUES (%s, %s, %s, %s, %s)", (ids[0], customer, in_date, out_date, rooms),
                    fetch=False, operation="INSERT")
        for d in walk(in_date, out_date):
            cache.delete(f"res:{ids[0]}:{d.isoformat()}")
        return {"hotelIds": ids}

    return {"CheckAvailability": check_availability, "MakeReservation": make_reservation}
