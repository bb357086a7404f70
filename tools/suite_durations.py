"""Record how long each test file of the landing suite took, from a JUnit file of a recorded run.

    python tools/suite_durations.py record <junit.xml> [--note TEXT]   # update tests/suite_durations.json
    python tools/suite_durations.py record --merge <junit.xml>         # only the files that run holds
    python tools/suite_durations.py show [<junit.xml>]                # the slowest files, the live lanes

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
DEFAULTS = {"workers": 3, "default_budget_s": 240, "suite_budget_s": 1320, "budgets": {}, "budget_reasons": {}}
#: the lane a JUnit ``live_lane`` property of a run before the second lane (value "1") stands for
FIRST_LANE = "live-apps"


def module_path(classname: str) -> str | None:
    """``apps.sregym-app-x.tests.test_y.TestZ`` -> ``apps/sregym-app-x/tests/test_y.py`` (the longest prefix
    that is a file of the checkout)."""
    parts = [part for part in classname.split(".") if part]  # a module-level skip has no class name
    for end in range(len(parts), 0, -1):
        candidate = Path(*parts[:end]).with_suffix(".py")
        if (ROOT / candidate).is_file():
            return candidate.as_posix()
    return None


def read_junit(path: Path) -> tuple[dict[str, float], dict[str, str]]:
    """Seconds per test file (setup, call and teardown summed), and the live lane of every lane file."""
    files: dict[str, float] = defaultdict(float)
    lane_files: dict[str, str] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        seconds = float(case.get("time") or 0)
        where = module_path(case.get("classname") or "")
        if where is None:
            continue
        files[where] += seconds
        for prop in case.iter("property"):
            if prop.get("name") == "live_lane":  # conftest.py marks them with their lane
                value = prop.get("value") or ""
                lane_files[where] = FIRST_LANE if value in ("", "1") else value
    return dict(files), lane_files


def lane_seconds(files: dict[str, float], lane_files: dict[str, str]) -> dict[str, float]:
    """Each live lane's chain: the seconds of its files."""
    lanes: dict[str, float] = defaultdict(float)
    for name, lane in lane_files.items():
        lanes[lane] += files.get(name, 0.0)
    return {lane: round(seconds, 1) for lane, seconds in sorted(lanes.items())}


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def record(junit: Path, note: str, merge: bool = False) -> dict:
    """Write the record from a whole run; with ``merge``, only the files that run holds are replaced
    (e.g. new test files measured alone), and their lanes."""
    files, run_lanes = read_junit(junit)
    data = {**DEFAULTS, **(json.loads(RECORD.read_text()) if RECORD.exists() else {})}
    stamp = f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, commit {_commit()}: {note}"
    if merge and data.get("files"):
        data["files"] = dict(sorted({**data["files"], **{f: round(s, 1) for f, s in files.items()}}.items()))
        data["lane_files"] = dict(sorted({**data.get("lane_files", {}), **run_lanes}.items()))
        data["merged"] = [*data.get("merged", []), stamp]
    else:
        data.update(files={f: round(s, 1) for f, s in sorted(files.items())}, lane_files=dict(sorted(run_lanes.items())),
                    recorded=stamp, merged=[])
    data["lanes"] = lane_seconds(data["files"], data["lane_files"])
    RECORD.write_text(json.dumps(data, indent=1) + "\n")
    return data


def show(data: dict, top: int = 25) -> None:
    files = data["files"]
    total = sum(files.values())
    lanes = ", ".join(f"{lane} {seconds:.0f} s" for lane, seconds in data["lanes"].items())
    print(f"{len(files)} files, {total:.0f} s of test time; live lanes: {lanes}")
    for name, seconds in sorted(files.items(), key=lambda kv: -kv[1])[:top]:
        budget = data.get("budgets", {}).get(name, data.get("default_budget_s"))
        lane = data.get("lane_files", {}).get(name, "")
        print(f"{seconds:8.1f} s  (budget {budget})  {name}  {lane}")


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
        files, lanes = read_junit(args.junit)
        show({"files": files, "lane_files": lanes, "lanes": lane_seconds(files, lanes)})
    elif RECORD.exists():
        show(json.loads(RECORD.read_text()))
    else:
        sys.exit(f"no record yet: {RECORD}")


if __name__ == "__main__":
    main()
