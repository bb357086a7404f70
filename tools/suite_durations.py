"""Record how long each test file of the landing suite took, from a JUnit file of a recorded run.

    python tools/suite_durations.py record <junit.xml> [--note TEXT]   # update tests/suite_durations.json
    python tools/suite_durations.py record --merge <junit.xml>         # only the files that run holds
    python tools/suite_durations.py show [<junit.xml>]                # the slowest files, the live lane

``tests/test_suite_rules.py`` reads the record: every live test file must be in it, none may exceed
its budget, and the landing suite's projected wall time must stay within ``suite_budget_s``
(docs/ci.md). The record is written from a real run (``.ci/run`` writes ``$SREGYM_HOME/junit.xml``);
the budgets and their reasons are kept as they are.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "tests" / "suite_durations.json"
DEFAULTS = {"workers": 2, "default_budget_s": 240, "suite_budget_s": 1320, "budgets": {}, "budget_reasons": {}}


def module_path(classname: str) -> str | None:
    """``apps.sregym-app-x.tests.test_y.TestZ`` -> ``apps/sregym-app-x/tests/test_y.py`` (the longest prefix
    that is a file of the checkout)."""
    parts = [part for part in classname.split(".") if part]  # a module-level skip has no class name
    for end in range(len(parts), 0, -1):
        candidate = Path(*parts[:end]).with_suffix(".py")
        if (ROOT / candidate).is_file():
            return candidate.as_posix()
    return None


def read_junit(path: Path) -> tuple[dict[str, float], float, list[str]]:
    """Seconds per test file (setup, call and teardown summed), the live lane's total and its files."""
    files: dict[str, float] = defaultdict(float)
    lane = 0.0
    lane_files: set[str] = set()
    for case in ET.parse(path).getroot().iter("testcase"):
        seconds = float(case.get("time") or 0)
        where = module_path(case.get("classname") or "")
        if where is None:
            continue
        files[where] += seconds
        if any(p.get("name") == "live_lane" for p in case.iter("property")):  # conftest.py marks them
            lane += seconds
            lane_files.add(where)
    return dict(files), lane, sorted(lane_files)


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def record(junit: Path, note: str, merge: bool = False) -> dict:
    """Write the record from a whole run; with ``merge``, only the files that run holds are replaced
    (e.g. new test files measured alone), the lane total adjusted by their change."""
    files, lane, run_lane_files = read_junit(junit)
    data = {**DEFAULTS, **(json.loads(RECORD.read_text()) if RECORD.exists() else {})}
    stamp = f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, commit {_commit()}: {note}"
    if merge and data.get("files"):
        old = data["files"]
        lane_files = set(data.get("lane_files", []))
        new_lane = set(run_lane_files)
        delta = sum(files[f] - old.get(f, 0.0) for f in files if f in new_lane | lane_files)
        data["files"] = dict(sorted({**old, **{f: round(s, 1) for f, s in files.items()}}.items()))
        data["lane_files"] = sorted(lane_files | new_lane)
        data["live_lane_s"] = round(data["live_lane_s"] + delta, 1)
        data["merged"] = [*data.get("merged", []), stamp]
    else:
        data.update(files={f: round(s, 1) for f, s in sorted(files.items())}, live_lane_s=round(lane, 1),
                    lane_files=run_lane_files, recorded=stamp, merged=[])
    RECORD.write_text(json.dumps(data, indent=1) + "\n")
    return data


def show(data: dict, top: int = 25) -> None:
    files = data["files"]
    total = sum(files.values())
    print(f"{len(files)} files, {total:.0f} s of test time; live lane {data['live_lane_s']:.0f} s")
    for name, seconds in sorted(files.items(), key=lambda kv: -kv[1])[:top]:
        budget = data.get("budgets", {}).get(name, data.get("default_budget_s"))
        print(f"{seconds:8.1f} s  (budget {budget})  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("junit", type=Path)
    rec.add_argument("--note", default="a .ci/run reproduction")
    rec.add_argument("--merge", action="store_true", help="replace only the files this run holds")
    sh = sub.add_parser("show")
    sh.add_argument("junit", type=Path, nargs="?")
    args = parser.parse_args()
    if args.command == "record":
        show(record(args.junit, args.note, merge=args.merge))
    elif args.junit:
        files, lane, _ = read_junit(args.junit)
        show({"files": files, "live_lane_s": lane})
    elif RECORD.exists():
        show(json.loads(RECORD.read_text()))
    else:
        sys.exit(f"no record yet: {RECORD}")


if __name__ == "__main__":
    main()
