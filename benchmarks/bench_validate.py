"""Benchmark: validating one problem with all five validation agents (budget: <= 2 minutes on 2 cores).

    python benchmarks/bench_validate.py [--problem hotel-scale-zero-rate] [--repeat 1]

Brings up its own embedded cluster in a temporary SREGYM_HOME, deploys Hotel Reservation once
(timed separately), then times `sregym validate` on the problem (reference, noop, restart-all,
scale-zero-faulty, delete-faulty; reset between agents) and prints the figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--problem", default="hotel-scale-zero-rate")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="sregym-bench-")
    env = {**os.environ, "SREGYM_HOME": home}
    sregym = str(BIN / "sregym")
    try:
        started = time.monotonic()
        subprocess.run([sregym, "cluster", "up", "--name", "bench", "--nodes", "1"], env=env, check=True, capture_output=True)
        up_s = time.monotonic() - started
        started = time.monotonic()
        subprocess.run([sregym, "deploy", "hotel-reservation", "--cluster", "bench", "--workdir", f"{home}/work"],
                       env=env, check=True, capture_output=True)
        deploy_s = time.monotonic() - started
        times = []
        for run in range(args.repeat):
            started = time.monotonic()
            proc = subprocess.run([sregym, "validate", "--problem", args.problem, "--cluster", "bench",
                                   "--results", f"{home}/validate-{run}"], env=env, capture_output=True, text=True)
            times.append(time.monotonic() - started)
            print(proc.stdout.strip())
        print(f"cluster up: {up_s:.2f} s")
        print(f"hotel-reservation deploy to Ready + workload OK: {deploy_s:.1f} s")
        print(f"validate {args.problem} with 5 agents: median {statistics.median(times):.1f} s over {len(times)} run(s) "
              f"(budget 120 s, ratio {statistics.median(times) / 120:.2f})")
    finally:
        subprocess.run([sregym, "cluster", "down", "--name", "bench"], env=env, capture_output=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
