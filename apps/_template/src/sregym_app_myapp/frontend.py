"""The frontend: what users reach (through the Ingress). It asks the backend for every answer.

``GET /`` (an HTML page counting the items), ``GET /api/items/{id}`` (an item with its price as
shown to users). It stays ready while the backend fails: it still answers (with a 502 naming the
backend), and pulling it from rotation would only hide where the fault is.
"""

from __future__ import annotations

import os
from typing import Any

from .data import price_label
from .topology import BACKEND, BACKEND_PORT, FRONTEND
from .web import Peer


def backend_from_env() -> Peer:
    return Peer(FRONTEND, BACKEND, os.environ.get("BACKEND_ADDR", f"{BACKEND}:{BACKEND_PORT}"))


def routes(backend: Peer) -> dict[str, Any]:
    def home(_request: Any, _parts: dict[str, str]) -> Any:
        count = len(backend.get("/items")["items"])
        return f"<html><body><h1>My App</h1><p>{count} items in the catalogue</p></body></html>"

    def item(_request: Any, parts: dict[str, str]) -> Any:
        got = backend.get(f"/items/{parts['id']}")
        return {"id": got["id"], "name": got["name"], "price": price_label(int(got["price_cents"]))}

    return {"GET /": home, "GET /api/items/{id}": item}
