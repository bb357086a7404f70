"""What a correct answer is, for every request the load generator sends.

A status code proves nothing (a stub answering ``200 []`` would pass); these checks compare each
answer with the catalog, rates and prices in :mod:`data`. ``check_*`` return ``None`` for a
correct answer, else a short reason (reported as a content error kind).
"""

from __future__ import annotations

import json
from typing import Any

from . import data


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None


def _price_ok(product: dict[str, Any], code: str) -> bool:
    truth = data.product(str(product.get("id")))
    if truth is None:
        return False
    price = product.get("priceUsd") or {}
    want = data.convert_cents(data.cents_of(truth["priceUsd"]), "USD", code)
    try:
        return price.get("currencyCode") == code and data.cents_of(price) == want
    except (KeyError, TypeError, ValueError):
        return False


def check_home(body: bytes) -> str | None:
    text = body.decode(errors="replace")
    missing = [name for _, name, _, _ in data.PRODUCTS if name not in text]
    return f"home page lacks {len(missing)} products" if missing else None


def check_product(body: bytes, pid: str, code: str) -> str | None:
    p = _json(body)
    if not isinstance(p, dict) or p.get("id") != pid:
        return "wrong product"
    truth = data.product(pid) or {}
    if p.get("name") != truth.get("name"):
        return "wrong product name"
    return None if _price_ok(p, code) else "wrong price"


def check_recommendations(body: bytes, asked: list[str], code: str) -> str | None:
    recs = _json(body)
    if not isinstance(recs, list) or not recs:
        return "no recommendations"
    ids = [r.get("id") for r in recs if isinstance(r, dict)]
    if len(ids) != len(recs) or len(set(ids)) != len(ids) or len(ids) > 5:
        return "malformed recommendations"
    if set(ids) & set(asked):
        return "recommended the product being viewed"
    return None if all(_price_ok(r, code) for r in recs) else "wrong recommendation price"


def check_ads(body: bytes, keys: list[str]) -> str | None:
    ads = _json(body)
    if not isinstance(ads, list) or not ads:
        return "no ads"
    expected = data.ads_for(keys)
    return None if ads == expected else "wrong ads"


def check_cart(body: bytes, user: str, expected: dict[str, int]) -> str | None:
    cart = _json(body)
    if not isinstance(cart, dict) or cart.get("userId") != user:
        return "wrong cart owner"
    got = {i.get("productId"): i.get("quantity") for i in cart.get("items", []) if isinstance(i, dict)}
    return None if got == expected else "wrong cart items"


def check_order(body: bytes, added: dict[str, int], code: str) -> str | None:
    order = _json(body)
    if not isinstance(order, dict) or not order.get("orderId") or not order.get("shippingTrackingId"):
        return "order without id or tracking"
    try:
        lines = {line["item"]["productId"]: (line["item"]["quantity"], data.cents_of(line["cost"]))
                 for line in order["items"]}
        if {k: q for k, (q, _) in lines.items()} != added:
            return "order items differ from the cart"
        unit = {k: data.convert_cents(data.cents_of((data.product(k) or {})["priceUsd"]), "USD", code) for k in added}
        if any(cost != unit[k] * q for k, (q, cost) in lines.items()):
            return "wrong order line cost"
        items = sum(added.values())
        ship = data.convert_cents(items * data.QUOTE_PER_ITEM_CENTS, "USD", code)
        if data.cents_of(order["shippingCost"]) != ship:
            return "wrong shipping cost"
        if data.cents_of(order["total"]) != ship + sum(c for _, c in lines.values()):
            return "wrong order total"
    except (KeyError, TypeError, ValueError):
        return "malformed order"
    return None


def check_order_status(body: bytes, order_id: str) -> str | None:
    """None once the order is confirmed; ``ORDER_PROCESSING`` while it is not (yet)."""
    status = _json(body)
    if not isinstance(status, dict) or status.get("orderId") != order_id:
        return "wrong order status"
    if status.get("status") == "confirmed":
        return None
    return ORDER_PROCESSING if status.get("status") == "processing" else "order not confirmed"


#: what an order page says before fraud-detection has checked the order
ORDER_PROCESSING = "order not confirmed in time"


def check_image(body: bytes, pid: str) -> str | None:
    return None if body == data.image_bytes(pid) else "wrong image bytes"
