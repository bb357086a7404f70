"""Benchmark: `sregym validate --parallel N` wall time, speed-up, reset time and memory per environment.

    python benchmarks/bench_parallel.py [--parallel 1,2] [--suite lite] [--problems 4] [--agents reference,noop]
                                        [--executor local|ray]

For each N, in a fresh SREGYM_HOME: runs the real CLI (`sregym validate --suite S --parallel N
--no-keep-cluster`, which brings up N embedded clusters and deploys the app on each), and while it
runs samples the PSS of each cluster's process tree (daemon, node agent, pods). Prints per N: wall
time, speed-up over the first N, the soundness verdict, the reset between attempts (graded -> next
fault injected, from each record's ``extra.reset_s``: median and max) and PSS per environment
(peak). `--parallel 1,2,4` runs 4 too (too much for 2 cores, but it runs). `--executor ray` runs the
same on N Ray workers (the sregym-executor-ray plugin; clusters ``<name>-ray-1`` ...).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

BIN = Path(sys.executable).parent


def tree_pss(pid: int) -> int:
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for proc in procs:
        try:
            total += proc.memory_full_info().pss
        except (psutil.Error, AttributeError):
            pass
    return total


class PssSampler(threading.Thread):
    """Peak PSS of each named cluster's process tree, sampled every few seconds."""

    def __init__(self, home: str, names: list[str], every: float = 5.0) -> None:
        super().__init__(daemon=True)
        self.home, self.names, self.every = home, names, every
        self.peak = {name: 0 for name in names}
        self.stop = threading.Event()

    def run(self) -> None:
        os.environ["SREGYM_HOME"] = self.home  # the cluster plugin finds state through it
        from sregym_cluster_embedded import cluster

        while not self.stop.wait(self.every):
            for name in self.names:
                try:
                    pid = cluster.status(name).pid
                except Exception:  # not up yet, or gone
                    continue
                if pid:
                    self.peak[name] = max(self.peak[name], tree_pss(pid))


def run_once(parallel: int, args: argparse.Namespace) -> dict:
    home = tempfile.mkdtemp(prefix=f"sregym-bench-par{parallel}-")
    Path(home).chmod(0o755)
    results = Path(home) / "results"
    name = f"bpar{parallel}"
    names = [name] + [f"{name}-{i}" for i in range(2, parallel + 1)] if args.executor == "local" \
        else [f"{name}-ray-{i}" for i in range(1, parallel + 1)]
    selection = ["--suite", args.suite] if not args.problem else [x for p in args.problem for x in ("--problem", p)]
    command = [str(BIN / "sregym"), "validate", *selection, "--agents", args.agents, "--parallel", str(parallel),
               "--cluster", name, "--no-keep-cluster", "--results", str(results), "--timeout", str(args.timeout),
               "--executor", args.executor]
    env = {**os.environ, "SREGYM_HOME": home, "API_BIND_HOST": "127.0.0.1", "API_PORT": "0", "MCP_SERVER_PORT": "0"}
    sampler = PssSampler(home, names)
    sampler.start()
    started = time.monotonic()
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=args.budget)
        wall = time.monotonic() - started
    finally:
        sampler.stop.set()
        sampler.join(timeout=30)
    records = [json.loads(line) for line in (results / "results.jsonl").read_text().splitlines()] \
        if (results / "results.jsonl").exists() else []
    resets = [r["extra"]["reset_s"] for r in records if (r.get("extra") or {}).get("reset_s") is not None]
    environments = sorted({(r.get("extra") or {}).get("environment") for r in records} - {None})
    shutil.rmtree(home, ignore_errors=True)
    return {"parallel": parallel, "wall_s": round(wall, 1), "exit": done.returncode, "attempts": len(records),
            "environments_used": environments, "sound": done.returncode == 0,
            "reset_median_s": round(statistics.median(resets), 2) if resets else None,
            "reset_max_s": round(max(resets), 2) if resets else None, "resets": len(resets),
            "pss_per_env_mib": [round(sampler.peak[n] / 2**20) for n in names],
            "tail": done.stdout[-1500:] if done.returncode else ""}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parallel", default="1,2", help="comma-separated N values (the first is the baseline)")
    parser.add_argument("--suite", default="lite")
    parser.add_argument("--problem", action="append", help="instead of the suite: these problems (repeatable)")
    parser.add_argument("--agents", default="reference,noop")
    parser.add_argument("--timeout", type=float, default=300.0, help="agent time limit per attempt")
    parser.add_argument("--executor", default="local", help="local (the default) or ray")
    parser.add_argument("--budget", type=float, default=7200.0, help="seconds one validate run may take")
    args = parser.parse_args()
    runs = []
    for parallel in [int(n) for n in args.parallel.split(",")]:
        result = run_once(parallel, args)
        runs.append(result)
        print(json.dumps({k: v for k, v in result.items() if k != "tail"}), flush=True)
        if result["tail"]:
            print(result["tail"], file=sys.stderr)
    base = runs[0]["wall_s"]
    what = args.suite if not args.problem else f"{len(args.problem)} problem(s)"
    print(f"\nsregym validate ({what}, agents {args.agents}, executor {args.executor}) on {os.cpu_count()} cores")
    print(f"{'N':>3} {'wall s':>8} {'speed-up':>9} {'attempts':>9} {'sound':>6} {'reset med/max s':>16} {'PSS/env MiB':>14}")
    for run in runs:
        resets = f"{run['reset_median_s']}/{run['reset_max_s']}" if run["resets"] else "-"
        pss = ",".join(str(p) for p in run["pss_per_env_mib"])
        print(f"{run['parallel']:>3} {run['wall_s']:>8} {base / run['wall_s']:>8.2f}x {run['attempts']:>9} "
              f"{str(run['sound']):>6} {resets:>16} {pss:>14}")
    return 0 if all(r["sound"] for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
