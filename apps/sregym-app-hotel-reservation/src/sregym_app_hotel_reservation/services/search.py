"""search: nearby hotels (geo) that have rate plans (rate)."""

from __future__ import annotations

from typing import Any

from ..rpc import Handler
from . import Context


def handlers(ctx: Context) -> dict[str, Handler]:
    geo, rate = ctx.peer("geo"), ctx.peer("rate")

    def nearby(request: dict[str, Any]) -> dict[str, Any]:
        found = geo.call("Nearby", {"lat": request.get("lat"), "lon": request.get("lon")})
        ids = found.get("hotelIds", [])
        if not ids:
            return {"hotelIds": []}
        rates = rate.call("GetRates", {"hotelIds": ids, "inDate": request.get("inDate"),
                                       "outDate": request.get("outDate")})
        seen: dict[str, None] = {}
        for plan in rates.get("ratePlans", []):
            seen.setdefault(plan["hotelId"], None)
        return {"hotelIds": list(seen)}

    return {"Nearby": nearby}
