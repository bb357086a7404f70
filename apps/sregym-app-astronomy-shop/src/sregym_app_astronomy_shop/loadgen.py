"""The load generator (the demo's Locust user, as an open-loop generator with a query API).

Requests are scheduled (Poisson at ``WORKLOAD_RATE`` per second through the edge proxy), never
paced by answers; each answer is checked for content (:mod:`content`): a success is a 2xx *with*
the right content. Each user session picks one task by the demo's weights: browse a product,
recommendations, ads, the home page, view or add to the cart, a product image, or check out (add
one or two products, pay, then watch the order page until the order is confirmed, at most
``ORDER_CONFIRM_S``: an order fraud-detection has not checked by then is a failed checkout).
While the flag ``loadGeneratorFloodHomepage`` is on, the generator also floods the home page as the
demo's does: its value is the number of users requesting the home page again and again, each as
soon as the last was answered, in a process of its own and bounded (:mod:`homeflood`); flood requests
are not part of the statistics.

API (the mitigation oracles' functional SLO)::

    GET  /stats?window=30   {"count","success","errors","success_rate","content_errors",
                             "content_error_kinds","p50_ms","p95_ms","p99_ms","error_kinds","by_endpoint"}
    GET  /control, POST /control {"rate", "duration"}, GET /healthz, GET /metrics
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import threading
import time
import uuid
from typing import Any

import aiohttp
from aiohttp import web
from prometheus_client import Counter

from sregym_appkit import logs
from sregym_appkit.stats import Record, RequestLog
from sregym_appkit.workload import IngressRouting, add_query_routes, choose_weighted, validate_route

from . import content, data
from .homeflood import HomeFlood

MIX = (("browse", 0.30), ("recommend", 0.14), ("ads", 0.14), ("home", 0.10), ("cart_add", 0.10),
       ("cart_view", 0.05), ("image", 0.07), ("checkout", 0.10))
ENDPOINTS = tuple(name for name, _ in MIX)
CURRENCIES = ("USD", "EUR", "CAD", "JPY", "GBP", "CHF")
REQUESTS = Counter("shop_workload_requests_total", "requests sent by the load generator", ["endpoint", "outcome"])
FLOOD = Counter("shop_workload_flood_requests_total", "home-page flood requests (loadGeneratorFloodHomepage)")
#: how long a user watches the order page for the confirmation, and how often it reloads
ORDER_CONFIRM_S = 2.5
ORDER_POLL_S = 0.25
CARD = {"creditCardNumber": "4432-8015-6152-0454", "creditCardCvv": 672, "creditCardExpirationYear": 2039,
        "creditCardExpirationMonth": 1}
ADDRESS = {"streetAddress": "1600 Amphitheatre Parkway", "city": "Mountain View", "state": "CA",
           "country": "United States", "zipCode": "94043"}


def choose(rng: random.Random) -> str:
    return choose_weighted(MIX, rng)


def request_for(endpoint: str, rng: random.Random) -> tuple[str, str]:
    """(method, path) of a single-request endpoint (the live fault contract's probe requests)."""
    pid, code = rng.choice(data.PRODUCT_IDS), rng.choice(CURRENCIES)
    return {"browse": ("GET", f"/api/products/{pid}?currencyCode={code}"),
            "recommend": ("GET", f"/api/recommendations?productIds={pid}&currencyCode={code}"),
            "ads": ("GET", "/api/data?contextKeys=" + rng.choice(data.CATEGORIES)),
            "home": ("GET", "/"), "image": ("GET", f"/images/products/{pid}.png"),
            "cart_view": ("GET", f"/api/cart?sessionId={uuid.uuid4()}")}.get(endpoint, ("GET", "/"))


class Stats(RequestLog):
    """Every recorded request (sregym_appkit.stats), counted in ``shop_workload_requests_total`` too."""

    def add_request(self, endpoint: str, status: int, latency_ms: float, ok: bool, error: str = "",
                    wrong: str = "") -> None:
        self.add(Record(t=time.time(), endpoint=endpoint, status=status, latency_ms=latency_ms, ok=ok, error=error,
                        content_error=wrong))
        REQUESTS.labels(endpoint, "success" if ok else ("wrong_content" if wrong else "error")).inc()


class Generator:
    def __init__(self, target: str, rate: float, duration: float, timeout_s: float, max_inflight: int = 200) -> None:
        self.target, self.rate, self.duration, self.timeout_s = target.rstrip("/"), rate, duration, timeout_s
        self.max_inflight = max_inflight
        self.stats = Stats()
        self.session: aiohttp.ClientSession | None = None
        self.task: asyncio.Task[None] | None = None
        self.inflight = 0
        self.sent = 0
        self.home_flood: HomeFlood | None = None
        self.routing: IngressRouting[str] = IngressRouting()
        self.sessions: list[aiohttp.ClientSession] = []

    def set_route(self, route: dict[str, Any] | None) -> None:
        """Users through an Ingress (sregym_appkit's /control route: url, connect, ca), or back (None)."""
        direct, url, self.session = self.routing.switch(route, (self.target, self.session),
                                                        limit=self.max_inflight, timeout_s=self.timeout_s)
        self.target = direct if url is None else url
        if url is not None and self.session is not None:
            self.sessions.append(self.session)

    @property
    def route(self) -> dict[str, str] | None:
        return self.routing.route

    async def _get(self, path: str, method: str = "GET", body: Any = None) -> tuple[int, bytes]:
        assert self.session is not None
        async with self.session.request(method, self.target + path, json=body) as resp:
            return resp.status, await resp.read()

    async def one(self, endpoint: str, rng: random.Random) -> None:
        self.inflight += 1
        t0 = time.perf_counter()
        status, wrong, error = 0, "", ""
        try:
            # one deadline for the whole task (a checkout is several requests), so a record lands at
            # most timeout_s after its task was sent: the SLO window relies on that bound
            status, wrong = await asyncio.wait_for(self._task(endpoint, rng), self.timeout_s)
        except TimeoutError:
            error = "timeout"
        except aiohttp.ClientError as exc:
            error = type(exc).__name__
        finally:
            self.inflight -= 1
        ok = 200 <= status < 300 and not wrong
        self.stats.add_request(endpoint, status, (time.perf_counter() - t0) * 1000, ok, error,
                       wrong if 200 <= status < 300 else "")

    async def _task(self, endpoint: str, rng: random.Random) -> tuple[int, str]:
        pid, code = rng.choice(data.PRODUCT_IDS), rng.choice(CURRENCIES)
        if endpoint == "browse":
            status, body = await self._get(f"/api/products/{pid}?currencyCode={code}")
            return status, (content.check_product(body, pid, code) or "") if status == 200 else ""
        if endpoint == "recommend":
            status, body = await self._get(f"/api/recommendations?productIds={pid}&currencyCode={code}")
            return status, (content.check_recommendations(body, [pid], code) or "") if status == 200 else ""
        if endpoint == "ads":
            key = rng.choice(data.CATEGORIES)
            status, body = await self._get(f"/api/data?contextKeys={key}")
            return status, (content.check_ads(body, [key]) or "") if status == 200 else ""
        if endpoint == "home":
            status, body = await self._get("/")
            return status, (content.check_home(body) or "") if status == 200 else ""
        if endpoint == "image":
            status, body = await self._get(f"/images/products/{pid}.png")
            return status, (content.check_image(body, pid) or "") if status == 200 else ""
        user = str(uuid.uuid4())
        if endpoint == "cart_view":
            status, body = await self._get(f"/api/cart?sessionId={user}")
            return status, (content.check_cart(body, user, {}) or "") if status == 200 else ""
        added: dict[str, int] = {}
        for product in rng.sample(data.PRODUCT_IDS, 1 if endpoint == "cart_add" else rng.randint(1, 2)):
            qty = rng.randint(1, 3)
            status, body = await self._get("/api/cart", "POST", {"userId": user, "item": {"productId": product,
                                                                                          "quantity": qty}})
            added[product] = qty
            if status != 200:
                return status, ""
            wrong = content.check_cart(body, user, added)
            if wrong:
                return status, wrong
        if endpoint == "cart_add":
            return 200, ""
        status, body = await self._get(f"/api/checkout?currencyCode={code}", "POST",
                                       {"userId": user, "email": "someone@example.com", "address": ADDRESS,
                                        "userCurrency": code, "creditCard": CARD})
        if status != 200:
            return status, ""
        wrong = content.check_order(body, added, code)
        if wrong:
            return status, wrong
        return await self._confirmed(json.loads(body)["orderId"])

    async def _confirmed(self, order_id: str) -> tuple[int, str]:
        """Reload the order page until it says confirmed, for at most ORDER_CONFIRM_S."""
        deadline = time.monotonic() + ORDER_CONFIRM_S
        while True:
            status, body = await self._get(f"/api/orders/{order_id}")
            if status != 200:
                return status, ""
            wrong = content.check_order_status(body, order_id)
            if wrong != content.ORDER_PROCESSING or time.monotonic() >= deadline:
                return status, wrong or ""
            await asyncio.sleep(ORDER_POLL_S)

    async def schedule(self) -> None:
        rng = random.Random()
        loop = asyncio.get_running_loop()
        start = next_at = loop.time()
        pending: set[asyncio.Task[None]] = set()
        while self.rate > 0 and loop.time() - start < self.duration:
            next_at += rng.expovariate(self.rate)
            delay = next_at - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            endpoint = choose(rng)
            self.sent += 1
            if self.inflight >= self.max_inflight:
                self.stats.add_request(endpoint, 0, 0.0, False, "client_overloaded")
                continue
            task = asyncio.create_task(self.one(endpoint, rng))
            pending.add(task)
            task.add_done_callback(pending.discard)


def _poll_flag(flood: HomeFlood, stop: threading.Event) -> None:
    """Follow loadGeneratorFloodHomepage every 2 s; count the flood's requests in its metric."""
    from . import flags

    flags.configure("load-generator")
    counted = 0
    while not stop.wait(2.0):
        flood.set(flags.integer("loadGeneratorFloodHomepage", 0))
        sent = flood.sent
        if sent < counted:  # a new flood started from 0
            counted = 0
        FLOOD.inc(sent - counted)
        counted = sent
    flood.stop()


def make_app(gen: Generator) -> web.Application:
    async def control_get(request: web.Request) -> web.Response:
        flood = gen.home_flood.status() if gen.home_flood else {}
        return web.json_response({"rate": gen.rate, "duration": gen.duration, "sent": gen.sent,
                                  "inflight": gen.inflight, **flood, "target": gen.target,
                                  "route": gen.route, "running": gen.task is not None and not gen.task.done()})

    async def control_post(request: web.Request) -> web.Response:
        try:
            body = await request.json()
            rate = float(body.get("rate", gen.rate))
            duration = float(body.get("duration", gen.duration))
            if not (0 <= rate <= 200 and 0 < duration <= 7 * 86400) or set(body) - {"rate", "duration", "route"}:
                raise ValueError("rate must be in [0, 200], duration in (0, 604800], no other keys but route")
            if body.get("route") is not None:
                validate_route(body["route"])
        except (ValueError, AttributeError, json.JSONDecodeError) as exc:
            return web.json_response({"error": str(exc)}, status=400)
        if gen.task is not None:
            gen.task.cancel()
        if "route" in body:
            gen.set_route(body["route"])
        gen.rate, gen.duration, gen.sent = rate, duration, 0
        gen.task = asyncio.create_task(gen.schedule())
        return await control_get(request)

    app = web.Application()
    add_query_routes(app, gen.stats, ENDPOINTS)
    app.router.add_get("/control", control_get)
    app.router.add_post("/control", control_post)
    return app


async def run() -> None:
    env = os.environ
    gen = Generator(env.get("WORKLOAD_TARGET", "http://frontend-proxy.astronomy-shop.svc.cluster.local:8080"),
                    float(env.get("WORKLOAD_RATE", "5")), float(env.get("WORKLOAD_DURATION", "86400")),
                    float(env.get("WORKLOAD_TIMEOUT_S", "5")))
    gen.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=gen.timeout_s),
                                        connector=aiohttp.TCPConnector(limit=gen.max_inflight, ttl_dns_cache=10),
                                        trust_env=False)
    runner = web.AppRunner(make_app(gen), access_log=None)
    await runner.setup()
    port = int(env.get("WORKLOAD_PORT", "8089"))
    await web.TCPSite(runner, "0.0.0.0", port).start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    poll_stop = threading.Event()
    # the flood goes to the shop's own Service address, not through an Ingress route users may take
    gen.home_flood = HomeFlood(gen.target)
    poller = threading.Thread(target=_poll_flag, args=(gen.home_flood, poll_stop), daemon=True, name="flags")
    poller.start()
    gen.task = asyncio.create_task(gen.schedule())
    logs.info("workload_started", target=gen.target, rate=gen.rate, port=port)
    await stop.wait()
    poll_stop.set()
    gen.task.cancel()
    await asyncio.to_thread(poller.join, 10)
    gen.home_flood.stop()
    for session in {id(s): s for s in [gen.session, *gen.sessions, *(gen.routing.direct[1:] if gen.routing.direct else ())]
                    if s is not None}.values():
        await session.close()
    await runner.cleanup()


def main(argv: list[str]) -> int:
    logs.configure("load-generator")
    asyncio.run(run())
    return 0
