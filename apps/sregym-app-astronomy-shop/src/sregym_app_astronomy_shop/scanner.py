"""A bounded vulnerability scanner (the ``edge-scanner`` workload of the edge-filter ReDoS fault).

It probes the shop's API through the edge proxy with SQL-injection paths, as the scanners every
public shop sees do: a long numeric product id followed by ``' OR 1=1``. Against a request filter
whose regular expression backtracks catastrophically, each probe costs the proxy's single worker
a regex evaluation of about 0.2 s of CPU (PCRE2 gives up at its match limit), so a few probes a
second saturate the proxy and every real user waits behind them.

Bounded in every dimension: ``SCANNER_CONCURRENCY`` workers (default 2, at most 8), each at most
``SCANNER_RPS`` probes a second (default 5), a ``SCANNER_TIMEOUT_S`` per probe, and the whole scan
stops after ``SCANNER_DURATION_S`` (default 3600 s); the process then idles until it is stopped.
It only ever talks to ``SCANNER_TARGET`` (the shop's edge Service inside the cluster).
"""

from __future__ import annotations

import http.client
import os
import signal
import threading
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from sregym_appkit import logs

#: the probe: a product id of 40 digits, then a classic SQL-injection suffix (URL-encoded)
PROBE_PATH = "/api/products/" + "1" * 40 + "%27%20OR%201=1"
MAX_CONCURRENCY = 8


def settings(env: Mapping[str, str]) -> dict[str, Any]:
    return {"target": env.get("SCANNER_TARGET", "http://frontend-proxy.astronomy-shop.svc.cluster.local:8080"),
            "concurrency": max(1, min(MAX_CONCURRENCY, int(env.get("SCANNER_CONCURRENCY", "2")))),
            "rps": max(0.1, min(20.0, float(env.get("SCANNER_RPS", "5")))),
            "timeout_s": float(env.get("SCANNER_TIMEOUT_S", "10")),
            "duration_s": max(0.0, min(6 * 3600.0, float(env.get("SCANNER_DURATION_S", "3600"))))}


class Scanner:
    def __init__(self, target: str, concurrency: int, rps: float, timeout_s: float, duration_s: float) -> None:
        url = urlsplit(target)
        self.host, self.port = url.hostname or "127.0.0.1", url.port or 80
        self.concurrency, self.interval, self.timeout_s, self.duration_s = concurrency, 1.0 / rps, timeout_s, duration_s
        self.lock = threading.Lock()
        self.counts: dict[str, int] = {}

    def _probe(self, conn: http.client.HTTPConnection | None) -> tuple[http.client.HTTPConnection | None, str]:
        try:
            if conn is None:
                conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
            conn.request("GET", PROBE_PATH, headers={"User-Agent": "sqlmap/1.7.2#stable (https://sqlmap.org)"})
            resp = conn.getresponse()
            resp.read()
            return conn, str(resp.status)
        except (OSError, http.client.HTTPException) as exc:
            if conn is not None:
                conn.close()
            return None, type(exc).__name__

    def worker(self, stop: threading.Event, deadline: float) -> None:
        conn = None
        while not stop.is_set() and time.monotonic() < deadline:
            started = time.monotonic()
            conn, outcome = self._probe(conn)
            with self.lock:
                self.counts[outcome] = self.counts.get(outcome, 0) + 1
            stop.wait(max(self.interval - (time.monotonic() - started), 0.05 if outcome.isdigit() else 1.0))
        if conn is not None:
            conn.close()

    def run(self, stop: threading.Event) -> None:
        deadline = time.monotonic() + self.duration_s
        threads = [threading.Thread(target=self.worker, args=(stop, deadline), daemon=True)
                   for _ in range(self.concurrency)]
        for t in threads:
            t.start()
        while not stop.wait(30.0) and time.monotonic() < deadline:
            with self.lock:
                counts, self.counts = self.counts, {}
            logs.info("scan_progress", target=f"{self.host}:{self.port}", outcomes=counts)
        for t in threads:
            t.join(self.timeout_s + 2)
        logs.info("scan_finished", reason="stopped" if stop.is_set() else "duration reached")


def main(argv: list[str]) -> int:
    logs.configure("edge-scanner")
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda _s, _f: stop.set())
    conf = settings(os.environ)
    logs.info("scan_started", **conf)
    Scanner(**conf).run(stop)
    stop.wait()  # a finished scan idles: its Deployment does not restart it
    return 0
