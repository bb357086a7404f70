#!/usr/bin/env bash
# Set up (idempotent) and run the whole test suite. Extra arguments go to pytest,
# e.g. `./test.sh -m "not slow"` for the fast subset.
#
# SREGYM_TEST_WORKERS=N runs the suite in N pytest-xdist workers, a whole test file per worker at
# a time (--dist loadfile), the files with minute-long tests first: most of a live test's time is
# spent waiting on real processes (rollouts, SLO windows, symptom timeouts). Each worker has its
# own SREGYM_HOME and its own embedded clusters (conftest.py). Default: 2 workers on a machine with
# 2 or more cores (the CI machine has 2: about 44 min instead of 66), else 1; SREGYM_TEST_WORKERS=1
# runs one process, in file order.
set -euo pipefail
root=$(cd "$(dirname "$0")" && pwd)
"$root/tools/setup.sh"
venv_dir=${SREGYM_VENV:-$root/.venv}
cd "$root"
cores=$(nproc 2>/dev/null || echo 1)
workers=${SREGYM_TEST_WORKERS:-$(( cores >= 2 ? 2 : 1 ))}
parallel=()
if [ "$workers" != 1 ]; then
  parallel=(-n "$workers" --dist loadfile)
fi
exec "$venv_dir/bin/python" -m pytest -p no:cacheprovider "${parallel[@]}" "$@"
