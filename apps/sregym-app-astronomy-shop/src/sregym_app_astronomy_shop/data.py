"""The shop's fixed data: the catalog, currency rates, ads, and the money arithmetic every service
and the load generator's content checks share (so a wrong price is caught, not just a wrong status)."""

from __future__ import annotations

import hashlib
from typing import Any

#: id, name, categories, price in USD cents (the demo's ten products; prices are ours)
PRODUCTS: tuple[tuple[str, str, tuple[str, ...], int], ...] = (
    ("OLJCESPC7Z", "National Park Foundation Explorascope", ("telescopes",), 10195),
    ("66VCHSJNUP", "Starsense Explorer Refractor Telescope", ("telescopes",), 34995),
    ("1YMWWN1N4O", "Eclipsmart Travel Refractor Telescope", ("telescopes", "travel"), 12995),
    ("L9ECAV7KIM", "Lens Cleaning Kit", ("accessories",), 2195),
    ("2ZYFJ3GM2N", "Roof Binoculars", ("binoculars",), 20995),
    ("0PUK6V6EV0", "Solar System Color Imager", ("accessories", "telescopes"), 17500),
    ("LS4PSXUNUM", "Red Flashlight", ("accessories", "flashlights"), 5795),
    ("9SIQT8TOJO", "Optical Tube Assembly", ("accessories", "telescopes", "assembly"), 364200),
    ("6E92ZMYYFZ", "Solar Filter", ("accessories", "telescopes"), 6995),
    ("HQTGWGPNH4", "The Comet Book", ("books",), 999),
)
PRODUCT_IDS = tuple(p[0] for p in PRODUCTS)
#: the product productCatalogFailure breaks, as in the demo
FAILING_PRODUCT = "OLJCESPC7Z"

#: units of each currency per US dollar
RATES: dict[str, float] = {"USD": 1.0, "EUR": 0.92, "GBP": 0.79, "JPY": 151.2, "CAD": 1.37, "CHF": 0.88}
#: shipping: quote charges per item, in USD cents
QUOTE_PER_ITEM_CENTS = 890
CATEGORIES = ("telescopes", "binoculars", "accessories", "assembly", "travel", "books", "flashlights")


def product(pid: str) -> dict[str, Any] | None:
    for p in PRODUCTS:
        if p[0] == pid:
            return catalog_entry(p)
    return None


def catalog_entry(p: tuple[str, str, tuple[str, ...], int]) -> dict[str, Any]:
    pid, name, categories, cents = p
    return {"id": pid, "name": name, "description": f"{name}: built for the night sky.",
            "picture": f"{pid}.png", "categories": list(categories), "priceUsd": money("USD", cents)}


def money(currency: str, cents: int) -> dict[str, Any]:
    return {"currencyCode": currency, "units": cents // 100, "nanos": (cents % 100) * 10_000_000}


def cents_of(m: dict[str, Any]) -> int:
    return int(m["units"]) * 100 + round(int(m["nanos"]) / 10_000_000)


def convert_cents(cents: int, source: str, target: str) -> int:
    """``cents`` of ``source`` in ``target`` (rounded to the cent), through USD."""
    if source not in RATES or target not in RATES:
        raise ValueError(f"unsupported currency {source if source not in RATES else target!r}; "
                         f"supported: {', '.join(sorted(RATES))}")
    return round(cents / RATES[source] * RATES[target])


def ads_for(categories: list[str]) -> list[dict[str, str]]:
    """Ads for the context keys (product categories), or two generic ones."""
    out = []
    for pid, name, cats, _ in PRODUCTS:
        if set(cats) & set(categories):
            out.append({"redirectUrl": f"/product/{pid}", "text": f"{name} for sale. Buy one, get the second at half price"})
    if not out:
        out = [{"redirectUrl": f"/product/{pid}", "text": f"{name} for sale. 20% off."} for pid, name, _, _ in PRODUCTS[:2]]
    return out[:2]


def image_bytes(pid: str) -> bytes:
    """A small, valid PNG per product (deterministic, so the load generator can check it)."""
    import struct
    import zlib

    seed = hashlib.sha256(pid.encode()).digest()
    width = height = 16
    rows = b"".join(b"\x00" + bytes(seed[(x + y) % 32] for x in range(width * 3)) for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def luhn_ok(number: str) -> bool:
    digits = [int(c) for c in number if c.isdigit()]
    if len(digits) < 12 or len(digits) != len([c for c in number if not c.isspace() and c != "-"]):
        return False
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2:
            d *= 2
            d -= 9 if d > 9 else 0
        total += d
    return total % 10 == 0
