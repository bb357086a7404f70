#!/usr/bin/env bash
# Validation runs: the evidence the landing suite does not produce (docs/ci.md).
#
#   tools/validate-sample.sh                 # the day's rotating lite problem, then the validation tests
#   tools/validate-sample.sh --problem ID... # these problems (sregym validate's own options pass through)
#   SREGYM_VALIDATE_TESTS=0 tools/validate-sample.sh ...   # only `sregym validate`, no pytest part
#   SREGYM_VALIDATE_MATRIX=1 tools/validate-sample.sh ...  # also the exhaustive live matrices (an hour or more)
#
# 1. `sregym validate` with all seven agents and the symptom check on a cluster of its own; its
#    verdicts become machine-written records (docs/validation-records.jsonl) and the status page is
#    regenerated (tools/validation_status.py).
# 2. The tests marked `validation` (`pytest --validation -m validation`): every app's healthy service
#    level, the rotating lite sample and a random ad-hoc (fault, target) pair through pytest.
# 3. With SREGYM_VALIDATE_MATRIX=1, the exhaustive live matrices the landing check samples
#    (`pytest --matrix -m matrix`: every case of every live fault contract, every hack).
# 4. One line per run in docs/validation-runs.jsonl: date, commit, what ran and how it ended.
#
# It grades service levels on this machine, so run it on a machine that is not loaded by something
# else when you want numbers you can compare; the landing check (.ci/run) never runs it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
venv=${SREGYM_VENV:-$root/.venv}
[ -x "$venv/bin/sregym" ] || tools/setup.sh
sregym="$venv/bin/sregym"
python="$venv/bin/python"
day=$(date -u +%F)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
work=${SREGYM_VALIDATION_DIR:-$root/results/validation/$day-$(date -u +%H%M%S)}
mkdir -p "$work"
export SREGYM_HOME=${SREGYM_HOME:-$work/home}

args=("$@")
if [ ${#args[@]} -eq 0 ]; then
  # the day's rotating lite problem: the same rotation as the live contracts' daily sample
  problem=$("$python" - <<'PY'
import json, subprocess, sys, time
from pathlib import Path
from sregym_core.testing.live import daily_sample
out = subprocess.run([str(Path(sys.executable).parent / "sregym"), "list-problems", "--suite", "lite", "--json"],
                     capture_output=True, text=True, check=True).stdout
print(daily_sample([p["id"] for p in json.loads(out)], 1, int(time.time() // 86400))[0])
PY
)
  args=(--problem "$problem")
fi

status=0
started=$(date +%s)
"$sregym" validate "${args[@]}" --cluster validate-sample --results "$work/validate" --no-keep-cluster \
  2>&1 | tee "$work/validate.log" || status=$?
validate_s=$(( $(date +%s) - started ))
if [ -s "$work/validate/results.jsonl" ]; then
  "$python" tools/validation_status.py record "$work/validate" --run "Validation run, $day" || true
  "$python" tools/validation_status.py || true
fi

# run_part NAME ENABLED MARKER_OPTION: one pytest part (its log and JUnit file named NAME-tests), setting
# part_status (skipped, passed or failed) and part_s (seconds)
run_part() {
  part_status=skipped
  part_s=0
  [ "$2" != 0 ] || return 0
  local started
  started=$(date +%s)
  part_status=passed
  "$venv/bin/python" -m pytest -p no:cacheprovider "$3" -m "$1" -ra \
    --junitxml="$work/$1-tests.xml" 2>&1 | tee "$work/$1-tests.log" || part_status=failed
  part_s=$(( $(date +%s) - started ))
}
run_part validation "${SREGYM_VALIDATE_TESTS:-1}" --validation
tests_status=$part_status tests_s=$part_s
run_part matrix "${SREGYM_VALIDATE_MATRIX:-0}" --matrix
matrix_status=$part_status matrix_s=$part_s

"$python" - "$work" "$day" "$commit" "$status" "$validate_s" "$tests_status" "$tests_s" "${args[*]}" \
  "$matrix_status" "$matrix_s" <<'PY'
import json, sys
from pathlib import Path
work, day, commit, status, validate_s, tests_status, tests_s, args, matrix_status, matrix_s = sys.argv[1:]


def summary(name: str) -> str:
    """pytest's last summary line ("3 passed, 1 failed in ...") of a part's log, if it ran."""
    log = Path(work) / name
    if not log.exists():
        return ""
    tail = [line for line in log.read_text().splitlines() if " passed" in line or " failed" in line]
    return tail[-1].strip("= ") if tail else ""


line = {"date": day, "commit": commit, "validate": {"args": args, "exit": int(status), "seconds": int(validate_s)},
        "validation_tests": {"outcome": tests_status, "summary": summary("validation-tests.log"),
                             "seconds": int(tests_s)},
        "matrix_tests": {"outcome": matrix_status, "summary": summary("matrix-tests.log"), "seconds": int(matrix_s)},
        "results": str(Path(work).resolve())}
with open("docs/validation-runs.jsonl", "a") as out:
    out.write(json.dumps(line) + "\n")
print(json.dumps(line, indent=1))
PY
[ "$status" = 0 ] && [ "$tests_status" != failed ] && [ "$matrix_status" != failed ]
