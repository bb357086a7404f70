"""geo: the hotels nearest to a point (DeathStarBench returns up to 5 within 10 km)."""

from __future__ import annotations

import math
from typing import Any

import grpc

from ..rpc import Handler, RpcError
from . import Context

MAX_RESULTS = 5
RADIUS_KM = 10.0
KM_PER_DEG_LAT = 111.0


def point(request: dict[str, Any]) -> tuple[float, float]:
    try:
        lat, lon = float(request["lat"]), float(request["lon"])
    except (KeyError, TypeError, ValueError) as exc:
        raise RpcError(grpc.StatusCode.INVALID_ARGUMENT, "lat and lon must be numbers") from exc
    if not (-90 <= lat <= 90 and -180 <= lon <= 180):
        raise RpcError(grpc.StatusCode.INVALID_ARGUMENT, f"point ({lat}, {lon}) is off the globe")
    return lat, lon


def handlers(ctx: Context) -> dict[str, Handler]:
    store = ctx.store
    assert store is not None

    def nearby(request: dict[str, Any]) -> dict[str, Any]:
        lat, lon = point(request)
        # Bounding box in SQL, exact distance in the ORDER BY (equirectangular is plenty at city scale).
        dlat = RADIUS_KM / KM_PER_DEG_LAT
        dlon = RADIUS_KM / (KM_PER_DEG_LAT * max(0.01, math.cos(math.radians(lat))))
        rows = store.query(
            "SELECT hotel_id FROM geo WHERE lat BETWEEN %s AND %s AND lon BETWEEN %s AND %s"
            " ORDER BY (lat - %s) ^ 2 + ((lon - %s) * cos(radians(%s))) ^ 2 LIMIT %s",
            (lat - dlat, lat + dlat, lon - dlon, lon + dlon, lat, lon, lat, MAX_RESULTS),
        )
        return {"hotelIds": [r[0] for r in rows]}

    return {"Nearby": nearby}
