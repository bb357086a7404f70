"""The workload generator: users opening the home page and looking at items, every answer checked
against the seeded data (:mod:`data`). A 200 with the wrong count, name or price is a content
error, so a stub that answers 200 to everything fails the functional SLO.

``request_for`` is the request mix as a pure function: the generator and the live fault contracts
(``sregym_core.testing.live.load_request_for("sregym_app_myapp.workload")``) send the same requests.
"""

from __future__ import annotations

import json
import random
from typing import Any

from sregym_appkit import workload
from sregym_appkit.workload import Outcome, parse_settings

from .data import BY_ID, DATA_VERSION, SIZE, price_label
from .topology import FRONTEND, FRONTEND_PORT, NAMESPACE

MIX = (("home", 0.3), ("item", 0.7))
ENDPOINTS = tuple(kind for kind, _ in MIX)
IDS = sorted(BY_ID)


def request_for(kind: str, rng: random.Random) -> tuple[str, str]:
    """(HTTP method, path) of one request of ``kind``."""
    if kind == "home":
        return "GET", "/"
    return "GET", f"/api/items/{rng.choice(IDS)}"


def check(kind: str, path: str, body: bytes) -> str:
    """What is wrong with a 200's ``body`` (a content-error kind), or ``""``."""
    if kind == "home":
        return "" if f"{SIZE} items in the catalogue".encode() in body else "home_wrong_count"
    try:
        got = json.loads(body)
    except ValueError:
        return "item_not_json"
    want = BY_ID[int(path.rsplit("/", 1)[1])]
    if not isinstance(got, dict) or got.get("name") != want["name"]:
        return "item_wrong_name"
    return "" if got.get("price") == price_label(want["price_cents"]) else "item_wrong_price"


class CatalogueGenerator(workload.Generator):
    endpoints = ENDPOINTS
    metrics_prefix = "myapp_"

    def choose(self, rng: random.Random) -> str:
        return workload.choose_weighted(MIX, rng)

    def prepare(self, endpoint: str, rng: random.Random) -> Any:
        return request_for(endpoint, rng)

    async def send(self, endpoint: str, request: Any) -> Outcome:
        method, path = request
        assert self.session is not None
        async with self.session.request(method, self.settings.target + path) as resp:
            body = await resp.read()
        if resp.status != 200:
            return Outcome(resp.status, error=f"HTTP {resp.status}")
        return Outcome(resp.status, wrong=check(endpoint, path, body))


DEFAULT_TARGET = f"http://{FRONTEND}.{NAMESPACE}.svc.cluster.local:{FRONTEND_PORT}"
main = workload.main(lambda argv: CatalogueGenerator(parse_settings(
    argv, description=f"My App's workload generator ({DATA_VERSION})", default_target=DEFAULT_TARGET)))
