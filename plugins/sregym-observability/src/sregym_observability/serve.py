"""Run one observability component as a long-lived server (the ``sregym/observability`` image).

    python -m sregym_observability.serve logs      --port 3100  [--kubeconfig K] [--namespaces a,b]
    python -m sregym_observability.serve traces    --port 16686 (OTLP/HTTP on the same port: POST /v1/traces)
                                                   [--otlp-port 4318] (OTLP/HTTP only, for the app's pods)
    python -m sregym_observability.serve exporters --port 8080  [--stats-url URL ...]
        (/metrics kube-state, /metrics/cadvisor, /sd/pods and /sd/endpoints as Prometheus HTTP SD)
    python -m sregym_observability.serve all --logs-port 3100 --traces-port 16686 --exporters-port 8080

Kubernetes credentials: ``--kubeconfig``/``$KUBECONFIG``, ``--api-server`` + ``--token-file`` +
``--ca-file``, or the in-cluster service account. ``logs --no-collector`` serves pushes only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import Sequence

import structlog
from aiohttp import web

from sregym_core.errors import ClusterError

from .cadvisor import HttpContainerStatsSource, render_cadvisor, with_spec_limits
from .collector import LogCollector
from .jaeger_api import add_ingest_routes, add_trace_routes
from .k8s_sd import endpoints_target_groups, pod_target_groups
from .kube_state import RESOURCE_PATHS, render_kube_state
from .kubeapi import KubeApiError, KubeClient, resolve_access
from .logstore import LogRetention, LogStore
from .loki_api import add_loki_routes
from .promtext import CONTENT_TYPE
from .tracestore import TraceRetention, TraceStore

log = structlog.get_logger()
COMPONENTS = ("logs", "traces", "exporters", "all")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m sregym_observability.serve", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("component", choices=COMPONENTS)
    parser.add_argument("--host", default=os.environ.get("SREGYM_OBS_HOST", "0.0.0.0"))
    parser.add_argument("--port", type=int, default=None)
    parser.add_argument("--logs-port", type=int, default=None, help="all: port of the log store")
    parser.add_argument("--traces-port", type=int, default=None, help="all: port of the trace store")
    parser.add_argument("--exporters-port", type=int, default=None, help="all: port of the exporters")
    parser.add_argument("--kubeconfig", default=None)
    parser.add_argument("--api-server", default=None)
    parser.add_argument("--token-file", default=None)
    parser.add_argument("--ca-file", default=None)
    parser.add_argument("--sa-dir", default=None,
                        help="the pod's service-account directory (default /var/run/secrets/kubernetes.io/serviceaccount); "
                             "given as an argument so a node that rewrites container paths maps it")
    parser.add_argument("--namespaces", default="", help="comma-separated namespaces to collect (default all)")
    parser.add_argument("--exclude-namespaces", default="",
                        help="logs and exporters: comma-separated namespaces never collected, listed or discovered")
    parser.add_argument("--no-collector", action="store_true", help="logs: accept pushes only")
    parser.add_argument("--max-bytes", type=int, default=64 * 1024 * 1024, help="logs: global byte budget")
    parser.add_argument("--max-stream-bytes", type=int, default=8 * 1024 * 1024)
    parser.add_argument("--max-spans", type=int, default=200_000, help="traces: span budget")
    parser.add_argument("--otlp-port", type=int, default=None,
                        help="traces: also accept OTLP/HTTP on this port, which serves nothing else (no query API)")
    parser.add_argument("--retention", type=float, default=7200.0, help="max age in seconds")
    parser.add_argument("--stats-url", action="append", default=[], help="exporters: node agent stats URL")
    return parser


def _excluded(args: argparse.Namespace) -> tuple[str, ...]:
    return tuple(n for n in args.exclude_namespaces.split(",") if n)


DEFAULT_PORTS = {"logs": 3100, "traces": 16686, "exporters": 8080}


def _kube(args: argparse.Namespace) -> KubeClient:
    return KubeClient(resolve_access(args.kubeconfig, server=args.api_server, token_file=args.token_file,
                                     ca_file=args.ca_file, sa_dir=args.sa_dir))


async def _periodic(seconds: float, action) -> None:
    while True:
        await asyncio.sleep(seconds)
        action()


async def run_logs(args: argparse.Namespace, app: web.Application, tasks: list[asyncio.Task]) -> list:
    store = LogStore(LogRetention(max_bytes=args.max_bytes, max_stream_bytes=args.max_stream_bytes,
                                  max_age_s=args.retention))
    add_loki_routes(app, store)
    tasks.append(asyncio.create_task(_periodic(10.0, store.expire)))
    cleanups: list = []
    if not args.no_collector:
        try:
            kube = await _kube(args).__aenter__()
        except ClusterError as err:
            # The push API and queries stay useful without the collector; say why it is off.
            log.error("log_collector_disabled", error=err.message, hints=list(err.hints))
            print(f"sregym-observability logs: collector disabled: {err.message}", file=sys.stderr, flush=True)
            return cleanups
        cleanups.append(kube.close)
        namespaces = tuple(n for n in args.namespaces.split(",") if n)
        tasks.append(asyncio.create_task(LogCollector(kube, store, namespaces=namespaces,
                                                      exclude_namespaces=_excluded(args)).run()))
    return cleanups


async def run_traces(args: argparse.Namespace, app: web.Application, tasks: list[asyncio.Task]) -> list:
    store = TraceStore(TraceRetention(max_spans=args.max_spans, max_age_s=args.retention))
    add_trace_routes(app, store)
    tasks.append(asyncio.create_task(_periodic(10.0, store.expire)))
    if args.otlp_port is None:
        return []
    ingest = web.Application(client_max_size=64 * 1024 * 1024)
    add_ingest_routes(ingest, store)
    runner = web.AppRunner(ingest, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, args.host, args.otlp_port).start()
    print(f"sregym-observability traces: OTLP/HTTP only on {args.host}:{args.otlp_port}", flush=True)
    return [runner.cleanup]


class KubeStateExporter:
    """Lists the cluster on scrape (cached briefly, so several scrapers do not multiply API load)."""

    def __init__(self, kube: KubeClient, cache_s: float = 2.0, hidden_namespaces: set[str] | None = None) -> None:
        self.kube = kube
        self.cache_s = cache_s
        self.hidden = hidden_namespaces or set()
        self._cached: tuple[float, str] | None = None
        self._lock = asyncio.Lock()

    def _visible(self, kind: str, obj: dict) -> bool:
        return _namespace_of(kind, obj) not in self.hidden

    async def text(self) -> str:
        async with self._lock:
            if self._cached and time.monotonic() - self._cached[0] < self.cache_s:
                return self._cached[1]
            keys = list(RESOURCE_PATHS)
            results = await asyncio.gather(*(self.kube.list_items(RESOURCE_PATHS[k]) for k in keys),
                                           return_exceptions=True)
            objects = {}
            for key, result in zip(keys, results, strict=True):
                if isinstance(result, KubeApiError) and result.status in (403, 404):
                    continue  # a resource this cluster does not serve or we may not read
                if isinstance(result, BaseException):
                    raise result
                objects[key] = [o for o in result if self._visible(key, o)]
            text = render_kube_state(objects)
            self._cached = (time.monotonic(), text)
            return text


async def run_exporters(args: argparse.Namespace, app: web.Application, tasks: list[asyncio.Task]) -> list:
    kube = await _kube(args).__aenter__()
    hidden = set(_excluded(args))
    exporter = KubeStateExporter(kube, hidden_namespaces=hidden)
    stats = HttpContainerStatsSource(args.stats_url)

    async def kube_state(request: web.Request) -> web.Response:
        try:
            text = await exporter.text()
        except Exception as err:  # noqa: BLE001 - reported to the scraper, never crashes the server
            return web.Response(status=503, text=f"cannot list the cluster: {err}\n")
        return web.Response(text=text, headers={"Content-Type": CONTENT_TYPE})

    async def cadvisor(request: web.Request) -> web.Response:
        found = await asyncio.to_thread(stats.container_stats)
        if found:
            try:
                found = with_spec_limits(found, await kube.list_items("/api/v1/pods"))
            except Exception as err:  # noqa: BLE001 - limits are an extra; the usage series still count
                log.warning("pod_list_failed", error=str(err))
        return web.Response(text=render_cadvisor(found), headers={"Content-Type": CONTENT_TYPE})

    async def sd(request: web.Request) -> web.Response:
        wanted = {n for n in request.query.get("namespace", "").split(",") if n}
        try:
            if request.match_info["role"] == "pods":
                groups = pod_target_groups(await kube.list_items("/api/v1/pods"))
            else:
                endpoints, services, pods = await asyncio.gather(
                    kube.list_items("/api/v1/endpoints"), kube.list_items("/api/v1/services"),
                    kube.list_items("/api/v1/pods"))
                groups = endpoints_target_groups(endpoints, services, pods)
        except Exception as err:  # noqa: BLE001 - Prometheus keeps its last good targets on errors
            return web.Response(status=503, text=f"cannot list the cluster: {err}\n")
        if wanted:
            groups = [g for g in groups if g["labels"].get("__meta_kubernetes_namespace") in wanted]
        groups = [g for g in groups if g["labels"].get("__meta_kubernetes_namespace") not in hidden]
        return web.json_response(groups)

    app.router.add_get("/metrics", kube_state)
    app.router.add_get("/metrics/cadvisor", cadvisor)
    app.router.add_get("/sd/{role:pods|endpoints}", sd)
    app.router.add_get("/ready", _ok)
    return [kube.close]


async def _ok(request: web.Request) -> web.Response:
    return web.Response(text="ready\n")


def _namespace_of(kind: str, obj: dict) -> str:
    meta = obj.get("metadata") or {}
    return meta.get("name", "") if kind == "namespaces" else meta.get("namespace", "")


RUNNERS = {"logs": run_logs, "traces": run_traces, "exporters": run_exporters}


def _port_of(args: argparse.Namespace, component: str) -> int:
    if args.component != "all" and args.port is not None:
        return args.port
    specific = getattr(args, f"{component}_port", None)
    return specific if specific is not None else DEFAULT_PORTS[component]


async def serve(args: argparse.Namespace, *, ready: asyncio.Event | None = None) -> None:
    tasks: list[asyncio.Task] = []
    cleanups: list = []
    runners: list[web.AppRunner] = []
    # "all" runs the three servers in one process (one interpreter instead of three: ~90 MiB less per
    # environment), each on its own port exactly as if it ran alone.
    components = ("logs", "traces", "exporters") if args.component == "all" else (args.component,)
    for component in components:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        cleanups += await RUNNERS[component](args, app, tasks)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        runners.append(runner)
        port = _port_of(args, component)
        await web.TCPSite(runner, args.host, port).start()
        log.info("observability_server_started", component=component, host=args.host, port=port)
        print(f"sregym-observability {component} listening on {args.host}:{port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    if ready is not None:
        ready.set()
    try:
        await stop.wait()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for runner in runners:
            await runner.cleanup()
        for cleanup in cleanups:
            await cleanup()


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        asyncio.run(serve(args))
    except KeyboardInterrupt:
        pass
    except Exception as err:  # noqa: BLE001 - one clear line for the pod's log, then a non-zero exit
        print(f"sregym-observability {args.component}: {err}", file=sys.stderr, flush=True)
        for hint in getattr(err, "hints", ()):
            print(f"  hint: {hint}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
