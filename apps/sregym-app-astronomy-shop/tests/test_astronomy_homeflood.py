"""The home-page flood (flag loadGeneratorFloodHomepage): closed-loop users, bounded in count and time,
only to loopback addresses, in a process of its own that follows the flag; and the load generator's
route to the shop's public name (the users' way in through the Ingress).

Each test runs a real HTTP server on 127.0.0.1 and the real flood against it.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time

import pytest
from aiohttp import web

from sregym_app_astronomy_shop import homeflood
from sregym_app_astronomy_shop.homeflood import FloodRefused, HomeFlood, flood, resolve_target


class Home:
    """A home page that answers after ``delay`` s and remembers how many requests it held at once."""

    def __init__(self, delay: float) -> None:
        self.delay, self.held, self.most_held, self.count = delay, 0, 0, 0

    async def handle(self, request: web.Request) -> web.Response:
        self.count += 1
        self.held += 1
        self.most_held = max(self.most_held, self.held)
        try:
            await asyncio.sleep(self.delay)
            return web.Response(text="<html>home</html>")
        finally:
            self.held -= 1


async def _serve(home: Home) -> tuple[web.AppRunner, int]:
    app = web.Application()
    app.router.add_get("/", home.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]


def test_the_flood_is_closed_loop_and_stops_at_its_request_bound():
    async def scenario():
        home = Home(delay=0.02)
        runner, port = await _serve(home)
        try:
            sent = await asyncio.wait_for(flood(f"http://127.0.0.1:{port}", "127.0.0.1", port, 5, 120, 30.0), 20)
        finally:
            await runner.cleanup()
        return home, sent

    home, sent = asyncio.run(scenario())
    assert sent == 120 and home.count == 120
    # five users, each waiting for its answer before asking again: never more than five at once
    assert 1 < home.most_held <= 5


def test_the_flood_stops_at_its_time_bound():
    async def scenario():
        home = Home(delay=0.01)
        runner, port = await _serve(home)
        started = time.monotonic()
        try:
            sent = await asyncio.wait_for(flood(f"http://127.0.0.1:{port}", "127.0.0.1", port, 2, 10**9, 0.5), 20)
        finally:
            await runner.cleanup()
        return time.monotonic() - started, sent

    took, sent = asyncio.run(scenario())
    assert took < 15  # it returned by itself (the outer bound only catches a hang)
    assert 0 < sent < 10**9


def test_the_bounds_hold_whatever_the_caller_asks(monkeypatch):
    monkeypatch.setattr(homeflood, "MAX_REQUESTS", 7)

    async def scenario():
        home = Home(delay=0.0)
        runner, port = await _serve(home)
        try:
            sent = await asyncio.wait_for(flood(f"http://127.0.0.1:{port}", "127.0.0.1", port, 10**6, 10**9, 10**9), 20)
        finally:
            await runner.cleanup()
        return home, sent

    home, sent = asyncio.run(scenario())
    assert sent == home.count == 7


def test_only_loopback_targets_are_flooded(monkeypatch):
    monkeypatch.delenv("WORKLOAD_FLOOD_ANY_ADDRESS", raising=False)
    assert resolve_target("http://127.43.0.7:8080") == ("127.43.0.7", 8080)
    assert resolve_target("http://localhost:8080")[0] in ("127.0.0.1", "::1")
    with pytest.raises(FloodRefused, match="outside 127.0.0.0/8"):
        resolve_target("http://192.0.2.10:8080")  # documentation range: resolved, never contacted
    assert resolve_target("http://192.0.2.10:8080", any_address=True) == ("192.0.2.10", 8080)
    flooder = HomeFlood("http://192.0.2.10:8080")
    flooder.set(100)
    assert not flooder.running() and "outside 127.0.0.0/8" in flooder.status()["flood_error"]
    # the flood program checks again by itself
    done = subprocess.run([sys.executable, "-m", "sregym_app_astronomy_shop.homeflood", "http://192.0.2.10:8080",
                           "192.0.2.10", "8080", "1", "1", "1"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "outside 127.0.0.0/8" in done.stderr


def test_the_flood_process_follows_the_flag():
    home = Home(delay=0.01)
    ready = threading.Event()
    state: dict = {}

    def serve():
        async def main():
            runner, state["port"] = await _serve(home)
            state["loop"], state["stop"] = asyncio.get_running_loop(), asyncio.Event()
            ready.set()
            await state["stop"].wait()
            await runner.cleanup()

        asyncio.run(main())

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    assert ready.wait(10)
    flooder = HomeFlood(f"http://127.0.0.1:{state['port']}", max_requests=400)
    try:
        flooder.set(3)
        assert flooder.running()
        flooder.wait(60)  # it stops by itself at its 400 requests
        assert not flooder.running() and flooder.status()["flood_sent"] == 400
        flooder.set(3)  # the same flag value: a flood that ran to its bound is not started again
        assert not flooder.running()
        flooder.set(0)  # flag off, then on again: a new flood
        flooder.set(2)
        assert flooder.running()
        flooder.set(0)
        assert not flooder.running() and flooder.process is None
    finally:
        flooder.stop()
        state["loop"].call_soon_threadsafe(state["stop"].set)
        server.join(10)
    assert home.count >= 400


def test_the_load_generator_reaches_the_shop_by_its_public_name_through_a_route_and_goes_back():
    """/control's route (sregym_appkit.workload.route_session): requests for http://shop.test go to
    the pinned address; route null sends users to the target again."""
    from sregym_app_astronomy_shop.loadgen import Generator

    async def scenario():
        home = Home(delay=0)
        runner, port = await _serve(home)
        gen = Generator("http://127.0.0.1:9", rate=0, duration=0, timeout_s=3)
        try:
            gen.set_route({"url": "http://shop.test", "connect": f"127.0.0.1:{port}"})
            routed = gen.target, gen.route, await gen._get("/")
            gen.set_route(None)
            return routed, (gen.target, gen.route), home.count
        finally:
            for session in gen.sessions:  # the routed one (the direct one opens with a run)
                await session.close()
            await runner.cleanup()

    (target, route, (status, body)), back, count = asyncio.run(scenario())
    assert (target, route) == ("http://shop.test", {"url": "http://shop.test", "connect": route["connect"]})
    assert status == 200 and b"home" in body and count == 1
    assert back == ("http://127.0.0.1:9", None)
