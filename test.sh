#!/usr/bin/env bash
# Set up (idempotent) and run the whole test suite. Extra arguments go to pytest,
# e.g. `./test.sh -m "not slow"` for the fast subset.
#
# SREGYM_TEST_WORKERS=N runs the suite in N pytest-xdist workers, a whole test file per worker at
# a time (--dist loadfile), the files with minute-long tests first (conftest.py; xdist's own
# reordering by test count is off, as it put every one-test ten-minute file last): most of a live
# test's time is spent waiting on real processes (rollouts, SLO windows, symptom timeouts). Each
# worker has its own SREGYM_HOME and its own embedded clusters (conftest.py). Default: 2 workers on
# a machine with 2 or more cores, else 1; SREGYM_TEST_WORKERS=1 runs one process, in file order.
#
# Tests marked `solo` grade an app's service level while it runs beside nothing else of the suite's
# (the rotating problem validation, TrainTicket's live module): with workers, they run after the
# parallel phase, in one process. Given a `-m` expression, one pytest run takes everything it selects.
set -euo pipefail
root=$(cd "$(dirname "$0")" && pwd)
"$root/tools/setup.sh"
venv_dir=${SREGYM_VENV:-$root/.venv}
cd "$root"
cores=$(nproc 2>/dev/null || echo 1)
workers=${SREGYM_TEST_WORKERS:-$(( cores >= 2 ? 2 : 1 ))}
pytest=("$venv_dir/bin/python" -m pytest -p no:cacheprovider)
selects=0
for arg in "$@"; do
  case "$arg" in -m|-m*) selects=1 ;; esac
done
if [ "$workers" = 1 ] || [ "$selects" = 1 ]; then
  parallel=()
  [ "$workers" != 1 ] && parallel=(-n "$workers" --dist loadfile --no-loadscope-reorder)
  exec "${pytest[@]}" "${parallel[@]}" "$@"
fi
status=0
"${pytest[@]}" -n "$workers" --dist loadfile --no-loadscope-reorder -m "not solo" "$@" || status=$?
solo=0
"${pytest[@]}" -m solo "$@" || solo=$?
[ "$solo" = 5 ] && solo=0  # the selection held no solo test
[ "$status" != 0 ] && exit "$status"
exit "$solo"
