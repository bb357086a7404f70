"""Benchmark Hotel Reservation as local processes: start-to-ready time and the whole app's RSS.

Phases timed separately: datastores (initdb + PostgreSQL + 3 memcached), migrations (role, schema,
seed for six databases), services to Ready (every /readyz answers 200). RSS is summed over every
process of the app (PostgreSQL backends included; shared pages are counted once per process, so
the figure is an upper bound) at idle and again after a burst of workload.

    python benchmarks/bench_hotel.py [--rounds 2] [--rate 50] [--seconds 10] [--json out.json]
    python benchmarks/bench_hotel.py --embedded      # also: deploy on a fresh embedded cluster

``--embedded`` measures ``deploy()`` on the embedded cluster (kubectl apply → every pod Ready →
workload succeeding) and the RSS/PSS of the cluster process tree with the app running.

Budgets (DESIGN.md): hotel-reservation deployed, every pod Ready < 20 s (on the embedded cluster;
this local-process figure is its floor); one full environment (app + observability) < 1 GiB RSS.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "apps" / "sregym-app-hotel-reservation" / "src"))

from sregym_app_hotel_reservation.localrun import LocalApp, free_port  # noqa: E402


def _tree(pids: list[int]) -> list[psutil.Process]:
    found: dict[int, psutil.Process] = {}
    for pid in pids:
        try:
            root = psutil.Process(pid)
            for proc in [root, *root.children(recursive=True)]:
                found[proc.pid] = proc
        except psutil.Error:
            pass
    return list(found.values())


def tree_rss(pids: list[int]) -> tuple[int, int]:
    """(total RSS in bytes, process count) of the given processes and all their descendants."""
    total = 0
    procs = _tree(pids)
    for proc in procs:
        try:
            total += proc.memory_info().rss
        except psutil.Error:
            pass
    return total, len(procs)


def tree_pss(pids: list[int]) -> int:
    """Total PSS (shared pages divided among their users): the memory the app really costs."""
    total = 0
    for proc in _tree(pids):
        try:
            total += proc.memory_full_info().pss
        except (psutil.Error, AttributeError):
            pass
    return total


def run_workload(app: LocalApp, rate: float, seconds: float) -> tuple[dict[str, Any], int]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "sregym_app_hotel_reservation.serve", "workload",
                             "--target", app.frontend_url, "--host", "127.0.0.1", "--port", str(port),
                             "--rate", str(rate), "--duration", str(seconds), "--seed", "5"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(seconds + 3)
        rss, _ = tree_rss([proc.pid])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats?window={seconds + 5}", timeout=5) as resp:
            return json.loads(resp.read()), rss
    finally:
        proc.terminate()
        proc.wait(10)


def one_round(rate: float, seconds: float, with_workload: bool) -> dict[str, Any]:
    app = LocalApp(Path(tempfile.mkdtemp(prefix="bench-hotel-")))
    try:
        t0 = time.perf_counter()
        app.start_datastores()
        t1 = time.perf_counter()
        app.migrate()
        t2 = time.perf_counter()
        app.start_services()
        app.wait_ready(timeout=120)
        t3 = time.perf_counter()
        time.sleep(1.0)
        idle_rss, nprocs = tree_rss(app.pids())
        result: dict[str, Any] = {
            "datastores_s": round(t1 - t0, 2), "migrate_s": round(t2 - t1, 2),
            "services_ready_s": round(t3 - t2, 2), "start_to_ready_s": round(t3 - t0, 2),
            "processes": nprocs, "rss_idle_mib": round(idle_rss / 2**20, 1),
            "pss_idle_mib": round(tree_pss(app.pids()) / 2**20, 1),
        }
        by_kind: dict[str, int] = {}
        for name, proc in app.procs.items():
            by_kind[name] = tree_rss([proc.pid])[0]
        result["rss_per_service_mib"] = {k: round(v / 2**20, 1) for k, v in by_kind.items()}
        result["rss_postgres_mib"] = round(tree_rss([app.postgres.proc.pid])[0] / 2**20, 1) if app.postgres.proc else 0
        if with_workload:
            stats, workload_rss = run_workload(app, rate, seconds)
            loaded_rss, _ = tree_rss(app.pids())
            result["pss_loaded_mib"] = round(tree_pss(app.pids()) / 2**20, 1)
            result.update({
                "workload_success_rate": stats["success_rate"], "workload_count": stats["count"],
                "workload_p50_ms": stats["p50_ms"], "workload_p99_ms": stats["p99_ms"],
                "rss_loaded_mib": round(loaded_rss / 2**20, 1),
                "rss_loaded_with_generator_mib": round((loaded_rss + workload_rss) / 2**20, 1),
            })
        return result
    finally:
        app.close()


def embedded_round() -> dict[str, Any]:
    import os
    import shutil

    from sregym_app_hotel_reservation.deploy import deploy
    from sregym_cluster_embedded import cluster

    home = Path(tempfile.mkdtemp(prefix="bench-hotel-k8s-"))
    home.chmod(0o755)
    os.environ["SREGYM_HOME"] = str(home)
    name = f"bench-hotel-{os.getpid() % 100000}"
    try:
        t0 = time.perf_counter()
        info = cluster.up(name, 1, owner_pid=os.getpid())
        t1 = time.perf_counter()
        result = deploy(info.kubeconfig, timeout=600, params={"workload_rate": 5})
        time.sleep(5)
        pids = [info.pid] if info.pid else []
        return {"cluster_up_s": round(t1 - t0, 2), "deploy_to_ready_s": round(result["ready_s"], 2),
                "deploy_to_workload_ok_s": round(result.get("workload_ok_s", 0), 2),
                "cluster_plus_app_rss_mib": round(tree_rss(pids)[0] / 2**20, 1),
                "cluster_plus_app_pss_mib": round(tree_pss(pids) / 2**20, 1),
                "processes": tree_rss(pids)[1]}
    finally:
        cluster.down(name, forget=True)
        shutil.rmtree(home, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--rate", type=float, default=50)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--embedded", action="store_true", help="also deploy on a fresh embedded cluster")
    args = parser.parse_args()
    rounds = [one_round(args.rate, args.seconds, with_workload=(i == 0)) for i in range(args.rounds)]
    summary = {
        "rounds": rounds,
        "start_to_ready_s_median": statistics.median(r["start_to_ready_s"] for r in rounds),
        "services_ready_s_median": statistics.median(r["services_ready_s"] for r in rounds),
        "rss_loaded_with_generator_mib": rounds[0].get("rss_loaded_with_generator_mib"),
        "budget_rss_mib": 1024,
    }
    if args.embedded:
        summary["embedded"] = embedded_round()
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
