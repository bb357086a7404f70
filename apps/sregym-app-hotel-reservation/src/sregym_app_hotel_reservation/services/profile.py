"""profile: hotel descriptions and addresses, memcached in front of PostgreSQL."""

from __future__ import annotations

from typing import Any

from ..rpc import Handler
from . import Context
from .rate import hotel_ids

_COLUMNS = ("hotel_id, name, phone_number, description, street_number, street_name, city, state, country,"
            " postal_code, lat, lon")


def handlers(ctx: Context) -> dict[str, Handler]:
    store, cache = ctx.store, ctx.cache
    assert store is not None and cache is not None

    def get_profiles(request: dict[str, Any]) -> dict[str, Any]:
        ids = hotel_ids(request)
        found = {k.removeprefix("profile:"): v for k, v in cache.get_many([f"profile:{i}" for i in ids]).items()}
        missing = [i for i in ids if i not in found]
        if missing:
            rows = store.query(f"SELECT {_COLUMNS} FROM hotels WHERE hotel_id = ANY(%s)", (missing,))
            fresh = {
                r[0]: {"id": r[0], "name": r[1], "phoneNumber": r[2], "description": r[3],
                       "address": {"streetNumber": r[4], "streetName": r[5], "city": r[6], "state": r[7],
                                   "country": r[8], "postalCode": r[9], "lat": r[10], "lon": r[11]}}
                for r in rows
            }
            cache.set_many({f"profile:{i}": v for i, v in fresh.items()})
            found.update(fresh)
        return {"hotels": [found[i] for i in ids if i in found]}

    return {"GetProfiles": get_profiles}
