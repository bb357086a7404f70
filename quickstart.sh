#!/usr/bin/env bash
# Set up (idempotent) and run SREGym's main job: one real problem end to end on the embedded cluster
# (deploy Hotel Reservation, inject a fault, let the reference agent diagnose and fix it, grade it,
# record the result). Extra arguments replace the default job and go to `sregym`, e.g.
#   ./quickstart.sh run --suite lite --agent reference --agent noop
#   ./quickstart.sh list-faults --app hotel-reservation
set -euo pipefail
root=$(cd "$(dirname "$0")" && pwd)
"$root/tools/setup.sh" >&2
venv_dir=${SREGYM_VENV:-$root/.venv}
sregym="$venv_dir/bin/sregym"
if [ $# -gt 0 ]; then
  exec "$sregym" "$@"
fi
"$sregym" run --problem hotel-wrong-image-geo --agent reference --results results/quickstart --cluster quickstart
"$sregym" report results/quickstart
"$sregym" cluster down --name quickstart >/dev/null
