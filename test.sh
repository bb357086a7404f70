#!/usr/bin/env bash
# Set up (idempotent) and run the whole test suite. Extra arguments go to pytest,
# e.g. `./test.sh -m "not slow"` for the fast subset.
set -euo pipefail
root=$(cd "$(dirname "$0")" && pwd)
"$root/tools/setup.sh"
venv_dir=${SREGYM_VENV:-$root/.venv}
cd "$root"
exec "$venv_dir/bin/python" -m pytest -p no:cacheprovider "$@"
