#!/usr/bin/env bash
# Set up (idempotent) and run the whole test suite. Extra arguments go to pytest,
# e.g. `./test.sh -m "not slow"` for the fast subset.
#
# The suite runs in SREGYM_TEST_WORKERS pytest-xdist workers (default 2), a whole test file per
# worker at a time (--dist loadfile): most of a live test's time is spent waiting on real processes
# (rollouts, SLO windows, symptom timeouts), so two files side by side roughly halve the wall time
# on 2 cores. Each worker has its own SREGYM_HOME and its own embedded clusters (conftest.py).
# SREGYM_TEST_WORKERS=1 runs everything in one process, in file order.
set -euo pipefail
root=$(cd "$(dirname "$0")" && pwd)
"$root/tools/setup.sh"
venv_dir=${SREGYM_VENV:-$root/.venv}
cd "$root"
workers=${SREGYM_TEST_WORKERS:-2}
parallel=()
if [ "$workers" != 1 ]; then
  parallel=(-n "$workers" --dist loadfile)
fi
exec "$venv_dir/bin/python" -m pytest -p no:cacheprovider "${parallel[@]}" "$@"
