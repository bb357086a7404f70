"""The DeathStarBench "mixed workload": search 60 %, recommend 39 %, login 0.5 %, reserve 0.5 %.

Query parameters follow DeathStarBench's wrk2 script, re-centred on this app's hotels. Stay dates run
from April 9 to the end of April so some stays cross into May (the buggy image's edge case).
"""

from __future__ import annotations

import random
from urllib.parse import urlencode

from ..data import CITY_CENTER, N_HOTELS, N_USERS, user_password

MIX = (("search", 0.60), ("recommend", 0.39), ("login", 0.005), ("reserve", 0.005))
ENDPOINTS = tuple(name for name, _ in MIX)


def _point(rng: random.Random) -> tuple[str, str]:
    return (f"{CITY_CENTER[0] + rng.uniform(-0.12, 0.12):.4f}", f"{CITY_CENTER[1] + rng.uniform(-0.12, 0.12):.4f}")


def _stay(rng: random.Random, last_in_day: int) -> tuple[str, str]:
    in_day = rng.randint(9, last_in_day)
    out_day = in_day + rng.randint(1, 5)
    out = f"2015-04-{out_day:02d}" if out_day <= 30 else f"2015-05-{out_day - 30:02d}"
    return f"2015-04-{in_day:02d}", out


def choose(rng: random.Random) -> str:
    x, acc = rng.random(), 0.0
    for name, weight in MIX:
        acc += weight
        if x < acc:
            return name
    return MIX[0][0]


def request_for(endpoint: str, rng: random.Random) -> tuple[str, str]:
    """(HTTP method, path with query) for one request of kind ``endpoint``."""
    if endpoint == "search":
        in_date, out_date = _stay(rng, 30)
        lat, lon = _point(rng)
        return "GET", "/hotels?" + urlencode({"inDate": in_date, "outDate": out_date, "lat": lat, "lon": lon})
    if endpoint == "recommend":
        lat, lon = _point(rng)
        return "GET", "/recommendations?" + urlencode(
            {"require": rng.choice(("dis", "rate", "price")), "lat": lat, "lon": lon})
    user = rng.randrange(N_USERS)
    username, password = f"Cornell_{user}", user_password(user)
    if endpoint == "login":
        return "GET", "/user?" + urlencode({"username": username, "password": password})
    in_date, out_date = _stay(rng, 23)
    lat, lon = _point(rng)
    return "POST", "/reservation?" + urlencode({
        "inDate": in_date, "outDate": out_date, "lat": lat, "lon": lon, "hotelId": str(rng.randint(1, N_HOTELS)),
        "customerName": username, "username": username, "password": password, "number": "1"})
