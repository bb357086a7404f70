"""The home-page flood of the flag ``loadGeneratorFloodHomepage``, as the demo's load generator runs it.

In the demo, every Locust user whose flood task comes up requests the home page again and again,
each request sent as soon as the previous one is answered; a flood is felt because it is
closed-loop: it takes whatever the frontend can serve, however fast this machine is. (An open-loop
100 requests per second, as this generator sent before, is absorbed by a frontend with no CPU limit:
no user noticed it within a minute, docs/validation.md 2026-11-27.) Here the flag's value is the
number of such flooding users.

The flood runs in a process of its own (``python -m sregym_app_astronomy_shop.homeflood``), so that
its client work never delays the users' requests the generator measures (one Python process would
share one interpreter lock between them); it reports how many requests it sent on its output. It is
bounded whatever the flag says: at most ``MAX_WORKERS`` users, ``MAX_REQUESTS`` requests and
``MAX_SECONDS`` seconds per flag turn-on (a flood that reached a bound stays stopped until the flag
goes off and on again), and it sends only to a loopback address (the embedded cluster's Services
live in 127.0.0.0/8), unless ``WORKLOAD_FLOOD_ANY_ADDRESS=1`` says the generator runs on a real
cluster whose Service addresses are elsewhere.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import aiohttp
import yarl

from sregym_appkit.service import stop_process
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
                progress: Callable[[int], None] | None = None) -> int:
    """``workers`` closed-loop users requesting ``url``'s home page (pinned to ``address:port``) until
    ``max_requests`` were sent in all or ``max_seconds`` passed; returns the number sent, and gives
    it to ``progress`` about once a second."""
    workers = max(0, min(MAX_WORKERS, workers))
    deadline = time.monotonic() + min(MAX_SECONDS, max_seconds)
    max_requests = min(MAX_REQUESTS, max_requests)
    home = url.rstrip("/") + "/"
    host = yarl.URL(url).host or ""
    sent = 0
    connector = aiohttp.TCPConnector(limit=max(1, workers), resolver=PinnedResolver({host: (address, port)}))
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout, trust_env=False) as session:

        async def user() -> None:
            nonlocal sent
            while time.monotonic() < deadline and sent < max_requests:
                sent += 1  # one event loop: no other user runs between the check and the count
                try:
                    async with session.get(home) as reply:
                        await reply.read()
                except (TimeoutError, aiohttp.ClientError, OSError):
                    await asyncio.sleep(RETRY_PAUSE_S)

        async def report() -> None:
            while True:
                await asyncio.sleep(1.0)
                if progress:
                    progress(sent)

        reporter = asyncio.create_task(report())
        try:
            await asyncio.gather(*(user() for _ in range(workers)))
        finally:
            reporter.cancel()
    if progress:
        progress(sent)
    return sent


class HomeFlood:
    """Starts, resizes and stops the flood process as the flag's value changes (:meth:`set`)."""

    def __init__(self, url: str, *, max_requests: int = MAX_REQUESTS, max_seconds: float = MAX_SECONDS) -> None:
        self.url, self.max_requests, self.max_seconds = url, max_requests, max_seconds
        self.process: subprocess.Popen[str] | None = None
        self.sent = 0  # requests the current (or last) flood sent
        self.workers = 0  # the flag value the current (or finished) flood was started for
        self.error = ""
        self._read_all = threading.Event()  # the follower read the flood's last report

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
        self.error, self.sent = "", 0
        self._read_all = threading.Event()
        self.process = subprocess.Popen(
            [sys.executable, "-m", __name__, self.url, address, str(port), str(workers), str(self.max_requests),
             str(self.max_seconds)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
        threading.Thread(target=self._follow, args=(self.process, self._read_all), daemon=True,
                         name="home-flood").start()

    def _follow(self, process: subprocess.Popen[str], read_all: threading.Event) -> None:
        assert process.stdout is not None
        with process.stdout:
            for line in process.stdout:
                if line.startswith("sent ") and process is self.process:
                    self.sent = int(line.split()[1])
        read_all.set()

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def wait(self, timeout: float) -> None:
        """Until the flood process ended by itself (tests), at most ``timeout`` s."""
        if self.process is not None:
            self.process.wait(timeout)
            self._read_all.wait(5)  # its last report, read by the follower thread

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process)
            self.process = None
        self.workers = 0

    def status(self) -> dict[str, Any]:
        return {"flood_users": self.workers, "flood_running": self.running(), "flood_sent": self.sent,
                "flood_error": self.error}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="the home-page flood (loadGeneratorFloodHomepage)")
    parser.add_argument("url")
    parser.add_argument("address")
    parser.add_argument("port", type=int)
    parser.add_argument("workers", type=int)
    parser.add_argument("max_requests", type=int)
    parser.add_argument("max_seconds", type=float)
    args = parser.parse_args(argv)
    if not ipaddress.ip_address(args.address).is_loopback and os.environ.get("WORKLOAD_FLOOD_ANY_ADDRESS") != "1":
        print(f"{args.address} is outside 127.0.0.0/8: no flood sent there", file=sys.stderr)
        return 2

    parent = os.getppid()

    def progress(sent: int) -> None:
        if os.getppid() != parent:  # the generator is gone (killed outright): no flood without it
            os._exit(0)
        print(f"sent {sent}", flush=True)

    asyncio.run(flood(args.url, args.address, args.port, args.workers, args.max_requests, args.max_seconds, progress))
    return 0


if __name__ == "__main__":
    sys.exit(main())
