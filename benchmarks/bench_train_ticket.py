"""Benchmark TrainTicket on a fresh embedded cluster: deploy time and the running app's memory.

Times ``kubectl apply`` → every pod Ready → the workload succeeding (>= 95 % over 5 s, as the
conductor waits), and the PSS (shared pages divided among their users) of the cluster's process
tree before and after the deploy; the difference is what the app costs (27 Python services,
MariaDB, flagd, the workload generator). No observability stack.

    python benchmarks/bench_train_ticket.py [--json out.json]

Budget (issue #21): deployed and serving in under 90 s on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

NAMESPACES = ("train-ticket", "train-ticket-workload")


def tree_pss(pid: int) -> tuple[int, int]:
    """(PSS bytes, process count) of ``pid`` and its descendants."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0, 0
    total = count = 0
    for proc in procs:
        try:
            total += proc.memory_full_info().pss
            count += 1
        except (psutil.Error, AttributeError):
            pass
    return total, count


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    binary = str(Path(sys.executable).parent / "kubectl")
    return subprocess.run([binary, "--kubeconfig", str(kubeconfig), *args], input=stdin, capture_output=True,
                          text=True, timeout=120).stdout


def not_ready(kubeconfig: Path) -> list[str]:
    waiting = []
    for ns in NAMESPACES:
        pods = json.loads(kubectl(kubeconfig, "get", "pods", "-n", ns, "-o", "json") or '{"items": []}')["items"]
        if not pods:
            waiting.append(f"{ns}: no pods")
        for pod in pods:
            conditions = {c["type"]: c["status"] for c in pod.get("status", {}).get("conditions", [])}
            if conditions.get("Ready") != "True":
                waiting.append(pod["metadata"]["name"])
    return waiting


def stats(kubeconfig: Path, window: float) -> dict[str, Any]:
    raw = kubectl(kubeconfig, "get", "--raw",
                  f"/api/v1/namespaces/train-ticket-workload/services/load-generator:8089/proxy/stats?window={window:g}")
    try:
        return json.loads(raw)
    except ValueError:
        return {}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    from sregym_app_train_ticket.manifests import render_yaml
    from sregym_cluster_embedded import cluster

    home = Path(tempfile.mkdtemp(prefix="bench-train-ticket-"))
    home.chmod(0o755)
    os.environ["SREGYM_HOME"] = str(home)
    name = f"bench-tt-{os.getpid() % 100000}"
    try:
        t0 = time.perf_counter()
        info = cluster.up(name, 1, owner_pid=os.getpid())
        t1 = time.perf_counter()
        time.sleep(3)
        pss_before, procs_before = tree_pss(info.pid)
        t2 = time.perf_counter()
        kubectl(info.kubeconfig, "apply", "-f", "-", stdin=render_yaml())
        while not_ready(info.kubeconfig) and time.perf_counter() - t2 < 600:
            time.sleep(1)
        t3 = time.perf_counter()
        while time.perf_counter() - t2 < 600:
            s = stats(info.kubeconfig, 5)
            if (s.get("count") or 0) > 0 and (s.get("success_rate") or 0) >= 0.95:
                break
            time.sleep(1)
        t4 = time.perf_counter()
        time.sleep(20)
        pss_after, procs_after = tree_pss(info.pid)
        final = stats(info.kubeconfig, 20)
        result = {"cluster_up_s": round(t1 - t0, 1), "apply_to_all_ready_s": round(t3 - t2, 1),
                  "apply_to_workload_ok_s": round(t4 - t2, 1), "app_pss_mib": round((pss_after - pss_before) / 2**20, 1),
                  "app_processes": procs_after - procs_before, "cluster_plus_app_pss_mib": round(pss_after / 2**20, 1),
                  "workload_20s": {k: final.get(k) for k in ("count", "success_rate", "content_errors", "p50_ms",
                                                             "p95_ms")},
                  "budget_deploy_s": 90}
    finally:
        cluster.down(name, forget=True)
        shutil.rmtree(home, ignore_errors=True)
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
