"""Measure one embedded cluster start on this machine and print the start wait derived from it.

``./test.sh`` runs this before the suite: a zero-node cluster is started in a private SREGYM_HOME,
timed from the command to a ready API, and stopped. The printed wait is ``factor`` times that start,
at least ``floor`` seconds: a bound that only a hung start reaches, scaled to the machine instead of
guessed. Without the embedded cluster plugin, or if the start fails, the floor is printed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time


def measure() -> float | None:
    try:
        from sregym_cluster_embedded import cluster
    except ImportError:
        return None
    home = tempfile.mkdtemp(prefix="sregym-start-")
    previous = os.environ.get("SREGYM_HOME")
    os.environ["SREGYM_HOME"] = home
    try:
        started = time.monotonic()
        cluster.up("measure", 0, timeout=600)
        took = time.monotonic() - started
        cluster.down("measure", forget=True)
        return took
    except Exception as exc:  # noqa: BLE001 - a failed measurement falls back to the floor, and says so
        print(f"measure_cluster_start: {exc}", file=sys.stderr)
        return None
    finally:
        if previous is None:
            os.environ.pop("SREGYM_HOME", None)
        else:
            os.environ["SREGYM_HOME"] = previous
        shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--factor", type=float, default=60.0)
    parser.add_argument("--floor", type=float, default=120.0)
    args = parser.parse_args()
    took = measure()
    wait = args.floor if took is None else max(args.floor, args.factor * took)
    if took is not None:
        print(f"measure_cluster_start: a zero-node start took {took:.1f} s", file=sys.stderr)
    print(f"{wait:.0f}")


if __name__ == "__main__":
    main()
