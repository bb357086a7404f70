"""The home-page flood of the flag ``loadGeneratorFloodHomepage``, as the demo's load generator runs it.

In the demo, every Locust user whose flood task comes up requests the home page again and again,
each request sent as soon as the previous one is answered; a flood is felt because it is
closed-loop: it takes whatever the frontend can serve, however fast this machine is. (An open-loop
100 requests per second, as this generator sent before, is absorbed by a frontend with no CPU limit:
no user noticed it within a minute, docs/validation.md 2026-11-27.) Here the flag's value is the
number of such flooding users.

The flood runs in a process of its own, so that its client work never delays the users' requests
the generator measures (one Python process would share one interpreter lock between them). It is
bounded whatever the flag says: at most ``MAX_WORKERS`` users, ``MAX_REQUESTS`` requests and
``MAX_SECONDS`` seconds per flag turn-on (a flood that reached a bound stays stopped until the flag
goes off and on again), and it sends only to a loopback address (the embedded cluster's Services
live in 127.0.0.0/8), unless ``WORKLOAD_FLOOD_ANY_ADDRESS=1`` says the generator runs on a real
cluster whose Service addresses are elsewhere.
"""

from __future__ import annotations

import asyncio
import ipaddress
import multiprocessing
import os
import socket
import time
from typing import Any

import aiohttp
import yarl

from sregym_appkit.workload import PinnedResolver

MAX_WORKERS = 100
MAX_REQUESTS = 300_000
MAX_SECONDS = 1800.0
#: one flood request's deadline; an unanswered one is abandoned and the user asks again
REQUEST_TIMEOUT_S = 10.0
#: a refused or failed request is retried after this pause, so a flood at a dead address does not spin
RETRY_PAUSE_S = 0.05


class FloodRefused(ValueError):
    """The target is not an address the flood may send to."""


def resolve_target(url: str, *, any_address: bool | None = None) -> tuple[str, int]:
    """(address, port) the flood sends ``url``'s requests to: the first address the host resolves
    to, which must be loopback unless ``any_address`` (default: ``WORKLOAD_FLOOD_ANY_ADDRESS=1``)."""
    if any_address is None:
        any_address = os.environ.get("WORKLOAD_FLOOD_ANY_ADDRESS") == "1"
    parsed = yarl.URL(url)
    host, port = parsed.host or "", parsed.port or 80
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise FloodRefused(f"cannot resolve {host!r}: {exc}") from exc
    address = str(infos[0][4][0])
    if not any_address and not ipaddress.ip_address(address).is_loopback:
        raise FloodRefused(f"{host} resolves to {address}, outside 127.0.0.0/8: no flood sent there")
    return address, port


async def flood(url: str, address: str, port: int, workers: int, max_requests: int, max_seconds: float,
                sent: Any) -> None:
    """``workers`` closed-loop users requesting ``url``'s home page (pinned to ``address:port``) until
    ``max_requests`` were sent in all or ``max_seconds`` passed; ``sent`` (a shared integer with a
    lock, ``multiprocessing.Value``) counts the requests sent."""
    workers = max(0, min(MAX_WORKERS, workers))
    deadline = time.monotonic() + min(MAX_SECONDS, max_seconds)
    max_requests = min(MAX_REQUESTS, max_requests)
    home = url.rstrip("/") + "/"
    host = yarl.URL(url).host or ""
    connector = aiohttp.TCPConnector(limit=max(1, workers), resolver=PinnedResolver({host: (address, port)}))
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout, trust_env=False) as session:

        async def user() -> None:
            while time.monotonic() < deadline:
                with sent.get_lock():
                    if sent.value >= max_requests:
                        return
                    sent.value += 1
                try:
                    async with session.get(home) as reply:
                        await reply.read()
                except (TimeoutError, aiohttp.ClientError, OSError):
                    await asyncio.sleep(RETRY_PAUSE_S)

        await asyncio.gather(*(user() for _ in range(workers)))


def _process_main(url: str, address: str, port: int, workers: int, max_requests: int, max_seconds: float,
                  sent: Any) -> None:
    asyncio.run(flood(url, address, port, workers, max_requests, max_seconds, sent))


class HomeFlood:
    """Starts, resizes and stops the flood process as the flag's value changes (:meth:`set`)."""

    def __init__(self, url: str, *, max_requests: int = MAX_REQUESTS, max_seconds: float = MAX_SECONDS) -> None:
        self.url, self.max_requests, self.max_seconds = url, max_requests, max_seconds
        self._context = multiprocessing.get_context("spawn")  # no fork of a process with threads
        self.sent = self._context.Value("q", 0)
        self.process: Any = None
        self.workers = 0  # the flag value the current (or finished) flood was started for
        self.error = ""

    def set(self, workers: int) -> None:
        """Follow the flag: 0 stops the flood; another value (re)starts it unless a flood for that value
        already runs or ran to one of its bounds."""
        workers = max(0, min(MAX_WORKERS, int(workers)))
        if workers == self.workers:
            return
        self.stop()
        self.workers = workers
        if workers == 0:
            return
        try:
            address, port = resolve_target(self.url)
        except FloodRefused as exc:
            self.error = str(exc)
            return
        self.error = ""
        with self.sent.get_lock():
            self.sent.value = 0
        self.process = self._context.Process(
            target=_process_main, name="home-flood", daemon=True,
            args=(self.url, address, port, workers, self.max_requests, self.max_seconds, self.sent))
        self.process.start()

    def running(self) -> bool:
        return self.process is not None and self.process.is_alive()

    def stop(self) -> None:
        if self.process is not None:
            if self.process.is_alive():
                self.process.terminate()
            self.process.join(5)
            if self.process.is_alive():
                self.process.kill()
                self.process.join(5)
            self.process = None
        self.workers = 0

    def status(self) -> dict[str, Any]:
        return {"flood_users": self.workers, "flood_running": self.running(), "flood_sent": int(self.sent.value),
                "flood_error": self.error}
