"""Benchmark the observability servers over real HTTP: ingest rates, query latency, bounded memory.

Starts the log store and the trace store as subprocesses on 127.0.0.1, pushes a bounded volume,
runs queries and reports throughput, latency percentiles and RSS against the configured budgets.
Also times kube-state rendering for a synthetic cluster.

    python benchmarks/bench_observability.py [--log-mb 64] [--spans 100000] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import time

import httpx
import psutil
from sregym_observability.kube_state import render_kube_state


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(component: str, *extra: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "sregym_observability.serve", component, "--host",
                                "127.0.0.1", "--port", str(port), *extra],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/ready", timeout=1).status_code == 200:
                return process, url
        except httpx.HTTPError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit(f"{component} did not start")


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(round(q * (len(ordered) - 1))), len(ordered) - 1)]


def bench_logs(log_mb: int, budget_mb: int) -> dict:
    process, url = start("logs", "--no-collector", "--max-bytes", str(budget_mb * 2**20),
                         "--max-stream-bytes", str(budget_mb * 2**20 // 8))
    try:
        rss0 = psutil.Process(process.pid).memory_info().rss
        line = '{"level":"info","event":"request_served","path":"/hotels","latency_ms":12,"pad":"' + "x" * 120 + '"}'
        batch, sent_bytes, sent_lines = 1000, 0, 0
        base = time.time_ns() - 10**9
        started = time.perf_counter()
        i = 0
        while sent_bytes < log_mb * 2**20:
            values = [[str(base + i * batch + j), line] for j in range(batch)]
            if i % 50 == 0:
                values[-1][1] = '{"level":"error","event":"db_failed","error":"connection refused"}'
            httpx.post(url + "/loki/api/v1/push", timeout=30,
                       json={"streams": [{"stream": {"namespace": "hotel", "app": f"svc{i % 8}"}, "values": values}]})
            sent_bytes += batch * len(line)
            sent_lines += batch
            i += 1
        ingest_s = time.perf_counter() - started
        latencies = []
        for k in range(40):
            q0 = time.perf_counter()
            httpx.get(url + "/loki/api/v1/query_range", timeout=30, params={
                "query": f'{{namespace="hotel", app="svc{k % 8}"}} |= "error"', "limit": "100"})
            latencies.append((time.perf_counter() - q0) * 1000)
        stats = httpx.get(url + "/stats").json()
        rss = psutil.Process(process.pid).memory_info().rss
        return {"log_lines_per_s": round(sent_lines / ingest_s), "log_mb_per_s": round(sent_bytes / 2**20 / ingest_s, 1),
                "log_query_p50_ms": round(statistics.median(latencies), 1), "log_query_p95_ms": round(pct(latencies, 0.95), 1),
                "log_store_mb": round(stats["bytes"] / 2**20, 1), "log_budget_mb": budget_mb,
                "log_rss_growth_mb": round((rss - rss0) / 2**20, 1), "log_pushed_mb": log_mb}
    finally:
        stop(process)


def bench_traces(spans: int, max_spans: int) -> dict:
    process, url = start("traces", "--max-spans", str(max_spans))
    try:
        rss0 = psutil.Process(process.pid).memory_info().rss
        now = time.time_ns()
        started = time.perf_counter()
        per_batch = 1000
        for b in range(spans // per_batch):
            batch = []
            for i in range(per_batch):
                trace = f"{b:016x}{i // 5:016x}"
                batch.append({"traceId": trace, "spanId": f"{i + 1:016x}", "name": f"op{i % 5}",
                              "parentSpanId": f"{i:016x}" if i % 5 else "",
                              "startTimeUnixNano": str(now + i), "endTimeUnixNano": str(now + i + 50_000),
                              "status": {"code": 2 if i % 97 == 0 else 0}})
            httpx.post(url + "/v1/traces", timeout=30, json={"resourceSpans": [{"resource": {"attributes": [
                {"key": "service.name", "value": {"stringValue": f"svc{b % 6}"}}]}, "scopeSpans": [{"spans": batch}]}]})
        ingest_s = time.perf_counter() - started
        latencies = []
        for k in range(30):
            q0 = time.perf_counter()
            httpx.get(url + "/api/traces", timeout=30, params={"service": f"svc{k % 6}", "limit": "50",
                                                               "tags": '{"error":"true"}'})
            latencies.append((time.perf_counter() - q0) * 1000)
        stats = httpx.get(url + "/stats").json()
        rss = psutil.Process(process.pid).memory_info().rss
        return {"spans_per_s": round(spans / ingest_s), "trace_query_p50_ms": round(statistics.median(latencies), 1),
                "trace_query_p95_ms": round(pct(latencies, 0.95), 1), "spans_kept": stats["spans"],
                "max_spans": max_spans, "trace_rss_growth_mb": round((rss - rss0) / 2**20, 1)}
    finally:
        stop(process)


def bench_kube_state(pods: int) -> dict:
    objects = {"pods": [{"metadata": {"namespace": "hotel", "name": f"p{i}", "uid": f"u{i}", "labels": {"app": f"a{i % 10}"}},
                         "spec": {"nodeName": "node-1", "containers": [{"name": "c", "resources": {"limits": {"cpu": "1"}}}]},
                         "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                                    "containerStatuses": [{"name": "c", "ready": True, "restartCount": 0,
                                                           "state": {"running": {}}}]}} for i in range(pods)]}
    started = time.perf_counter()
    for _ in range(10):
        text = render_kube_state(objects)
    return {"kube_state_pods": pods, "kube_state_render_ms": round((time.perf_counter() - started) * 100, 2),
            "kube_state_series": sum(1 for line in text.splitlines() if line and not line.startswith("#"))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--log-mb", type=int, default=64)
    parser.add_argument("--log-budget-mb", type=int, default=16)
    parser.add_argument("--spans", type=int, default=100_000)
    parser.add_argument("--max-spans", type=int, default=20_000)
    parser.add_argument("--pods", type=int, default=300)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    results = {**bench_logs(args.log_mb, args.log_budget_mb), **bench_traces(args.spans, args.max_spans),
               **bench_kube_state(args.pods)}
    for key, value in results.items():
        print(f"{key:28} {value}")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=2)


if __name__ == "__main__":
    main()
