"""What a correct answer looks like: every response checked against the seeded data set.

The data are generated deterministically (``data.py``), so the generator knows which hotels exist,
where they are, how they rank, and which users and passwords are valid. A status code alone proves
nothing (a stub answering ``200 {}`` to everything would pass); these checks prove the answer came
from the real services over the real data:

* ``/hotels`` (search): a GeoJSON FeatureCollection of at least one seeded hotel, each among the
  five nearest to the query point within geo's 10 km box, with its seeded name, phone and location
  (availability may drop some of the five, never add others);
* ``/recommendations``: exactly the seeded top five by distance, rating or price;
* ``/user``: a seeded user with the right password logs in (200), a wrong password is refused (401);
* ``/reservation``: a logged-in user gets "Reserve successfully!" or "Failed. Already reserved.".

:func:`check` returns ``None`` for a correct answer, else a short reason (the error kind reported in
the stats window as ``content_error_kinds``).
"""

from __future__ import annotations

import json
import math
from functools import cache
from typing import Any
from urllib.parse import parse_qs, urlsplit

from ..data import hotels

#: geo's search: the nearest MAX_RESULTS hotels within RADIUS_KM (a box, as geo's SQL filters)
MAX_RESULTS = 5
RADIUS_KM = 10.0
KM_PER_DEG_LAT = 111.0
#: recommendation's LIMIT
RECOMMENDATIONS = 5
#: a distance equal to the fifth nearest within this relative margin counts as a tie (float rounding)
_TIE = 1e-9
_COORD = 1e-6


@cache
def _hotels() -> dict[str, dict[str, Any]]:
    return {h["id"]: h for h in hotels()}


def _distance2(h: dict[str, Any], lat: float, lon: float) -> float:
    # the same equirectangular metric geo and recommendation order by
    return (h["lat"] - lat) ** 2 + ((h["lon"] - lon) * math.cos(math.radians(lat))) ** 2


def _nearest(candidates: list[dict[str, Any]], lat: float, lon: float, n: int) -> set[str]:
    """Ids of the ``n`` nearest, plus any hotel tied with the n-th (rounding must not decide)."""
    ranked = sorted(candidates, key=lambda h: _distance2(h, lat, lon))
    if len(ranked) <= n:
        return {h["id"] for h in ranked}
    cutoff = _distance2(ranked[n - 1], lat, lon)
    return {h["id"] for h in ranked if _distance2(h, lat, lon) <= cutoff * (1 + _TIE) + 1e-15}


def search_allowed(lat: float, lon: float) -> set[str]:
    """Hotel ids a correct search at (lat, lon) may return."""
    dlat = RADIUS_KM / KM_PER_DEG_LAT
    dlon = RADIUS_KM / (KM_PER_DEG_LAT * max(0.01, math.cos(math.radians(lat))))
    inside = [h for h in _hotels().values()
              if lat - dlat - _COORD <= h["lat"] <= lat + dlat + _COORD and lon - dlon - _COORD <= h["lon"] <= lon + dlon + _COORD]
    return _nearest(inside, lat, lon, MAX_RESULTS)


@cache
def _ranked(require: str) -> tuple[str, ...]:
    every = list(_hotels().values())
    if require == "rate":
        every.sort(key=lambda h: (-h["rate"], h["id"]))
    else:  # price
        every.sort(key=lambda h: (h["price"], h["id"]))
    return tuple(h["id"] for h in every[:RECOMMENDATIONS])


def recommendations_expected(require: str, lat: float, lon: float) -> set[str]:
    """Hotel ids a correct recommendation returns (for ``dis``: including ties with the fifth)."""
    if require == "dis":
        return _nearest(list(_hotels().values()), lat, lon, RECOMMENDATIONS)
    return set(_ranked(require))


def expected_status(endpoint: str, params: dict[str, str]) -> int:
    """The status a correct frontend answers: 401 for a login with a wrong password, else 200."""
    if endpoint == "login" and not _password_ok(params):
        return 401
    return 200


def _password_ok(params: dict[str, str]) -> bool:
    from ..data import N_USERS, user_password

    name = params.get("username", "")
    number = name.removeprefix("Cornell_")
    return (name.startswith("Cornell_") and number.isdigit() and int(number) < N_USERS
            and params.get("password") == user_password(int(number)))


def query_params(path: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(path).query).items()}


def _features(body: Any) -> list[dict[str, Any]] | str:
    if not isinstance(body, dict) or body.get("type") != "FeatureCollection" or not isinstance(body.get("features"), list):
        return "not a GeoJSON FeatureCollection"
    return body["features"]


def _feature_problem(feature: Any) -> str | None:
    """A feature must be a seeded hotel with its seeded name, phone and coordinates."""
    if not isinstance(feature, dict):
        return "feature is not an object"
    hotel = _hotels().get(str(feature.get("id")))
    if hotel is None:
        return "unknown hotel id"
    props = feature.get("properties") or {}
    if props.get("name") != hotel["name"] or props.get("phone_number") != hotel["phone"]:
        return "hotel name or phone differs from the data"
    coords = (feature.get("geometry") or {}).get("coordinates") or []  # none: IndexError below
    try:
        lon, lat = float(coords[0]), float(coords[1])
    except (TypeError, ValueError, IndexError, KeyError):
        return "hotel without coordinates"
    if abs(lon - hotel["lon"]) > _COORD or abs(lat - hotel["lat"]) > _COORD:
        return "hotel coordinates differ from the data"
    return None


def check(endpoint: str, path: str, status: int, raw: bytes) -> str | None:
    """``None`` when the answer to ``path`` is what the seeded data say; else why not.

    Only called for answers whose status is the expected one (or a 2xx where a refusal was due).
    """
    params = query_params(path)
    want = expected_status(endpoint, params)
    if status != want:
        return "login with a wrong password accepted" if want == 401 else f"status {status} instead of {want}"
    try:
        body = json.loads(raw) if raw else None
    except ValueError:
        return "answer is not JSON"
    if endpoint in ("search", "recommend"):
        features = _features(body)
        if isinstance(features, str):
            return features
        for feature in features:
            problem = _feature_problem(feature)
            if problem:
                return problem
        ids = [str(f.get("id")) for f in features]
        if len(set(ids)) != len(ids):
            return "duplicate hotels"
        try:
            lat, lon = float(params["lat"]), float(params["lon"])
        except (KeyError, ValueError):
            return None  # not a request this generator sends
        if endpoint == "search":
            if not ids:
                return "search found no hotel"
            if not set(ids) <= search_allowed(lat, lon):
                return "search returned hotels that are not the nearest"
            return None
        expected = recommendations_expected(params.get("require", ""), lat, lon)
        if len(ids) != min(RECOMMENDATIONS, len(expected)) or not set(ids) <= expected:
            return f"wrong recommendations for require={params.get('require')}"
        return None
    message = body.get("message") if isinstance(body, dict) else None
    if endpoint == "login":
        if want == 200 and message != "Login successfully!":
            return "login answer without success message"
        if want == 401 and not str(message or "").startswith("Login failed"):
            return "refusal without failure message"
        return None
    if endpoint == "reserve":
        if message not in ("Reserve successfully!", "Failed. Already reserved."):
            return "reservation answer without an outcome"
        return None
    return None
