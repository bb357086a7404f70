"""rate: room rate plans for hotels, memcached in front of PostgreSQL."""

from __future__ import annotations

from typing import Any

import grpc

from ..rpc import Handler, RpcError
from . import Context


def hotel_ids(request: dict[str, Any]) -> list[str]:
    ids = request.get("hotelIds")
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise RpcError(grpc.StatusCode.INVALID_ARGUMENT, "hotelIds must be a list of strings")
    return ids[:100]


def handlers(ctx: Context) -> dict[str, Handler]:
    store, cache = ctx.store, ctx.cache
    assert store is not None and cache is not None

    def get_rates(request: dict[str, Any]) -> dict[str, Any]:
        ids = hotel_ids(request)
        cached = cache.get_many([f"rate:{i}" for i in ids])
        plans_by_hotel: dict[str, list[dict[str, Any]]] = {i: cached[f"rate:{i}"] for i in ids if f"rate:{i}" in cached}
        missing = [i for i in ids if i not in plans_by_hotel]
        if missing:
            rows = store.query(
                "SELECT hotel_id, code, in_date::text, out_date::text, room_code, currency, bookable_rate::float8,"
                " total_rate::float8, total_rate_inclusive::float8, room_description FROM rate_plans"
                " WHERE hotel_id = ANY(%s)", (missing,))
            fresh: dict[str, list[dict[str, Any]]] = {i: [] for i in missing}
            for r in rows:
                fresh[r[0]].append({
                    "hotelId": r[0], "code": r[1], "inDate": r[2], "outDate": r[3],
                    "roomType": {"code": r[4], "currency": r[5], "bookableRate": r[6], "totalRate": r[7],
                                 "totalRateInclusive": r[8], "roomDescription": r[9]},
                })
            cache.set_many({f"rate:{i}": v for i, v in fresh.items()})
            plans_by_hotel.update(fresh)
        plans = [p for i in ids for p in plans_by_hotel.get(i, [])]
        plans.sort(key=lambda p: p["roomType"]["totalRate"], reverse=True)
        return {"ratePlans": plans}

    return {"GetRates": get_rates}
