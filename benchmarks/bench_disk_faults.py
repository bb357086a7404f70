"""Benchmark: how long the disk and syscall faults take to inject and to recover on Hotel Reservation (issue #36).

    python benchmarks/bench_disk_faults.py            # 3 rounds per problem
    BENCH_ROUNDS=5 python benchmarks/bench_disk_faults.py

Runs ``benchmarks/disk_fault_cycle.py`` (one embedded cluster, Hotel deployed once) and prints, per curated problem,
the mechanism that ran and the median and maximum seconds of inject and of recover. Figures of this machine at the
time it runs (its load is printed too), not a bar.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    load = os.getloadavg()
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-s",
               str(ROOT / "benchmarks" / "disk_fault_cycle.py")]
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    rows: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    # not anchored at a line's start: pytest -q's progress dot of the test before can precede a TIMING line
    for problem, mechanism, inject, recover in re.findall(
            r"TIMING (\S+) \S+ (\S+) inject=([\d.]+) recover=([\d.]+)", proc.stdout):
        rows[(problem, mechanism)].append((float(inject), float(recover)))
    if not rows:
        print(proc.stdout[-3000:], proc.stderr[-2000:], sep="\n")
        return 1
    print(f"load average before the run: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print(f"{'problem':<55} {'mechanism':<20} {'rounds':>6} {'inject med/max s':>17} {'recover med/max s':>18}")
    for (problem, mechanism), times in sorted(rows.items()):
        injects, recovers = [t[0] for t in times], [t[1] for t in times]
        print(f"{problem:<55} {mechanism:<20} {len(times):>6} "
              f"{statistics.median(injects):>8.2f}/{max(injects):<8.2f} {statistics.median(recovers):>8.2f}/{max(recovers):<8.2f}")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
