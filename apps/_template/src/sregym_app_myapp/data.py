"""The seeded data: what the backend stores and the workload generator checks every answer against.

Generated from a fixed seed, so the datastore (seeded by the backend) and the generator (holding it
in memory) agree on every item; an answer that differs from it is wrong content. Replace it with
your app's data, keeping it deterministic.
"""

from __future__ import annotations

import random
from typing import Any

#: the data's version: the backend seeds a datastore that lacks it
DATA_VERSION = "myapp-items-v1"
SIZE = 24
_KINDS = ("lamp", "chair", "table", "shelf", "desk", "stool")


def items() -> list[dict[str, Any]]:
    """Every item: id, name and price in cents."""
    rng = random.Random(20261129)
    return [{"id": 100 + i, "name": f"{_KINDS[i % len(_KINDS)]}-{i + 1:02d}", "price_cents": rng.randrange(500, 50000)}
            for i in range(SIZE)]


BY_ID = {item["id"]: item for item in items()}


def price_label(cents: int) -> str:
    """How the frontend shows a price (the generator checks the label too)."""
    return f"{cents // 100}.{cents % 100:02d} EUR"
