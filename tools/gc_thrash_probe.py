#!/usr/bin/env python3
"""Would a collector tuned to thrash give Python services upstream's gc_capacity_degradation?

Upstream sets GOGC=1 on every Go service (plus a tight LimitRange and 6x load) and calls the result a
metastable collapse. CPython reads no collector setting from the environment, so the nearest knob is
``gc.set_threshold`` called from code. This probe measures what thrashing thresholds cost per request
(a handler's worth of short-lived dicts and lists, beside 200,000 long-lived objects as a service's
modules and caches), with 0, 100 and 1000 requests' objects held in flight. For a collapse that
outlasts its trigger, the cost would have to grow with the backlog (more in flight -> slower -> more
in flight); if it stays flat, thrashing is a fixed capacity cut that passes when the burst ends.

    python tools/gc_thrash_probe.py

2026-11-29, CPython 3.11.7 on the loaded 2-core machine, two runs (CPU microseconds per request at
0/100/1000 in flight): default (700, 10, 10) 95/112/87 and 80/74/96; (10, 1, 1) 447/398/405 and
265/292/329; (1, 1, 1) 408/415/447 and 280/271/259. Three to four times the default, with no steady
growth in the backlog (CPython 3.11 runs a full collection only once the objects promoted since the
last one exceed a quarter of the long-lived ones, so its cost does not follow each request's survivors).
CPU time of one process, not a service level: nothing here is graded.
"""

from __future__ import annotations

import gc
import sys
import time

THRESHOLDS = ((700, 10, 10), (10, 1, 1), (1, 1, 1))  # CPython's default, then two settings that thrash
IN_FLIGHT = (0, 100, 1000)


def request() -> int:
    """One request's garbage: rows as a JSON handler builds them, dropped at the end."""
    rows = [{"id": i, "name": f"hotel{i}", "tags": ["a", "b"], "geo": (1.0, 2.0)} for i in range(200)]
    return sum(len(row["tags"]) for row in rows)


def cost_us(threshold: tuple[int, int, int], in_flight: int, requests: int = 300) -> float:
    """CPU microseconds per request with ``in_flight`` requests' objects alive meanwhile."""
    held = [[{"x": j} for j in range(200)] for _ in range(in_flight)]
    gc.collect()
    gc.set_threshold(*threshold)
    try:
        started = time.process_time()
        for _ in range(requests):
            request()
        return (time.process_time() - started) / requests * 1e6
    finally:
        gc.set_threshold(*THRESHOLDS[0])
        del held
        gc.collect()


def main() -> None:
    long_lived = [[{"k": i}] for i in range(200_000)]  # noqa: F841 - the service's own heap, kept alive
    print(f"CPython {sys.version.split()[0]}: CPU us per request at {'/'.join(map(str, IN_FLIGHT))} in flight")
    for threshold in THRESHOLDS:
        print(f"  gc threshold {threshold}: " + "/".join(f"{cost_us(threshold, n):.0f}" for n in IN_FLIGHT))


if __name__ == "__main__":
    main()
