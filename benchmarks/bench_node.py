"""Benchmark the embedded cluster's node agent: pod start latency, restart latency, RSS per pod.

Runs an in-process API core (no HTTP) with real node agents, so the figures are the node agent's
own cost: process spawn, volumes, probes, status writes.

    python benchmarks/bench_node.py [--pods 30] [--nodes 2] [--json out.json] [--no-isolation]

As root, pods are isolated (own root filesystem, PID namespace, non-root uid: node/isolation.py);
``--no-isolation`` measures the same without, for comparison.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import statistics
import tempfile
import time
from pathlib import Path

import psutil
from sregym_cluster_embedded.client import new_local_cluster
from sregym_cluster_embedded.node import start_nodes
from sregym_cluster_embedded.settings import ClusterSettings

WEB = ("import http.server as h\n"
       "class H(h.BaseHTTPRequestHandler):\n"
       "    def do_GET(self): self.send_response(200); self.end_headers(); self.wfile.write(b'ok')\n"
       "    def log_message(self, *a): pass\n"
       "h.HTTPServer(('0.0.0.0', 8080), H).serve_forever()\n")


def web_pod(name: str, node: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1, "containers": [{
                "name": "web", "image": "python:3.11", "command": ["python", "-c", WEB],
                "readinessProbe": {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 1}}]}}


def is_ready(pod: dict) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod.get("status", {}).get("conditions") or [])


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(round(q * (len(ordered) - 1))), len(ordered) - 1)]


def tree_memory(pid: int) -> tuple[int, int]:
    rss = pss = 0
    try:
        procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return 0, 0
    for proc in procs:
        try:
            info = proc.memory_full_info()
            rss += info.rss
            pss += getattr(info, "pss", info.rss)
        except psutil.Error:
            continue
    return rss, pss


async def bench(pods: int, nodes: int) -> dict:
    state = Path(tempfile.mkdtemp(prefix="sregym-bench-node-", dir="/tmp"))
    state.chmod(0o755)
    settings = ClusterSettings(name=f"benchnode{random.randint(0, 10**6)}", state_dir=state, nodes=nodes,
                               pod_cidr_prefix=f"127.{random.randint(100, 250)}", node_cpu="8", node_memory="16Gi")
    client = new_local_cluster(settings)
    node_set = await start_nodes(client, settings)
    results: dict = {"pods": pods, "nodes": nodes, "backend": node_set.backend.name,
                     "shim": "LD_PRELOAD" if node_set.shim else "sitecustomize",
                     "isolation": "on" if node_set.isolation is not None else "off"}
    try:
        names = [f"web-{i}" for i in range(pods)]
        created: dict[str, float] = {}
        ready_at: dict[str, float] = {}
        start = time.monotonic()
        for i, name in enumerate(names):
            created[name] = time.monotonic()
            await client.create("pods", web_pod(name, f"node-{i % nodes + 1}"))
        while len(ready_at) < pods and time.monotonic() - start < 180:
            for pod in await client.list("pods", "default"):
                name = pod["metadata"]["name"]
                if name not in ready_at and is_ready(pod):
                    ready_at[name] = time.monotonic()
            await asyncio.sleep(0.05)
        latencies = [ready_at[n] - created[n] for n in ready_at]
        results["all_ready_s"] = round(max(ready_at.values()) - start, 3) if ready_at else None
        results["ready_pods"] = len(ready_at)
        results["start_to_ready_p50_s"] = round(statistics.median(latencies), 3)
        results["start_to_ready_p95_s"] = round(percentile(latencies, 0.95), 3)

        await asyncio.sleep(2)  # let imports settle before measuring memory
        memory = []
        for agent in node_set.agents.values():
            for worker in agent.workers.values():
                runner = worker.runners[0]
                if runner.process is not None:
                    memory.append(tree_memory(runner.process.pid))
        results["rss_per_pod_mib"] = round(statistics.mean(m[0] for m in memory) / 2**20, 1)
        results["pss_per_pod_mib"] = round(statistics.mean(m[1] for m in memory) / 2**20, 1)
        agent_rss = psutil.Process(os.getpid()).memory_info().rss
        results["agent_process_rss_mib"] = round(agent_rss / 2**20, 1)

        restarts = []
        for name in names[: min(5, pods)]:
            worker = next(a.find("default", name) for a in node_set.agents.values() if a.find("default", name))
            runner = worker.runners[0]
            before = runner.restart_count
            os.kill(runner.process.pid, signal.SIGKILL)
            killed = time.monotonic()
            while True:
                pod = await client.get("pods", name, "default")
                status = pod["status"]["containerStatuses"][0]
                if status["restartCount"] > before and is_ready(pod):
                    restarts.append(time.monotonic() - killed)
                    break
                if time.monotonic() - killed > 30:
                    break
                await asyncio.sleep(0.02)
        results["restart_to_ready_median_s"] = round(statistics.median(restarts), 3) if restarts else None

        stop_start = time.monotonic()
        await node_set.stop()
        results["stop_all_s"] = round(time.monotonic() - stop_start, 3)
        results["survivors"] = len([p for p in node_set.pids if psutil.pid_exists(p)])
    finally:
        await node_set.stop()
        shutil.rmtree(state, ignore_errors=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=30)
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--no-isolation", action="store_true", help="run pods without isolation (root only)")
    args = parser.parse_args()
    if args.no_isolation:
        os.environ["SREGYM_POD_ISOLATION"] = "0"
    results = asyncio.run(bench(args.pods, args.nodes))
    for key, value in results.items():
        print(f"{key:28} {value}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
