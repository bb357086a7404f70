"""``order-exporter``: the leaking producer of the queue-producer-leak fault.

A sidecar that "exports order snapshots for analytics": every ``EXPORT_INTERVAL_S`` seconds it
publishes one message of ``EXPORT_MESSAGE_BYTES`` (4 MiB by default) to the stream ``EXPORT_STREAM``
on the broker, with no length cap and no consumer, so the stream only grows. When the broker refuses a snapshot (its
``maxmemory`` is reached; policy noeviction) the exporter logs the failure and retries with the
snapshot split in half, down to ``MIN_BYTES``, so it takes every byte the broker has left and
checkout's orders are refused too. It talks only to ``QUEUE_ADDR`` and never sends more than one
message per interval.
"""

from __future__ import annotations

import os
import signal
import threading
import time

from sregym_appkit import logs

MIN_BYTES = 512


def main(argv: list[str]) -> int:
    import redis

    logs.configure("order-exporter")
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda _s, _f: stop.set())
    host, _, port = os.environ.get("QUEUE_ADDR", "queue:6379").partition(":")
    stream = os.environ.get("EXPORT_STREAM", "orders-export")
    size = max(1024, min(16 << 20, int(os.environ.get("EXPORT_MESSAGE_BYTES", str(4 << 20)))))
    interval = max(0.1, float(os.environ.get("EXPORT_INTERVAL_S", "0.5")))
    broker = redis.Redis(host=host, port=int(port or 6379), socket_timeout=10, socket_connect_timeout=3)
    logs.info("exporter_started", stream=stream, message_bytes=size, interval_s=interval, broker=f"{host}:{port}")
    sent = 0
    while not stop.is_set():
        started = time.monotonic()
        try:
            # no MAXLEN: nothing ever trims or reads this stream
            broker.xadd(stream, {"snapshot": b"{\"orders\":\"" + b"x" * size + b"\"}"})
            sent += 1
            if sent % 10 == 1:
                logs.info("export_published", stream=stream, messages=sent, message_bytes=size)
        except redis.RedisError as exc:
            full = isinstance(exc, redis.exceptions.OutOfMemoryError) or "maxmemory" in str(exc)
            logs.error("export_failed", stream=stream, message_bytes=size, error=str(exc),
                       action="retry with the snapshot split in half" if full and size > MIN_BYTES else "retry")
            if full:
                size = max(MIN_BYTES, size // 2)
        stop.wait(max(interval - (time.monotonic() - started), 0.05))
    return 0
