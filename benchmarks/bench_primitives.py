"""Benchmark: the live per-primitive cycle on Hotel Reservation (inject -> symptom -> fix -> recovery -> reset).

    python benchmarks/bench_primitives.py [-k "wrong-image or scale-zero"]

Runs the fault packs' live contracts (``faults/sregym-fault-{k8s,datastore,app}/tests/*_live.py``: one
embedded cluster, Hotel deployed once) and prints,
per phase, the median and maximum seconds over the primitives, the slowest primitives, and the
whole module's wall time, from the phase timings each case prints.
"""

from __future__ import annotations

import argparse
import ast
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PHASES = ("inject", "symptom", "fix", "recovery", "reset")
LIVE_PACKS = ("sregym-fault-k8s", "sregym-fault-datastore", "sregym-fault-app")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("-k", default="", help="pytest -k expression to run a subset")
    args = parser.parse_args()
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-s",
               *[str(path) for pack in LIVE_PACKS for path in sorted((ROOT / "faults" / pack / "tests").glob("*_live.py"))],
               "-k", args.k or "test_fault_live"]
    started = time.monotonic()
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - started
    timings = {name: ast.literal_eval(body) for name, body in
               re.findall(r"^\.?([a-z0-9-]+): (\{[^}]*\})", proc.stdout, re.M)}
    if not timings:
        print(proc.stdout[-3000:], proc.stderr[-2000:], sep="\n")
        return 1
    print(f"primitives timed: {len(timings)}   module wall time: {wall:.0f} s   "
          f"per primitive: {wall / len(timings):.1f} s (incl. cluster up and deploy)")
    print(f"{'phase':<10} {'median s':>9} {'max s':>7}")
    for phase in PHASES:
        values = [t[phase] for t in timings.values() if phase in t]
        if values:
            print(f"{phase:<10} {statistics.median(values):>9.1f} {max(values):>7.1f}")
    totals = sorted(((sum(t.values()), name) for name, t in timings.items()), reverse=True)
    print("slowest:", ", ".join(f"{name} {total:.0f} s" for total, name in totals[:5]))
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    print("pytest:", summary)
    return proc.returncode


if __name__ == "__main__":
    raise SystemExit(main())
