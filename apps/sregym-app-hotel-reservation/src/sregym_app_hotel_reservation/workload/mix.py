"""The mixed workload, after DeathStarBench's: search 55 %, recommend 35 %, login 6 %, reserve 4 %.

Query parameters follow DeathStarBench's wrk2 script, re-centred on this app's hotels. Stay dates run
from April 9 to the end of April so some stays cross into May (the buggy image's edge case).

DeathStarBench sends logins and reservations at 0.5 % each; here they are a tenth of the traffic, and
half the logins use a wrong password, so the user path is checked every few seconds: a broken (or
stubbed) user service shows in the success rate instead of hiding in the noise.
"""

from __future__ import annotations

import random
from urllib.parse import urlencode

from sregym_appkit.workload import choose_weighted

from ..data import CITY_CENTER, N_HOTELS, N_USERS, user_password

MIX = (("search", 0.55), ("recommend", 0.35), ("login", 0.06), ("reserve", 0.04))
ENDPOINTS = tuple(name for name, _ in MIX)


def _point(rng: random.Random) -> tuple[str, str]:
    return (f"{CITY_CENTER[0] + rng.uniform(-0.12, 0.12):.4f}", f"{CITY_CENTER[1] + rng.uniform(-0.12, 0.12):.4f}")


def _stay(rng: random.Random, last_in_day: int) -> tuple[str, str]:
    in_day = rng.randint(9, last_in_day)
    out_day = in_day + rng.randint(1, 5)
    out = f"2015-04-{out_day:02d}" if out_day <= 30 else f"2015-05-{out_day - 30:02d}"
    return f"2015-04-{in_day:02d}", out


def choose(rng: random.Random) -> str:
    return choose_weighted(MIX, rng)


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
        if rng.random() < 0.5:  # a user who mistypes: the frontend must refuse (401)
            password = password[:-1] + ("0" if password[-1] != "0" else "1")
        return "GET", "/user?" + urlencode({"username": username, "password": password})
    in_date, out_date = _stay(rng, 23)
    lat, lon = _point(rng)
    return "POST", "/reservation?" + urlencode({
        "inDate": in_date, "outDate": out_date, "lat": lat, "lon": lon, "hotelId": str(rng.randint(1, N_HOTELS)),
        "customerName": username, "username": username, "password": password, "number": "1"})
