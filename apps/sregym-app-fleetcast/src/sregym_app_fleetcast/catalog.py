"""The seeded satellite catalogue and the orbit arithmetic both the service and the workload use.

The catalogue is generated from a fixed seed, so the service (which reads it back from the
datastore) and the load generator (which holds it in memory) agree on every element; an answer
that differs from it is wrong content, not a matter of taste. Positions come from the mean
elements as a circular orbit (good enough to make every answer checkable, not a propagator).
"""

from __future__ import annotations

import math
import random
from typing import Any

#: the version of the catalogue; the service re-seeds a datastore that lacks it
CATALOG_VERSION = "fleetcast-catalog-v1"
EPOCH = 1_790_000_000  # seconds since 1970 the elements refer to
EARTH_ROTATION_DEG_S = 360.0 / 86164.0905
SIZE = 40
_FAMILIES = ("STARLINE", "GEOWATCH", "POLARIS-EO", "ORBCOMMX", "TIDEWATCH", "SKYRELAY", "NAVSTARX", "AURORA")


def satellites() -> list[dict[str, Any]]:
    """Every satellite: NORAD id, name, operator family and mean orbital elements."""
    rng = random.Random(20261129)
    out = []
    for i in range(SIZE):
        family = _FAMILIES[i % len(_FAMILIES)]
        out.append({
            "norad": 47000 + i * 7, "name": f"{family}-{i + 1:02d}", "family": family,
            "inclination": round(rng.uniform(0.1, 98.7), 4), "raan": round(rng.uniform(0, 360), 4),
            "eccentricity": round(rng.uniform(0.0001, 0.002), 6), "arg_perigee": round(rng.uniform(0, 360), 4),
            "mean_anomaly": round(rng.uniform(0, 360), 4), "mean_motion": round(rng.uniform(13.9, 15.6), 6),
            "epoch": EPOCH,
        })
    return out


BY_ID = {s["norad"]: s for s in satellites()}


def position(elements: dict[str, Any], t: float) -> dict[str, float]:
    """Sub-satellite latitude and longitude (degrees) at unix time ``t``, circular-orbit approximation."""
    dt = float(t) - float(elements["epoch"])
    n_deg_s = float(elements["mean_motion"]) * 360.0 / 86400.0
    u = math.radians(float(elements["arg_perigee"]) + float(elements["mean_anomaly"]) + n_deg_s * dt)
    inc = math.radians(float(elements["inclination"]))
    lat = math.degrees(math.asin(math.sin(inc) * math.sin(u)))
    lon = float(elements["raan"]) + math.degrees(math.atan2(math.cos(inc) * math.sin(u), math.cos(u))) \
        - EARTH_ROTATION_DEG_S * dt
    lon = (lon + 180.0) % 360.0 - 180.0
    return {"lat": round(lat, 4), "lon": round(lon, 4)}
