"""Benchmark the embedded API server: server-side latency of list/get/patch and watch fan-out at
30/300/3000 pods, and cluster start-up time.

Latencies are measured inside the server (the aiohttp middleware: request parsed -> response
built, TLS and sockets excluded), as the budget asks. Watch fan-out is end to end: one PATCH, the
time until every one of W watchers has read the event.

    python benchmarks/bench_apiserver.py [--sizes 30,300,3000] [--requests 50] [--watchers 20]
                                         [--startups 3] [--json out.json]

Budgets (DESIGN.md): `cluster up` < 1 s; list of 30 pods (Table, as kubectl get pods) < 10 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import ssl
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins" / "sregym-cluster-embedded" / "src"))

from sregym_cluster_embedded.apiserver.server import RunningApiServer  # noqa: E402
from sregym_cluster_embedded.settings import ClusterSettings  # noqa: E402

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"


def realistic_pod(i: int, namespace: str) -> dict[str, Any]:
    stamp = "2026-01-01T00:00:00Z"
    name = f"web-7d4b9c8f6d-{i:05d}"
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace,
                     "labels": {"app": "web", "pod-template-hash": "7d4b9c8f6d", "shard": str(i % 10)}},
        "spec": {"nodeName": f"node-{i % 3 + 1}", "containers": [{
            "name": "web", "image": "nginx:1.25", "ports": [{"containerPort": 80}],
            "env": [{"name": f"VAR_{k}", "value": str(k)} for k in range(5)],
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}},
            "readinessProbe": {"httpGet": {"path": "/", "port": 80}}}]},
        "status": {"phase": "Running", "podIP": f"127.42.{i // 250}.{i % 250 + 2}", "startTime": stamp,
                   "conditions": [{"type": t, "status": "True", "lastTransitionTime": stamp}
                                  for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
                   "containerStatuses": [{"name": "web", "ready": True, "restartCount": 0, "image": "nginx:1.25",
                                          "imageID": "", "started": True,
                                          "state": {"running": {"startedAt": stamp}}}]},
    }


class Server:
    def __init__(self, state_dir: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.srv = RunningApiServer(ClusterSettings(name="bench", state_dir=state_dir))
        self.run(self.srv.start())
        cfg = yaml.safe_load(self.srv.admin_kubeconfig.read_text())
        self.token = cfg["users"][0]["user"]["token"]
        self.ctx = ssl.create_default_context(cafile=str(state_dir / "pki" / "ca.crt"))

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(120)

    def call(self, fn: Any) -> Any:
        async def wrap() -> Any:
            return fn()

        return self.run(wrap())

    def conn(self) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection("127.0.0.1", self.srv.settings.api_port, context=self.ctx, timeout=60)

    def stop(self) -> None:
        self.run(self.srv.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def fill(server: Server, namespace: str, count: int) -> None:
    core = server.srv.core
    pods = core.registry.by_key("pods")
    nss = core.registry.by_key("namespaces")

    def make() -> None:
        core.create(nss, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        for i in range(count):
            pod = realistic_pod(i, namespace)
            status = pod.pop("status")
            created = core.create(pods, namespace, pod)
            core.update(pods, namespace, created["metadata"]["name"], dict(created, status=status),
                        subresource="status")

    server.call(make)


def timed(server: Server, key: str, fn: Any, n: int) -> float:
    """Median server-side milliseconds of ``n`` requests made by ``fn``."""
    api = server.srv.api
    api.timings.clear()
    api.record_timings = True
    for _ in range(n):
        fn()
    api.record_timings = False
    samples = api.timings.get(key, [])
    return statistics.median(samples) * 1000 if samples else float("nan")


def request(conn: http.client.HTTPSConnection, token: str, method: str, path: str, body: bytes | None = None,
            headers: dict[str, str] | None = None) -> bytes:
    conn.request(method, path, body=body, headers={"Authorization": f"Bearer {token}", **(headers or {})})
    resp = conn.getresponse()
    data = resp.read()
    if resp.status >= 300:
        raise RuntimeError(f"{method} {path}: {resp.status} {data[:200]!r}")
    return data


def watch_fanout(server: Server, namespace: str, watchers: int, rounds: int) -> float:
    """Median ms from a PATCH until all ``watchers`` HTTP watches have read the MODIFIED event."""
    name = "web-7d4b9c8f6d-00000"
    conns = []
    for _ in range(watchers):
        c = server.conn()
        c.request("GET", f"/api/v1/namespaces/{namespace}/pods?watch=true&resourceVersion={server.srv.core.store.rv}"
                         f"&fieldSelector=metadata.name={name}&timeoutSeconds=120",
                  headers={"Authorization": f"Bearer {server.token}"})
        conns.append((c, c.getresponse()))
    results = []
    patcher = server.conn()
    for r in range(rounds):
        t0 = time.perf_counter()
        request(patcher, server.token, "PATCH", f"/api/v1/namespaces/{namespace}/pods/{name}",
                json.dumps({"metadata": {"labels": {"round": str(r)}}}).encode(),
                {"Content-Type": "application/merge-patch+json"})
        for _, resp in conns:
            line = resp.readline()
            assert b'"MODIFIED"' in line, line[:100]
        results.append((time.perf_counter() - t0) * 1000)
    for c, _ in conns:
        c.close()
    patcher.close()
    return statistics.median(results)


def bench_sizes(sizes: list[int], n: int, watchers: int) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(Path(tmp) / "state")
        try:
            for size in sizes:
                ns = f"bench-{size}"
                t0 = time.perf_counter()
                fill(server, ns, size)
                fill_s = time.perf_counter() - t0
                conn = server.conn()
                base = f"/api/v1/namespaces/{ns}/pods"
                row = {"objects": size, "fill_s": round(fill_s, 2)}
                reps = max(5, n if size <= 300 else n // 5)
                row["list_table_ms"] = timed(server, "GET list", lambda base=base, conn=conn: request(
                    conn, server.token, "GET", f"{base}?limit=500", headers={"Accept": TABLE}), reps)
                row["list_json_ms"] = timed(server, "GET list", lambda base=base, conn=conn: request(
                    conn, server.token, "GET", base, headers={"Accept": "application/json"}), reps)
                row["list_selector_ms"] = timed(server, "GET list", lambda base=base, conn=conn: request(
                    conn, server.token, "GET", f"{base}?labelSelector=shard%3D3"), reps)
                row["get_ms"] = timed(server, "GET item", lambda base=base, conn=conn: request(
                    conn, server.token, "GET", f"{base}/web-7d4b9c8f6d-00001"), n)
                counter = iter(range(10**9))
                row["patch_ms"] = timed(server, "PATCH item", lambda base=base, conn=conn, counter=counter: request(
                    conn, server.token, "PATCH", f"{base}/web-7d4b9c8f6d-00001",
                    json.dumps({"metadata": {"annotations": {"n": str(next(counter))}}}).encode(),
                    {"Content-Type": "application/strategic-merge-patch+json"}), n)
                row["watch_fanout_ms"] = watch_fanout(server, ns, watchers, rounds=10)
                conn.close()
                rows.append(row)
                print(json.dumps(row), flush=True)
        finally:
            server.stop()
    return rows


def bench_startup(count: int) -> dict[str, Any]:
    from sregym_cluster_embedded import cluster

    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        old = os.environ.get("SREGYM_HOME")
        os.environ["SREGYM_HOME"] = tmp
        try:
            for nodes in (0, 1):
                walls, inner, downs = [], [], []
                for i in range(count):
                    t0 = time.perf_counter()
                    info = cluster.up(f"bench-{nodes}-{i}", nodes)
                    walls.append(time.perf_counter() - t0)
                    inner.append(info.startup_seconds or float("nan"))
                    t0 = time.perf_counter()
                    cluster.down(info.name, forget=True)
                    downs.append(time.perf_counter() - t0)
                out[f"nodes={nodes}"] = {"up_s": round(statistics.median(walls), 3),
                                         "in_process_s": round(statistics.median(inner), 3),
                                         "down_s": round(statistics.median(downs), 3)}
                print(json.dumps({f"startup nodes={nodes}": out[f"nodes={nodes}"]}), flush=True)
        finally:
            if old is None:
                os.environ.pop("SREGYM_HOME", None)
            else:
                os.environ["SREGYM_HOME"] = old
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="30,300,3000")
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--watchers", type=int, default=20)
    parser.add_argument("--startups", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if any(s <= 0 or s > 20000 for s in sizes) or not 1 <= args.requests <= 1000 or not 1 <= args.watchers <= 200:
        parser.error("sizes must be 1..20000, requests 1..1000, watchers 1..200")
    rows = bench_sizes(sizes, args.requests, args.watchers)
    startup = bench_startup(max(1, min(args.startups, 10)))
    print()
    print(f"{'objects':>8} {'list(Table)':>12} {'list(JSON)':>11} {'list(sel)':>10} {'get':>7} {'patch':>7} "
          f"{'watch x' + str(args.watchers):>10}   (server-side median ms; watch is end to end)")
    for r in rows:
        print(f"{r['objects']:>8} {r['list_table_ms']:>12.2f} {r['list_json_ms']:>11.2f} {r['list_selector_ms']:>10.2f} "
              f"{r['get_ms']:>7.2f} {r['patch_ms']:>7.2f} {r['watch_fanout_ms']:>10.2f}")
    for k, v in startup.items():
        print(f"startup {k}: up {v['up_s']} s (in-process {v['in_process_s']} s), down {v['down_s']} s")
    thirty = next((r for r in rows if r["objects"] == 30), None)
    if thirty:
        print(f"budget list of 30 pods < 10 ms: {'OK' if thirty['list_table_ms'] < 10 else 'OVER'} "
              f"({thirty['list_table_ms']:.2f} ms)")
    up0 = startup.get("nodes=0", {}).get("up_s")
    if up0 is not None:
        print(f"budget cluster up < 1 s: {'OK' if up0 < 1 else 'OVER'} ({up0} s)")
    if args.json:
        args.json.write_text(json.dumps({"sizes": rows, "startup": startup}, indent=2))


if __name__ == "__main__":
    main()
