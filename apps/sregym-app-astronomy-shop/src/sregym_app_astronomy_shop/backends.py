"""The leaf and mid-tier services: what each answers, and which feature flag changes it.

Each ``build_<service>(env)`` returns ``(server, ready)``: the gRPC or HTTP server and a readiness
check for the admin port. Flags are evaluated per request through :mod:`flags` (flagd), so turning
one on in the ``flagd-config`` ConfigMap changes behaviour within seconds, without a restart.
"""

from __future__ import annotations

import gc
import random
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import grpc

from sregym_appkit import logs

from . import data, flags, telemetry
from .rpc import GrpcPeer, GrpcServer, HttpPeer, HttpServer, RpcError

Ready = Callable[[], tuple[bool, dict[str, Any]]]
PORTS = {"ad": 9555, "cart": 7070, "checkout": 5050, "currency": 7001, "email": 6060, "payment": 50051,
         "product-catalog": 3550, "quote": 8090, "recommendation": 9001, "shipping": 50050,
         "image-provider": 8081, "frontend": 8080, "flagd": 8016}


def always_ready() -> tuple[bool, dict[str, Any]]:
    return True, {}


def addr(env: Mapping[str, str], peer: str) -> str:
    key = peer.upper().replace("-", "_") + "_ADDR"
    value = env.get(key, "")
    if not value:
        raise SystemExit(f"{key} is not set: the address of {peer} (host:port)")
    return value


# --- product-catalog -------------------------------------------------------------------------

def build_product_catalog(env: Mapping[str, str]) -> tuple[Any, Ready]:
    def list_products(_: dict[str, Any]) -> dict[str, Any]:
        return {"products": [data.catalog_entry(p) for p in data.PRODUCTS]}

    def get_product(req: dict[str, Any]) -> dict[str, Any]:
        pid = str(req.get("id", ""))
        if pid == data.FAILING_PRODUCT and flags.enabled("productCatalogFailure"):
            raise RpcError(grpc.StatusCode.INTERNAL, f"Error: Product Catalog Fail Feature Flag Enabled ({pid})")
        found = data.product(pid)
        if found is None:
            raise RpcError(grpc.StatusCode.NOT_FOUND, f"Product Not Found: {pid}")
        return found

    def search(req: dict[str, Any]) -> dict[str, Any]:
        q = str(req.get("query", "")).lower()
        return {"results": [data.catalog_entry(p) for p in data.PRODUCTS if q in p[1].lower()]}

    server = GrpcServer("product-catalog", PORTS["product-catalog"],
                        {"ListProducts": list_products, "GetProduct": get_product, "SearchProducts": search})
    return server, always_ready


# --- currency --------------------------------------------------------------------------------

def build_currency(env: Mapping[str, str]) -> tuple[Any, Ready]:
    def supported(_: dict[str, Any]) -> dict[str, Any]:
        return {"currencyCodes": sorted(data.RATES)}

    def convert(req: dict[str, Any]) -> dict[str, Any]:
        source, target = req.get("from") or {}, str(req.get("toCode", ""))
        try:
            cents = data.convert_cents(data.cents_of(source), str(source.get("currencyCode", "")), target)
        except (KeyError, TypeError, ValueError) as exc:
            raise RpcError(grpc.StatusCode.INVALID_ARGUMENT, f"cannot convert: {exc}") from None
        return data.money(target, cents)

    return GrpcServer("currency", PORTS["currency"], {"GetSupportedCurrencies": supported, "Convert": convert}), always_ready


# --- ad --------------------------------------------------------------------------------------

def build_ad(env: Mapping[str, str]) -> tuple[Any, Ready]:
    def get_ads(req: dict[str, Any]) -> dict[str, Any]:
        if flags.enabled("adFailure"):
            raise RpcError(grpc.StatusCode.UNAVAILABLE, "ad service failure: adFailure feature flag is on")
        if flags.enabled("adHighCpu"):
            _burn_cpu(0.25)  # the demo's ad service spins on the CPU while this flag is on
        if flags.enabled("adManualGc"):
            _full_gc_pause()
        return {"ads": data.ads_for([str(k) for k in req.get("contextKeys", [])])}

    return GrpcServer("ad", PORTS["ad"], {"GetAds": get_ads}), always_ready


def _burn_cpu(seconds: float) -> None:
    end = time.process_time() + seconds
    x = 0
    while time.process_time() < end:
        x = (x * 31 + 7) % 1_000_003


#: how long one request spends in back-to-back full collections while adManualGc is on
GC_THRASH_S = 1.5


def _full_gc_pause(seconds: float = GC_THRASH_S, objects: int = 300_000) -> int:
    """Full collections back to back over a live heap of small objects for ``seconds`` (at least three),
    as the demo's manual GC trigger stalls the JVM: the collector holds the interpreter lock while it
    scans, so every request in the process waits. Returns the number of collections."""
    start = time.monotonic()
    heap = [[i] for i in range(objects)]  # containers the collector must traverse
    collections = 0
    while collections < 3 or time.monotonic() - start < seconds:
        gc.collect(2)
        collections += 1
    del heap
    return collections


# --- cart (Redis-backed) ---------------------------------------------------------------------

def build_cart(env: Mapping[str, str]) -> tuple[Any, Ready]:
    import redis

    host, _, port = addr(env, "valkey").partition(":")
    cache = redis.Redis(host=host, port=int(port or 6379), socket_timeout=2, socket_connect_timeout=2,
                        password=env.get("VALKEY_PASSWORD") or None)
    ttl = int(env.get("CART_TTL_S", "3600"))

    def _redis(op: str, fn: Callable[[], Any]) -> Any:
        with telemetry.tracer().start_as_current_span(f"valkey {op}", attributes={"db.system": "redis",
                                                                                  "db.operation": op}):
            try:
                return fn()
            except redis.RedisError as exc:
                logs.error("cache_failed", peer="valkey-cart", addr=f"{host}:{port}", op=op, error=str(exc))
                raise RpcError(grpc.StatusCode.FAILED_PRECONDITION,
                               f"Can't access cart storage (valkey-cart {host}:{port}): {exc}") from None

    def add_item(req: dict[str, Any]) -> dict[str, Any]:
        user, item = str(req.get("userId", "")), req.get("item") or {}
        pid, qty = str(item.get("productId", "")), int(item.get("quantity", 0))
        if not user or data.product(pid) is None or qty <= 0:
            raise RpcError(grpc.StatusCode.INVALID_ARGUMENT, f"bad cart item {item!r} for user {user!r}")
        if flags.enabled("cartFailure"):
            raise RpcError(grpc.StatusCode.FAILED_PRECONDITION, "Can't access cart storage: cartFailure feature flag is on")

        def write() -> None:
            pipe = cache.pipeline()
            pipe.hincrby(f"cart:{user}", pid, qty)
            pipe.expire(f"cart:{user}", ttl)
            pipe.execute()
        _redis("HINCRBY", write)
        return {}

    def get_cart(req: dict[str, Any]) -> dict[str, Any]:
        user = str(req.get("userId", ""))
        raw = _redis("HGETALL", lambda: cache.hgetall(f"cart:{user}"))
        items = [{"productId": k.decode(), "quantity": int(v)} for k, v in sorted(raw.items())]
        return {"userId": user, "items": items}

    def empty_cart(req: dict[str, Any]) -> dict[str, Any]:
        user = str(req.get("userId", ""))
        if flags.enabled("cartFailure"):
            raise RpcError(grpc.StatusCode.FAILED_PRECONDITION, "Can't access cart storage: cartFailure feature flag is on")
        _redis("DEL", lambda: cache.delete(f"cart:{user}"))
        return {}

    server = GrpcServer("cart", PORTS["cart"], {"AddItem": add_item, "GetCart": get_cart, "EmptyCart": empty_cart})

    def ready() -> tuple[bool, dict[str, Any]]:
        # failedReadinessProbe: the demo's cart reports itself not ready while the flag is on
        if flags.enabled("failedReadinessProbe"):
            return False, {"error": "failedReadinessProbe feature flag is on"}
        try:
            cache.ping()
        except redis.RedisError as exc:
            return False, {"error": f"valkey-cart {host}:{port}: {exc}"}
        return True, {}

    return server, ready


# --- payment ---------------------------------------------------------------------------------

def build_payment(env: Mapping[str, str]) -> tuple[Any, Ready]:
    def charge(req: dict[str, Any]) -> dict[str, Any]:
        rate = flags.number("paymentFailure", 0.0)
        if rate > 0 and random.random() < rate:
            raise RpcError(grpc.StatusCode.UNAVAILABLE, f"Payment request failed. Invalid token. app.loyalty.level=gold "
                           f"(paymentFailure feature flag {rate:g})")
        card = req.get("creditCard") or {}
        number = str(card.get("creditCardNumber", ""))
        if not data.luhn_ok(number):
            raise RpcError(grpc.StatusCode.INVALID_ARGUMENT, "Credit card info is invalid")
        if int(card.get("creditCardExpirationYear", 0)) < time.gmtime().tm_year:
            raise RpcError(grpc.StatusCode.INVALID_ARGUMENT, "The credit card has expired")
        amount = req.get("amount") or {}
        tx = f"tx-{random.getrandbits(48):012x}"
        logs.info("payment_charged", transaction_id=tx, currency=amount.get("currencyCode"),
                  cents=data.cents_of(amount) if amount else 0, card_last4=number[-4:])
        return {"transactionId": tx}

    return GrpcServer("payment", PORTS["payment"], {"Charge": charge}), always_ready


# --- recommendation --------------------------------------------------------------------------

def _cache_miss(cache: list[Any]) -> int:
    """recommendationCacheFailure's cache: every request misses, and the miss appends as many entries as
    the cache holds (it doubles: it is never evicted), then scans every entry. Memory and latency
    double with each request until the container meets its memory limit. Returns the entries scanned."""
    cache.extend([list(data.PRODUCT_IDS)] * max(1, len(cache)))
    return sum(len(x) for x in cache)


def build_recommendation(env: Mapping[str, str]) -> tuple[Any, Ready]:
    catalog = GrpcPeer("recommendation", "product-catalog", addr(env, "product-catalog"))
    leak: list[Any] = []
    lock = threading.Lock()

    def recommend(req: dict[str, Any]) -> dict[str, Any]:
        exclude = {str(x) for x in req.get("productIds", [])}
        if flags.enabled("recommendationCacheFailure"):
            # the demo's cache "fails": every miss appends to a cache that is never evicted and is
            # scanned linearly, so memory and latency grow with traffic
            with lock:
                _cache_miss(leak)
                telemetry.CACHE_KEYS.labels("recommendation", "products").set(len(leak))
            products = [p["id"] for p in catalog.call("ListProducts")["products"]]
        else:
            products = [p["id"] for p in catalog.call("ListProducts")["products"]]
        pool = [p for p in products if p not in exclude]
        random.shuffle(pool)
        return {"productIds": pool[:5]}

    return GrpcServer("recommendation", PORTS["recommendation"], {"ListRecommendations": recommend}), always_ready


# --- quote, shipping, email (HTTP) ------------------------------------------------------------

def build_quote(env: Mapping[str, str]) -> tuple[Any, Ready]:
    def route(method: str, path: str, query: dict[str, str], body: Any) -> tuple[int, Any]:
        if (method, path) != ("POST", "/getquote"):
            return 404, {"error": "not found"}
        items = int((body or {}).get("numberOfItems", 0))
        if items <= 0:
            return 400, {"error": "numberOfItems must be a positive integer"}
        return 200, {"costUsd": data.money("USD", items * data.QUOTE_PER_ITEM_CENTS)}

    return HttpServer("quote", PORTS["quote"], route), always_ready


def build_shipping(env: Mapping[str, str]) -> tuple[Any, Ready]:
    quote = HttpPeer("shipping", "quote", addr(env, "quote"))

    def route(method: str, path: str, query: dict[str, str], body: Any) -> tuple[int, Any]:
        body = body or {}
        if (method, path) == ("POST", "/get-quote"):
            count = sum(int(i.get("quantity", 0)) for i in body.get("items", []))
            return 200, quote.call("POST", "/getquote", {"numberOfItems": count})
        if (method, path) == ("POST", "/ship-order"):
            if not (body.get("address") or {}).get("zipCode"):
                return 400, {"error": "address.zipCode is required"}
            return 200, {"trackingId": f"{random.getrandbits(64):016x}"}
        return 404, {"error": "not found"}

    return HttpServer("shipping", PORTS["shipping"], route), always_ready


def build_email(env: Mapping[str, str]) -> tuple[Any, Ready]:
    def route(method: str, path: str, query: dict[str, str], body: Any) -> tuple[int, Any]:
        if (method, path) != ("POST", "/send_order_confirmation"):
            return 404, {"error": "not found"}
        body = body or {}
        if "@" not in str(body.get("email", "")):
            return 400, {"error": "email is required"}
        logs.info("order_confirmation_sent", email=body["email"], order_id=(body.get("order") or {}).get("orderId"))
        return 200, {"sent": True}

    return HttpServer("email", PORTS["email"], route), always_ready


# --- image-provider --------------------------------------------------------------------------

def build_image_provider(env: Mapping[str, str]) -> tuple[Any, Ready]:
    images = {f"{pid}.png": data.image_bytes(pid) for pid in data.PRODUCT_IDS}

    def route(method: str, path: str, query: dict[str, str], body: Any) -> tuple[Any, ...]:
        name = path.rsplit("/", 1)[-1]
        if method != "GET" or not path.startswith("/images/products/") or name not in images:
            return 404, {"error": f"no image {path}"}
        delay_ms = flags.integer("imageSlowLoad", 0)
        if delay_ms > 0:
            time.sleep(min(delay_ms, 30_000) / 1000)  # the demo delays images at the proxy by 5 or 10 s
        return 200, images[name], "image/png"

    return HttpServer("image-provider", PORTS["image-provider"], route), always_ready


BUILDERS: dict[str, Callable[[Mapping[str, str]], tuple[Any, Ready]]] = {
    "ad": build_ad, "cart": build_cart, "currency": build_currency, "email": build_email,
    "image-provider": build_image_provider, "payment": build_payment, "product-catalog": build_product_catalog,
    "quote": build_quote, "recommendation": build_recommendation, "shipping": build_shipping,
}
