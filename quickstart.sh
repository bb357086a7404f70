#!/usr/bin/env bash
# Set up (idempotent) and run SREGym's main job. Today: print the fault × target compatibility
# matrix of every installed app. Extra arguments are passed to `sregym`.
set -euo pipefail
root=$(cd "$(dirname "$0")" && pwd)
"$root/tools/setup.sh" >&2
venv_dir=${SREGYM_VENV:-$root/.venv}
if [ $# -gt 0 ]; then
  exec "$venv_dir/bin/sregym" "$@"
fi
exec "$venv_dir/bin/sregym" list-faults
