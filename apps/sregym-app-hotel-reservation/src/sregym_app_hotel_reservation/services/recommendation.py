"""recommendation: hotels by distance, rating or price.

``FEATURE_RECOMMEND_V2`` switches to a "value score" ranking. It carries a dormant defect (the
feature-flag-bug fault): for ``require=price`` it divides by the rating headroom ``5.0 - rate``,
which is zero for five-star hotels, so every price recommendation fails with ZeroDivisionError.
"""

from __future__ import annotations

from typing import Any

import grpc

from ..rpc import Handler, RpcError
from . import Context
from .geo import point

LIMIT = 5


def value_scores(rows: list[tuple[Any, ...]]) -> list[tuple[float, str]]:
    """V2 ranking: price per point of rating headroom (lower is better). Defective on 5.0 ratings."""
    return sorted((float(price) / (5.0 - float(rate)), hotel) for hotel, rate, price in rows)


def handlers(ctx: Context) -> dict[str, Handler]:
    store = ctx.store
    assert store is not None
    v2 = ctx.cfg.features.get("recommend_v2", False)

    def get_recommendations(request: dict[str, Any]) -> dict[str, Any]:
        require = request.get("require")
        lat, lon = point(request)
        if require == "dis":
            rows = store.query("SELECT hotel_id FROM recommendation"
                               " ORDER BY (lat - %s) ^ 2 + ((lon - %s) * cos(radians(%s))) ^ 2 LIMIT %s",
                               (lat, lon, lat, LIMIT))
        elif require == "rate":
            rows = store.query("SELECT hotel_id FROM recommendation ORDER BY rate DESC, hotel_id LIMIT %s", (LIMIT,))
        elif require == "price":
            if v2:
                scored = value_scores(store.query("SELECT hotel_id, rate, price FROM recommendation"))
                return {"hotelIds": [hotel for _, hotel in scored[:LIMIT]]}
            rows = store.query("SELECT hotel_id FROM recommendation ORDER BY price ASC, hotel_id LIMIT %s", (LIMIT,))
        else:
            raise RpcError(grpc.StatusCode.INVALID_ARGUMENT, f"require must be dis, rate or price, not {require!r}")
        return {"hotelIds": [r[0] for r in rows]}

    return {"GetRecommendations": get_recommendations}
