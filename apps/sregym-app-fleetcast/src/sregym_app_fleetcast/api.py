"""The FleetCast HTTP service: satellite elements, positions and ground-station observations.

Routes (JSON unless said): ``GET /`` (HTML summary), ``GET /api/satellites``,
``GET /api/satellites/{norad}``, ``GET /api/satellites/{norad}/position?t=<unix>``,
``POST /api/observations`` and ``GET /api/observations/{id}``. Everything is kept in the
DatastoreCluster's primary (``DATASTORE_ADDR``, Redis protocol). The service seeds the catalogue
when the datastore lacks it (a fresh or re-provisioned cluster), and is ready only while the
datastore answers and holds the catalogue.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from aiohttp import web
from prometheus_client import Counter, Histogram
from sregym_appkit import logs

from .catalog import CATALOG_VERSION, position, satellites

REQUESTS = Counter("fleetcast_requests_total", "FleetCast HTTP requests", ["route", "code"])
LATENCY = Histogram("fleetcast_request_seconds", "FleetCast request latency", ["route"])
SEEDED_KEY = "fleetcast:catalog"
FIELDS = ("name", "family", "inclination", "raan", "eccentricity", "arg_perigee", "mean_anomaly", "mean_motion", "epoch")
NUMERIC = {"inclination", "raan", "eccentricity", "arg_perigee", "mean_anomaly", "mean_motion"}


class Store:
    """The datastore through redis-py's asyncio client, with the state readiness reports."""

    def __init__(self, address: str) -> None:
        import redis.asyncio as redis
        host, _, port = address.partition(":")
        # Any: with decode_responses every answer is a str, which redis-py's annotations cannot say
        self.client: Any = redis.Redis(host=host, port=int(port or 6379), socket_timeout=2, socket_connect_timeout=2,
                                  decode_responses=True)
        self.ok, self.error = False, "not checked yet"

    async def seed_if_missing(self) -> bool:
        if await self.client.get(SEEDED_KEY) == CATALOG_VERSION:
            return False
        pipe = self.client.pipeline(transaction=True)
        for sat in satellites():
            pipe.hset(f"sat:{sat['norad']}", mapping={k: str(sat[k]) for k in FIELDS})
            pipe.zadd("sats", {str(sat["norad"]): sat["norad"]})
        pipe.set(SEEDED_KEY, CATALOG_VERSION)
        await pipe.execute()
        return True

    async def watch(self, stop: asyncio.Event) -> None:
        """Keep ``ok`` current and the catalogue present (every 2 s)."""
        while not stop.is_set():
            try:
                if await self.seed_if_missing():
                    logs.info("catalog_seeded", version=CATALOG_VERSION)
                self.ok, self.error = True, ""
            except Exception as exc:  # noqa: BLE001 - any datastore failure makes the service unready
                if self.ok or self.error != str(exc):
                    logs.error("datastore_unavailable", error=str(exc))
                self.ok, self.error = False, str(exc)
            try:
                await asyncio.wait_for(stop.wait(), 2)
            except TimeoutError:
                pass


def _elements(norad: int, raw: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {"norad": norad}
    for key in FIELDS:
        value = raw.get(key, "")
        out[key] = float(value) if key in NUMERIC else (int(value) if key == "epoch" else value)
    return out


def routes(store: Store) -> web.Application:
    app = web.Application()

    def timed(route: str):
        def wrap(handler):
            async def run(request: web.Request) -> web.StreamResponse:
                started = time.perf_counter()
                try:
                    response = await handler(request)
                except web.HTTPException as exc:
                    response = exc
                except Exception as exc:  # noqa: BLE001 - a datastore error is a 503 with the reason
                    logs.error("request_failed", route=route, error=str(exc))
                    response = web.json_response({"error": f"datastore: {exc}"}, status=503)
                REQUESTS.labels(route, str(response.status)).inc()
                LATENCY.labels(route).observe(time.perf_counter() - started)
                if isinstance(response, web.HTTPException):
                    raise response
                return response
            return run
        return wrap

    async def satellite(norad_text: str) -> dict[str, Any]:
        try:
            norad = int(norad_text)
        except ValueError:
            raise web.HTTPBadRequest(text='{"error": "norad must be an integer"}', content_type="application/json") from None
        raw = await store.client.hgetall(f"sat:{norad}")
        if not raw and await store.seed_if_missing():  # a fresh datastore: seed it now, not on the next tick
            raw = await store.client.hgetall(f"sat:{norad}")
        if not raw:
            raise web.HTTPNotFound(text='{"error": "no such satellite"}', content_type="application/json")
        return _elements(norad, raw)

    @timed("home")
    async def home(request: web.Request) -> web.Response:
        count = await store.client.zcard("sats")
        if not count and await store.seed_if_missing():
            count = await store.client.zcard("sats")
        return web.Response(text=f"<html><head><title>FleetCast</title></head><body><h1>FleetCast</h1>"
                                 f"<p>{count} satellites tracked</p></body></html>", content_type="text/html")

    @timed("list")
    async def listing(request: web.Request) -> web.Response:
        ids = [int(x) for x in await store.client.zrange("sats", 0, -1)]
        if not ids and await store.seed_if_missing():
            ids = [int(x) for x in await store.client.zrange("sats", 0, -1)]
        pipe = store.client.pipeline(transaction=False)
        for norad in ids:
            pipe.hget(f"sat:{norad}", "name")
        names = await pipe.execute()
        return web.json_response({"satellites": [{"norad": n, "name": name} for n, name in zip(ids, names, strict=True)]})

    @timed("satellite")
    async def one(request: web.Request) -> web.Response:
        return web.json_response(await satellite(request.match_info["norad"]))

    @timed("position")
    async def where(request: web.Request) -> web.Response:
        elements = await satellite(request.match_info["norad"])
        try:
            t = float(request.query.get("t") or time.time())
        except ValueError:
            raise web.HTTPBadRequest(text='{"error": "t must be a number"}', content_type="application/json") from None
        return web.json_response({"norad": elements["norad"], "t": t, **position(elements, t)})

    @timed("observe")
    async def observe(request: web.Request) -> web.Response:
        try:
            body = await request.json()
            norad, station, elevation = int(body["norad"]), str(body["station"])[:64], float(body["elevation"])
        except (ValueError, KeyError, TypeError):
            return web.json_response({"error": "need norad (int), station (str), elevation (number)"}, status=400)
        if not await store.client.exists(f"sat:{norad}"):
            return web.json_response({"error": "no such satellite"}, status=404)
        obs_id = await store.client.incr("obs:next")
        record = {"norad": str(norad), "station": station, "elevation": repr(elevation)}
        await store.client.hset(f"obs:{obs_id}", mapping=record)
        await store.client.expire(f"obs:{obs_id}", 3600)
        return web.json_response({"id": obs_id, "norad": norad, "station": station, "elevation": elevation}, status=201)

    @timed("observation")
    async def observation(request: web.Request) -> web.Response:
        raw = await store.client.hgetall(f"obs:{request.match_info['id']}")
        if not raw:
            return web.json_response({"error": "no such observation"}, status=404)
        return web.json_response({"id": int(request.match_info["id"]), "norad": int(raw["norad"]),
                                  "station": raw["station"], "elevation": float(raw["elevation"])})

    app.router.add_get("/", home)
    app.router.add_get("/api/satellites", listing)
    app.router.add_get("/api/satellites/{norad}", one)
    app.router.add_get("/api/satellites/{norad}/position", where)
    app.router.add_post("/api/observations", observe)
    app.router.add_get("/api/observations/{id}", observation)
    return app


async def serve(port: int, admin_port: int, address: str) -> None:
    import signal

    from sregym_appkit.admin import AdminServer
    store = Store(address)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    admin = AdminServer("0.0.0.0", admin_port, lambda: {"ready": store.ok, "datastore": address,
                                                         **({"error": store.error} if store.error else {})})
    admin.start()
    runner = web.AppRunner(routes(store), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "0.0.0.0", port).start()
    logs.info("service_started", port=port, datastore=address)
    watcher = asyncio.create_task(store.watch(stop))
    await stop.wait()
    logs.info("shutdown_started", reason="signal")
    watcher.cancel()
    await runner.cleanup()
    admin.stop()


def main() -> int:
    logs.configure("fleetcast", os.environ.get("LOG_LEVEL", "info"))
    asyncio.run(serve(int(os.environ.get("PORT", "8080")), int(os.environ.get("ADMIN_PORT", "9464")),
                      os.environ.get("DATASTORE_ADDR", "orbit-db:6379")))
    return 0
