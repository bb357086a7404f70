"""Benchmark Social Network on a fresh embedded cluster: deploy time, memory, request latency.

    python benchmarks/bench_social_network.py [--seconds 20] [--json out.json]

Measures ``deploy()`` (kubectl apply → every pod Ready → the workload generator succeeding with
correct content), then the PSS and RSS of the cluster's process tree with the app running (PSS
counts shared pages once, so it is what the app really costs), and the workload's own latency
percentiles per endpoint over ``--seconds`` at its default 5 requests/s.

Budget (issue #20): ``sregym deploy social-network`` serves its workload in under 60 s on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil


def _tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def memory(pid: int) -> dict[str, float]:
    pss = rss = 0
    procs = _tree(pid)
    for proc in procs:
        try:
            info = proc.memory_full_info()
            pss += info.pss
            rss += info.rss
        except (psutil.Error, AttributeError):
            pass
    return {"pss_mib": round(pss / 2**20, 1), "rss_mib": round(rss / 2**20, 1), "processes": len(procs)}


def run(seconds: float) -> dict[str, Any]:
    from sregym_app_social_network.deploy import Kubectl, deploy, workload_stats
    from sregym_cluster_embedded import cluster

    home = Path(tempfile.mkdtemp(prefix="bench-sn-"))
    home.chmod(0o755)
    os.environ["SREGYM_HOME"] = str(home)
    name = f"bench-sn-{os.getpid() % 100000}"
    try:
        t0 = time.perf_counter()
        info = cluster.up(name, 1, owner_pid=os.getpid())
        t1 = time.perf_counter()
        result = deploy(info.kubeconfig, timeout=300)
        time.sleep(seconds)
        stats = workload_stats(Kubectl(info.kubeconfig), window=seconds) or {}
        return {"cluster_up_s": round(t1 - t0, 2), "deploy_to_ready_s": round(result["ready_s"], 2),
                "deploy_to_workload_ok_s": round(result.get("workload_ok_s", 0), 2),
                **({f"cluster_plus_app_{k}": v for k, v in memory(info.pid).items()} if info.pid else {}),
                "workload": {"count": stats.get("count"), "success_rate": stats.get("success_rate"),
                             "content_errors": stats.get("content_errors"),
                             "p50_ms": stats.get("p50_ms"), "p95_ms": stats.get("p95_ms"), "p99_ms": stats.get("p99_ms"),
                             "by_endpoint": {k: {m: v.get(m) for m in ("count", "p50_ms", "p95_ms", "p99_ms")}
                                             for k, v in (stats.get("by_endpoint") or {}).items()}}}
    finally:
        cluster.down(name, forget=True)
        shutil.rmtree(home, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    result = run(args.seconds)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
