"""The scaffolding of an open-loop workload generator with a query API; an app adds its request mix.

Requests are *scheduled*, not paced by responses: constant or Poisson inter-arrival times at
``rate`` per second, for at most ``duration`` seconds and ``max_requests`` requests. When more than
``max_inflight`` requests are outstanding, new ones are recorded as failed (``client_overloaded``)
instead of delaying the schedule, so a slow system shows up as errors and latency, as it would for
real users.

An app subclasses :class:`Generator` with its ``endpoints``, ``choose`` (pick an endpoint),
``prepare`` (draw the request's parameters from the schedule's seeded RNG) and ``send`` (send it,
check the answer's content, return an :class:`Outcome`), then calls :func:`main`.

API (the mitigation oracles' functional SLO)::

    GET  /stats?window=30   {"count","success","errors","success_rate","content_errors","content_error_kinds",
                             "p50_ms","p95_ms","p99_ms","error_kinds","by_endpoint","endpoints"}
    GET  /control           the current run's parameters and progress
    POST /control           {"rate": 20, "duration": 60, "max_requests": 5000, "distribution": "poisson"}
                            (+ "route": {"url", "connect", "ca"} or null: send users through an Ingress, or not)
    GET  /healthz, GET /readyz, GET /metrics

Settings come from ``--flags`` or ``WORKLOAD_*`` environment variables (see :func:`parse_settings`).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import random
import signal
import socket
import ssl
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import aiohttp
import aiohttp.abc
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, Counter, Gauge, Histogram, generate_latest

from . import logs
from .stats import Record, RequestLog

#: what a generator aims with when it goes straight to the target (its settings, or a target URL)
Direct = TypeVar("Direct")

MAX_RATE = 2000.0
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunSpec:
    """One bounded run of load."""

    rate: float
    duration: float
    max_requests: int
    distribution: str = "poisson"
    seed: int | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings:
    target: str
    host: str
    port: int
    run: RunSpec
    timeout_s: float
    max_inflight: int
    buffer: int
    autostart: bool


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What one request came to: its status (0 without an answer) and what was wrong with it."""

    status: int
    wrong: str = ""  # a content error: the status looked right but the answer contradicts the app's data
    error: str = ""  # why there was no good answer (transport error, error body)
    ok: bool | None = None  # None: a 2xx without content or transport error


def _env(name: str, default: str) -> str:
    return os.environ.get(name, default) or default


def parse_settings(argv: list[str], *, description: str, default_target: str) -> Settings:
    p = argparse.ArgumentParser(prog="serve workload", description=description)
    p.add_argument("--target", default=_env("WORKLOAD_TARGET", default_target))
    p.add_argument("--host", default=_env("WORKLOAD_HOST", "0.0.0.0"))
    p.add_argument("--port", type=int, default=int(_env("WORKLOAD_PORT", "8089")))
    p.add_argument("--rate", type=float, default=float(_env("WORKLOAD_RATE", "10")))
    p.add_argument("--duration", type=float, default=float(_env("WORKLOAD_DURATION", "86400")))
    p.add_argument("--max-requests", type=int, default=int(_env("WORKLOAD_MAX_REQUESTS", "10000000")))
    p.add_argument("--distribution", choices=("constant", "poisson"), default=_env("WORKLOAD_DISTRIBUTION", "poisson"))
    p.add_argument("--seed", type=int, default=int(os.environ["WORKLOAD_SEED"]) if os.environ.get("WORKLOAD_SEED") else None)
    p.add_argument("--timeout", type=float, default=float(_env("WORKLOAD_TIMEOUT_S", "5")))
    p.add_argument("--max-inflight", type=int, default=int(_env("WORKLOAD_MAX_INFLIGHT", "256")))
    p.add_argument("--buffer", type=int, default=int(_env("WORKLOAD_BUFFER", "200000")))
    p.add_argument("--no-autostart", action="store_true", default=_env("WORKLOAD_AUTOSTART", "true").lower() == "false")
    a = p.parse_args(argv)
    run = validate_run({"rate": a.rate, "duration": a.duration, "max_requests": a.max_requests,
                        "distribution": a.distribution, "seed": a.seed})
    return Settings(target=a.target.rstrip("/"), host=a.host, port=a.port, run=run, timeout_s=a.timeout,
                    max_inflight=max(1, a.max_inflight), buffer=max(100, a.buffer), autostart=not a.no_autostart)


def validate_run(body: dict[str, Any], base: RunSpec | None = None) -> RunSpec:
    """A RunSpec from a /control body (missing keys keep ``base``); raise ValueError with a clear message."""
    unknown = set(body) - {"rate", "duration", "max_requests", "distribution", "seed"}
    if unknown:
        raise ValueError(f"unknown keys: {', '.join(sorted(unknown))}")
    merged = dataclasses.asdict(base) if base else {}
    merged.update({k: v for k, v in body.items() if v is not None or k == "seed"})
    try:
        rate = float(merged.get("rate", 0))
        duration = float(merged.get("duration", 60))
        max_requests = int(merged.get("max_requests", 10_000_000))
        seed = None if merged.get("seed") is None else int(merged["seed"])
    except (TypeError, ValueError) as exc:
        raise ValueError(f"rate, duration, max_requests and seed must be numbers: {exc}") from exc
    distribution = str(merged.get("distribution", "poisson"))
    if not 0 <= rate <= MAX_RATE:
        raise ValueError(f"rate must be within 0-{MAX_RATE:g} requests/s")
    if not 0 < duration <= 7 * 86400:
        raise ValueError("duration must be within (0, 604800] seconds")
    if max_requests < 0:
        raise ValueError("max_requests must be >= 0")
    if distribution not in ("constant", "poisson"):
        raise ValueError("distribution must be constant or poisson")
    return RunSpec(rate=rate, duration=duration, max_requests=max_requests, distribution=distribution, seed=seed)


def validate_route(route: Any) -> tuple[str, str, str]:
    """(url, connect, ca) of a /control ``route``; ValueError when it is not one."""
    if not isinstance(route, dict) or set(route) - {"url", "connect", "ca"}:
        raise ValueError('route must be null or an object with "url", "connect" and optionally "ca"')
    url, connect, ca = route.get("url"), route.get("connect"), route.get("ca") or ""
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ValueError("route.url must be an http:// or https:// URL")
    host, _, port = str(connect or "").rpartition(":")
    if not host or not port.isdigit():
        raise ValueError('route.connect must be "host:port"')
    if not isinstance(ca, str) or (ca and "BEGIN CERTIFICATE" not in ca):
        raise ValueError("route.ca must be PEM certificates")
    return url, str(connect), ca


class PinnedResolver(aiohttp.abc.AbstractResolver):
    """Resolves some names to another host and port (as a public DNS record points a site's name at
    its load balancer); everything else as usual."""

    def __init__(self, pins: dict[str, tuple[str, int]]) -> None:
        self.pins, self.default = pins, aiohttp.ThreadedResolver()

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_UNSPEC) -> list[aiohttp.abc.ResolveResult]:
        if host not in self.pins:
            return await self.default.resolve(host, port, family)
        target, target_port = self.pins[host]
        answers = await self.default.resolve(target, target_port, family)
        return [{**a, "hostname": host, "port": target_port} for a in answers]

    async def close(self) -> None:
        await self.default.close()


def route_session(url: str, connect: str, ca: str, *, limit: int, timeout_s: float) -> aiohttp.ClientSession:
    """A client session for users arriving through an Ingress (a validated ``route``: :func:`validate_route`):
    ``url``'s host is connected to at ``connect`` (``host:port`` of the ingress controller, as public DNS
    would answer), its certificate verified against ``ca`` (PEM; the system's when empty); at most
    ``limit`` connections, ``timeout_s`` for a request."""
    from yarl import URL

    host = URL(url).host or ""
    connect_host, _, connect_port = connect.rpartition(":")
    context = ssl.create_default_context(cadata=ca) if ca else ssl.create_default_context()
    connector = aiohttp.TCPConnector(limit=limit, ttl_dns_cache=10, ssl=context,
                                     resolver=PinnedResolver({host: (connect_host, int(connect_port))}))
    return aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=timeout_s))


class IngressRouting(Generic[Direct]):
    """Where users go: straight to the target, or through an Ingress (a /control ``route``). The way in
    use before the first route (``Direct``: whatever the generator aims with, and its session) is kept so
    that a ``None`` route goes back to it."""

    def __init__(self) -> None:
        self.direct: tuple[Direct, aiohttp.ClientSession | None] | None = None
        self.route: dict[str, str] | None = None

    def switch(self, route: Any, current: tuple[Direct, aiohttp.ClientSession | None], *, limit: int,
               timeout_s: float) -> tuple[Direct, str | None, aiohttp.ClientSession | None]:
        """(the direct way, the route's target URL or None, the session to use now). A new route opens a
        new session (the caller closes it with its others); ValueError for a ``route`` that is not one."""
        if route is None:
            direct = self.direct if self.direct is not None else current
            self.route = None
            return direct[0], None, direct[1]
        url, connect, ca = validate_route(route)
        if self.direct is None:
            self.direct = current
        session = route_session(url, connect, ca, limit=limit, timeout_s=timeout_s)
        self.route = {"url": url, "connect": connect}
        return self.direct[0], url.rstrip("/"), session


def choose_weighted(mix: tuple[tuple[str, float], ...], rng: random.Random) -> str:
    """An endpoint drawn from ``mix`` ((name, share) pairs summing to 1)."""
    x, acc = rng.random(), 0.0
    for name, share in mix:
        acc += share
        if x < acc:
            return name
    return mix[0][0]


class WorkloadMetrics:
    """The generator's Prometheus metrics, named ``<prefix>workload_*`` (one set per prefix per process)."""

    _made: dict[str, WorkloadMetrics] = {}
    requests: Counter
    latency: Histogram
    success_rate: Gauge
    p99: Gauge
    target_rate: Gauge
    inflight: Gauge

    def __new__(cls, prefix: str = "") -> WorkloadMetrics:
        if prefix not in cls._made:
            m = super().__new__(cls)
            m.requests = Counter(f"{prefix}workload_requests_total", "requests sent by the workload generator",
                                 ["endpoint", "outcome"])
            m.latency = Histogram(f"{prefix}workload_request_latency_seconds", "end-to-end request latency",
                                  ["endpoint"], buckets=LATENCY_BUCKETS)
            m.success_rate = Gauge(f"{prefix}workload_success_rate", "fraction of successful requests over the last 30 s")
            m.p99 = Gauge(f"{prefix}workload_latency_p99_ms", "p99 latency over the last 30 s in milliseconds")
            m.target_rate = Gauge(f"{prefix}workload_target_rate", "configured requests per second (0 = idle)")
            m.inflight = Gauge(f"{prefix}workload_inflight", "requests awaiting a response")
            cls._made[prefix] = m
        return cls._made[prefix]


class Generator:
    """Runs one RunSpec at a time against the app's entry point and records every request."""

    endpoints: tuple[str, ...] = ()
    metrics_prefix = ""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.metrics = WorkloadMetrics(self.metrics_prefix)
        self.log = RequestLog(settings.buffer)
        self.spec = settings.run
        self.task: asyncio.Task[None] | None = None
        self.session: aiohttp.ClientSession | None = None
        self.sessions: list[aiohttp.ClientSession] = []  # every session opened (routes switch sessions)
        self.routing: IngressRouting[Settings] = IngressRouting()
        self.sent = 0
        self.started_at = 0.0
        self.inflight = 0
        self.pending: set[asyncio.Task[None]] = set()

    # --- what an app provides -------------------------------------------------------------------
    def choose(self, rng: random.Random) -> str:
        """The next request's endpoint (one of ``endpoints``)."""
        raise NotImplementedError

    def prepare(self, endpoint: str, rng: random.Random) -> Any:
        """The request's parameters, drawn in schedule order so a seeded run repeats exactly."""
        return None

    async def send(self, endpoint: str, request: Any) -> Outcome:
        """Send one request with ``self.session`` to ``self.settings.target`` and judge the answer."""
        raise NotImplementedError

    def forget(self) -> None:
        """Forget what the generator expects of the app's stored data (posts it wrote, orders it placed): the
        harness put that data back to what was deployed (a reset restores volumes and restarts caches), so what
        it wrote since is gone by design, not lost by the app. Generators that keep no such memory do nothing."""

    # --- the engine -----------------------------------------------------------------------------
    async def open(self) -> None:
        connector = aiohttp.TCPConnector(limit=self.settings.max_inflight, ttl_dns_cache=10)
        timeout = aiohttp.ClientTimeout(total=self.settings.timeout_s)
        self.session = aiohttp.ClientSession(connector=connector, timeout=timeout)
        self.sessions.append(self.session)

    async def set_route(self, route: dict[str, Any] | None) -> None:
        """Send users to ``route["url"]`` (an Ingress host), connecting to ``route["connect"]``
        (``host:port`` of the ingress controller's Service, as DNS would answer for the public name)
        and verifying its certificate against ``route["ca"]`` (PEM); None: back to the target."""
        direct, url, self.session = self.routing.switch(route, (self.settings, self.session),
                                                        limit=self.settings.max_inflight,
                                                        timeout_s=self.settings.timeout_s)
        self.settings = direct if url is None else dataclasses.replace(direct, target=url)
        if url is not None and self.session is not None:
            self.sessions.append(self.session)

    async def close(self) -> None:
        await self.stop()
        if self.pending:
            await asyncio.wait(self.pending, timeout=self.settings.timeout_s)
        for session in self.sessions:
            await session.close()

    async def start(self, spec: RunSpec) -> None:
        await self.stop()
        self.spec, self.sent, self.started_at = spec, 0, time.time()
        self.metrics.target_rate.set(spec.rate)
        logs.info("workload_run_started", target=self.settings.target, rate=spec.rate, duration=spec.duration,
                  max_requests=spec.max_requests, distribution=spec.distribution)
        if spec.rate > 0 and spec.max_requests > 0:
            self.task = asyncio.create_task(self._schedule(spec))

    async def stop(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()
            try:
                await self.task
            except asyncio.CancelledError:
                pass
        self.task = None
        self.metrics.target_rate.set(0)

    async def _schedule(self, spec: RunSpec) -> None:
        rng = random.Random(spec.seed)
        loop = asyncio.get_running_loop()
        start = loop.time()
        next_at = start
        while self.sent < spec.max_requests:
            gap = 1.0 / spec.rate if spec.distribution == "constant" else rng.expovariate(spec.rate)
            next_at += gap
            if next_at - start > spec.duration:
                break
            delay = next_at - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            endpoint = self.choose(rng)
            request = self.prepare(endpoint, rng)
            self.sent += 1
            if self.inflight >= self.settings.max_inflight:
                self.record(endpoint, Outcome(0, error="client_overloaded"), 0.0)
                continue
            task = asyncio.create_task(self._one(endpoint, request))
            self.pending.add(task)
            task.add_done_callback(self.pending.discard)
        logs.info("workload_run_finished", sent=self.sent, elapsed_s=round(loop.time() - start, 1))
        self.metrics.target_rate.set(0)

    def record(self, endpoint: str, outcome: Outcome, latency_s: float) -> None:
        ok = outcome.ok
        if ok is None:
            ok = 200 <= outcome.status < 300 and not outcome.wrong and not outcome.error
        self.log.add(Record(t=time.time(), endpoint=endpoint, status=outcome.status, latency_ms=latency_s * 1000,
                            ok=ok, error=outcome.error, content_error=outcome.wrong))
        self.metrics.requests.labels(endpoint, "success" if ok else ("wrong_content" if outcome.wrong else "error")).inc()
        if outcome.status:
            self.metrics.latency.labels(endpoint).observe(latency_s)

    async def _one(self, endpoint: str, request: Any) -> None:
        self.inflight += 1
        self.metrics.inflight.set(self.inflight)
        t0 = time.perf_counter()
        try:
            outcome = await self.send(endpoint, request)
        except TimeoutError:
            outcome = Outcome(0, error="timeout")
        except aiohttp.ClientError as exc:
            outcome = Outcome(0, error=type(exc).__name__)
        finally:
            self.inflight -= 1
            self.metrics.inflight.set(self.inflight)
        self.record(endpoint, outcome, time.perf_counter() - t0)

    def progress(self) -> dict[str, Any]:
        return {"running": self.task is not None and not self.task.done(), "sent": self.sent,
                "recorded_total": self.log.total, "inflight": self.inflight, "started_at": self.started_at,
                "target": self.settings.target, "route": self.routing.route, **dataclasses.asdict(self.spec)}


def add_query_routes(app: web.Application, log: RequestLog, endpoints: tuple[str, ...]) -> None:
    """``GET /stats?window=``, ``/healthz``, ``/readyz`` and ``/metrics``: the part of the API every generator shares."""
    async def stats(request: web.Request) -> web.Response:
        try:
            window = float(request.query.get("window", "30"))
            if not 0 < window <= 86400:
                raise ValueError
        except ValueError:
            return web.json_response({"error": "window must be a number of seconds in (0, 86400]"}, status=400)
        return web.json_response({**log.stats(window), "endpoints": list(endpoints)})

    async def healthz(request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def metrics(request: web.Request) -> web.Response:
        return web.Response(body=generate_latest(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    app.router.add_get("/stats", stats)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", healthz)
    app.router.add_get("/metrics", metrics)


def make_app(gen: Generator) -> web.Application:
    async def control_get(request: web.Request) -> web.Response:
        return web.json_response(gen.progress())

    async def control_post(request: web.Request) -> web.Response:
        try:
            body = await request.json()
            if not isinstance(body, dict):
                raise ValueError("body must be a JSON object")
            has_route, route = "route" in body, body.pop("route", None)
            if route is not None:
                validate_route(route)
            forget = body.pop("forget", False)
            if not isinstance(forget, bool):
                raise ValueError("forget must be true or false")
            spec = validate_run(body, base=gen.spec)
        except (ValueError, json.JSONDecodeError) as exc:
            return web.json_response({"error": str(exc)}, status=400)
        if forget:
            await gen.stop()
            gen.forget()
        if has_route:
            await gen.stop()
            await gen.set_route(route)
        await gen.start(spec)
        return web.json_response(gen.progress())

    app = web.Application()
    add_query_routes(app, gen.log, gen.endpoints)
    app.router.add_get("/control", control_get)
    app.router.add_post("/control", control_post)
    return app


async def _gauges(gen: Generator) -> None:
    while True:
        s = gen.log.stats(30)
        gen.metrics.success_rate.set(s["success_rate"] if s["success_rate"] is not None else 1.0)
        gen.metrics.p99.set(s["p99_ms"] or 0)
        await asyncio.sleep(1)


async def serve(gen: Generator) -> None:
    """Serve the API and run load until SIGTERM/SIGINT."""
    settings = gen.settings
    await gen.open()
    runner = web.AppRunner(make_app(gen), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, settings.host, settings.port).start()
    logs.info("workload_api_listening", host=settings.host, port=settings.port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    gauges = asyncio.create_task(_gauges(gen))
    if settings.autostart:
        await gen.start(settings.run)
    await stop.wait()
    logs.info("shutdown_started", reason="signal")
    gauges.cancel()
    await gen.close()
    await runner.cleanup()
    logs.info("shutdown_complete")


def main(build: Callable[[list[str]], Generator]) -> Callable[[list[str]], int]:
    """The ``serve workload`` entry point for an app: ``build(argv)`` parses settings into a Generator.

    A ValueError from ``build`` is a configuration error: logged as ``config_invalid``, exit code 2.
    """
    def run(argv: list[str]) -> int:
        logs.configure("workload", os.environ.get("LOG_LEVEL", "info"))
        try:
            gen = build(argv)
        except ValueError as exc:
            logs.error("config_invalid", error=str(exc))
            return 2
        asyncio.run(serve(gen))
        return 0
    return run
