"""frontend: the shop's HTTP API and home page (the demo's Next.js frontend), behind the edge proxy.

::

    GET  /                                   home page: every product with its price (HTML)
    GET  /api/products?currencyCode=EUR      the catalog, prices converted
    GET  /api/products/{id}?currencyCode=    one product
    GET  /api/recommendations?productIds=a,b&currencyCode=
    GET  /api/data?contextKeys=telescopes    ads
    GET  /api/cart?sessionId=u               the cart
    POST /api/cart                           {"userId", "item": {"productId", "quantity"}}
    POST /api/checkout?currencyCode=EUR      {"userId", "email", "address", "creditCard"} -> the order
    GET  /api/orders/{orderId}               {"orderId", "status"}: processing until fraud-detection
                                             checked it, then confirmed (or review)
    GET  /api/currency                       supported currency codes
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from .backends import PORTS, Ready, addr
from .rpc import GrpcPeer, HttpServer


def build_frontend(env: Mapping[str, str]) -> tuple[Any, Ready]:
    svc = "frontend"
    peers = {name: GrpcPeer(svc, name, addr(env, name))
             for name in ("ad", "cart", "checkout", "currency", "product-catalog", "recommendation")}

    def priced(product: dict[str, Any], code: str) -> dict[str, Any]:
        price = product["priceUsd"]
        if code != "USD":
            price = peers["currency"].call("Convert", {"from": price, "toCode": code})
        return {**product, "priceUsd": price}

    def route(method: str, path: str, query: dict[str, str], body: Any) -> tuple[Any, ...]:
        code = query.get("currencyCode", "USD")
        if (method, path) == ("GET", "/"):
            products = peers["product-catalog"].call("ListProducts")["products"]
            rows = "".join(f"<li data-id=\"{p['id']}\">{html.escape(p['name'])} "
                           f"{p['priceUsd']['units']}.{p['priceUsd']['nanos'] // 10_000_000:02d} USD</li>"
                           for p in products)
            page = f"<!doctype html><html><head><title>OTel Astronomy Shop</title></head><body><ul>{rows}</ul></body></html>"
            return 200, page.encode(), "text/html; charset=utf-8"
        if (method, path) == ("GET", "/api/products"):
            return 200, [priced(p, code) for p in peers["product-catalog"].call("ListProducts")["products"]]
        if method == "GET" and path.startswith("/api/products/"):
            return 200, priced(peers["product-catalog"].call("GetProduct", {"id": path.rsplit("/", 1)[-1]}), code)
        if (method, path) == ("GET", "/api/recommendations"):
            ids = [x for x in query.get("productIds", "").split(",") if x]
            recs = peers["recommendation"].call("ListRecommendations", {"userId": query.get("sessionId", ""),
                                                                         "productIds": ids})["productIds"]
            return 200, [priced(peers["product-catalog"].call("GetProduct", {"id": r}), code) for r in recs]
        if (method, path) == ("GET", "/api/data"):
            keys = [x for x in query.get("contextKeys", "").split(",") if x]
            return 200, peers["ad"].call("GetAds", {"contextKeys": keys})["ads"]
        if (method, path) == ("GET", "/api/cart"):
            return 200, peers["cart"].call("GetCart", {"userId": query.get("sessionId", "")})
        if (method, path) == ("POST", "/api/cart"):
            body = body or {}
            peers["cart"].call("AddItem", {"userId": body.get("userId", ""), "item": body.get("item") or {}})
            return 200, peers["cart"].call("GetCart", {"userId": body.get("userId", "")})
        if (method, path) == ("POST", "/api/checkout"):
            body = dict(body or {})
            body.setdefault("userCurrency", code)
            return 200, peers["checkout"].call("PlaceOrder", body)
        if method == "GET" and path.startswith("/api/orders/"):
            return 200, peers["checkout"].call("GetOrder", {"orderId": path.rsplit("/", 1)[-1]})
        if (method, path) == ("GET", "/api/currency"):
            return 200, peers["currency"].call("GetSupportedCurrencies")["currencyCodes"]
        return 404, {"error": f"no route {method} {path}"}

    return HttpServer(svc, PORTS["frontend"], route), lambda: (True, {})
