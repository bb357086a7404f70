#!/usr/bin/env bash
# Set up (idempotent) and run the landing suite. Extra arguments go to pytest,
# e.g. `./test.sh -m "not slow"` for the fast subset.
#
# The landing suite asserts behaviour, never a service level, latency or duration measured on this
# machine (tests marked `validation` do that; tools/validate-sample.sh runs them; docs/ci.md).
#
# SREGYM_TEST_WORKERS=N runs the suite in N pytest-xdist workers (--dist loadfile): every file that
# runs an application on the session's embedded cluster is in a unit of work, a live lane, which one worker
# runs one file at a time; every other file is a unit of its own, the files with a cluster of their own first
# (conftest.py's scheduler). Default: 2 workers on a machine with 2 or more cores (one lane), else 1; with 3 or
# more, two lanes and the files beside them at a lower CPU priority (docs/ci.md: on 2 cores the two lanes'
# clusters take the CPU the third worker was to use). SREGYM_TEST_WORKERS=1 runs one process, in file order.
set -euo pipefail
root=$(cd "$(dirname "$0")" && pwd)
"$root/tools/setup.sh"
venv_dir=${SREGYM_VENV:-$root/.venv}
cd "$root"
cores=$(nproc 2>/dev/null || echo 1)
workers=${SREGYM_TEST_WORKERS:-$(( cores >= 2 ? 2 : 1 ))}
# How long a cluster start may take, derived from one measured on this machine now (unless set):
# 100 times a quiet start, at least 300 s: it only catches a start that hangs, so it is generous.
if [ -z "${SREGYM_CLUSTER_START_TIMEOUT:-}" ]; then
  SREGYM_CLUSTER_START_TIMEOUT=$("$venv_dir/bin/python" tools/measure_cluster_start.py --factor 100 --floor 300)
  export SREGYM_CLUSTER_START_TIMEOUT
fi
echo "test.sh: cluster start wait ${SREGYM_CLUSTER_START_TIMEOUT} s"
pytest=("$venv_dir/bin/python" -m pytest -p no:cacheprovider)
parallel=()
[ "$workers" != 1 ] && parallel=(-n "$workers" --dist loadfile --no-loadscope-reorder)
exec "${pytest[@]}" "${parallel[@]}" "$@"
