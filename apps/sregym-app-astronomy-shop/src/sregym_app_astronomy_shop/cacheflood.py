"""The ``cache-memory-flood`` fault: a Job fills the cart cache with 1 MiB keys until it is OOM-killed.

Inject starts the Job ``cart-cache-loadtest`` in the app's namespace (a cache load test left
pointing at production): ``CACHE_FLOOD_THREADS`` writers (10) each ``SET`` a new 1 MiB key
``loadtest:<thread>:<n>`` twice a second into valkey-cart, which runs without ``maxmemory``. Within
seconds valkey-cart passes its container's 256 Mi memory limit and is OOM-killed; every carts it held
is gone, cart calls fail while it restarts, and the writers fill it again as soon as it is back, so it
ends in CrashLoopBackOff. The flood program (``cache-flood``, :func:`main`) is bounded: at most 16
threads, 5 keys per second each, and it stops after ``CACHE_FLOOD_DURATION_S`` (the Job's own
``activeDeadlineSeconds`` too).

The fix an SRE makes: stop the load test (delete the Job) and restart valkey-cart, which comes back
empty. The fault is present while the Job exists.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sregym_core.faultkit import kube
from sregym_core.faultkit.functions import function_fault
from sregym_core.types import TargetSelector

from . import IMAGE_REPO, IMAGE_TAG

if TYPE_CHECKING:
    from sregym_core.faults import FaultContext
    from sregym_core.types import Target

JOB = "cart-cache-loadtest"
VALUE_BYTES = 1 << 20


# --- the flood program (``serve cache-flood``) ---------------------------------------------------

def _writer(addr: str, index: int, value: bytes, rate: float, stop: threading.Event, deadline: float) -> None:
    import redis

    host, _, port = addr.partition(":")
    client = redis.Redis(host=host, port=int(port or 6379), socket_timeout=10, socket_connect_timeout=3)
    n = 0
    while not stop.is_set() and time.monotonic() < deadline:
        started = time.monotonic()
        try:
            client.set(f"loadtest:{index}:{n}", value)
            n += 1
        except redis.RedisError:
            stop.wait(1.0)  # the cache is down (restarting): try again shortly
        stop.wait(max(1.0 / rate - (time.monotonic() - started), 0.0))


def main(argv: list[str]) -> int:
    from sregym_appkit import logs

    logs.configure(JOB)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda _s, _f: stop.set())
    addr = os.environ.get("CACHE_ADDR", "valkey-cart:6379")
    threads = max(1, min(16, int(os.environ.get("CACHE_FLOOD_THREADS", "10"))))
    rate = max(0.1, min(5.0, float(os.environ.get("CACHE_FLOOD_KEYS_PER_S", "2"))))
    size = max(1024, min(4 << 20, int(os.environ.get("CACHE_FLOOD_VALUE_BYTES", str(VALUE_BYTES)))))
    deadline = time.monotonic() + max(1.0, min(6 * 3600.0, float(os.environ.get("CACHE_FLOOD_DURATION_S", "3600"))))
    value = b"x" * size
    logs.info("loadtest_started", target=addr, threads=threads, keys_per_s=rate * threads, value_bytes=size)
    workers = [threading.Thread(target=_writer, args=(addr, i, value, rate, stop, deadline), daemon=True)
               for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    logs.info("loadtest_finished", reason="stopped" if stop.is_set() else "duration reached")
    return 0


# --- the fault -----------------------------------------------------------------------------------

def job(image: str, namespace: str, service: str = "valkey-cart", port: int = 6379) -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": JOB, "app.kubernetes.io/part-of": "astronomy-shop"}
    env = {"CACHE_ADDR": f"{service}:{port}", "CACHE_FLOOD_THREADS": "10", "CACHE_FLOOD_KEYS_PER_S": "2",
           "CACHE_FLOOD_VALUE_BYTES": str(VALUE_BYTES), "CACHE_FLOOD_DURATION_S": "3600"}
    container = {"name": "loadtest", "image": image, "args": ["cache-flood"],
                 "env": [{"name": k, "value": v} for k, v in env.items()],
                 "resources": {"requests": {"cpu": "20m", "memory": "48Mi"},
                               "limits": {"cpu": "300m", "memory": "128Mi"}}}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": JOB, "namespace": namespace, "labels": labels},
            "spec": {"backoffLimit": 0, "activeDeadlineSeconds": 3600,
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 5,
                                           "containers": [container]}}}}


def _image(ctx: FaultContext) -> str:
    cart = kube.get(ctx, "deployment", "cart", missing_ok=True)
    for c in ((cart or {}).get("spec", {}).get("template", {}).get("spec", {}).get("containers") or []):
        if str(c.get("image", "")).startswith(IMAGE_REPO + ":"):
            return str(c["image"])
    return f"{IMAGE_REPO}:{IMAGE_TAG}"


def inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    port = target.component.ports[0] if target.component.ports else 6379
    kube.apply(ctx, job(_image(ctx), ctx.namespace, target.component.service_name or target.component.name, port))


def is_present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    return kube.exists(ctx, "job", JOB)


def _flood_pods(ctx: FaultContext) -> list[str]:
    out = ctx.kubectl("get", "pods", "-n", ctx.namespace, "-l", f"app.kubernetes.io/name={JOB}", "-o", "name",
                      check=False)
    return [line for line in out.split() if line.strip()]


def fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    """Delete the Job and its pods, then restart the cache (it comes back empty, out of its back-off)."""
    ctx.kubectl("delete", "job", JOB, "-n", ctx.namespace, "--ignore-not-found", "--cascade=foreground",
                "--wait=false")
    for pod in _flood_pods(ctx):
        ctx.kubectl("delete", pod, "-n", ctx.namespace, "--ignore-not-found", "--wait=false", "--grace-period=1",
                    check=False)
    kube.wait_until(lambda: not _flood_pods(ctx) and not kube.exists(ctx, "job", JOB), timeout=60, interval=1.0)
    kube.delete_pods(ctx, target)


def _values(target: Target, params: dict, state: dict) -> dict:
    return {"job": JOB, "keys": "loadtest:<thread>:<n>", "value_bytes": VALUE_BYTES, "writers": 10,
            "memory_limit": "256Mi", "maxmemory": "none (unbounded)", "outcome": "OOMKilled, CrashLoopBackOff"}


# the cause, not its symptoms: "OOMKilled", "out of memory" or "memory limit exceeded" alone also describe a
# limit set too low (memory-limit-too-small), which a diagnosis must not pass with
VOCABULARY = ("memory + flood*", "flood* + key*", "large keys", "big keys", "huge keys", "1 mb keys", "1 mib keys",
              "large values", "load test + cache", "loadtest", "job + flood*", "job + fill*", "fill* + cache + key*",
              "stuff* + key*")
MECHANISM = ("a Job (cart-cache-loadtest) floods the cart cache valkey-cart with 1 MiB keys until it exceeds its "
             "memory limit and is OOM-killed over and over")
SYMPTOMS = ("OOMKilled", "CrashLoopBackOff", "cart errors", "carts lost")


def faults() -> list[Any]:
    return [function_fault(
        name="cache-memory-flood", summary="a Job floods a Redis/Valkey cache with 1 MiB keys until it is OOM-killed",
        layer="datastore", selector=TargetSelector(kinds=("Deployment",), roles=("cache:redis",)),
        inject=inject, is_present=is_present, recover=fix, reference_fix=fix,
        resource_kind="Job", mechanism=MECHANISM, symptoms=SYMPTOMS,
        keywords=("OOMKilled", "memory", "flood", "Job", "cart-cache-loadtest", "valkey", "keys"),
        values=_values, vocabulary=VOCABULARY,
        prose="The Job {job} writes {value_bytes}-byte keys ({keys}) from {writers} threads into {component}, which has "
              "no maxmemory, so it passes its {memory_limit} memory limit and is {outcome}; carts are lost and cart "
              "calls fail. Deleting the Job and restarting {component} fixes it.")]
