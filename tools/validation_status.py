"""Validation verdicts as machine-written records, and docs/validation-status.md generated from them.

``docs/validation-records.jsonl`` holds one record per problem per validation run: the problem, its
app, the run's title and date, the commit, where the verdict came from, every agent's cell, the
symptom cell and whether the problem was sound. ``sregym validate`` results become records with
``record`` (``tools/validate-sample.sh`` does it after each run); the hand-written tables of
docs/validation.md up to 2026-11-28 were imported once with ``import-log``. The status page keeps,
per problem, its newest record.

    python tools/validation_status.py                          # rewrite docs/validation-status.md
    python tools/validation_status.py --check                  # exit 1: a curated problem not sound,
                                                               # not validated, or changed since
    python tools/validation_status.py record DIR --run TITLE   # append the verdicts of a validate run
    python tools/validation_status.py import-log               # (once) the tables of docs/validation.md

*Changed since*: the problem's file has a commit dated after its newest record (a verdict must be
newer than the problem it judges). Outside a git checkout that part of the check is skipped, and said.
Problems found changed since when the records began (2026-11-29) are listed, with why, in
docs/validation-stale.json until they are validated again; the list may only shrink.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOG = ROOT / "docs" / "validation.md"
OUT = ROOT / "docs" / "validation-status.md"
RECORDS = ROOT / "docs" / "validation-records.jsonl"
#: problems known to have changed after their newest verdict, each with why; the list may only shrink:
#: --check fails for a changed problem not listed, and for a listed one that is no longer changed
STALE = ROOT / "docs" / "validation-stale.json"
#: the agents of a full validation, in the order of the log's tables and of `sregym validate`'s matrix
AGENTS = ("reference", "noop", "restart-all", "scale-zero-faulty", "delete-faulty", "stub-replace",
          "different-broken-value")
DATE = re.compile(r"(20\d\d-\d\d-\d\d)")

#: the start of each run's heading in docs/validation.md, newest run first
RUNS_NEWEST_FIRST = [
    "## Clock drift on TrainTicket's login tokens (#18), 2026-11-27 (6)",
    "## Cluster network faults (#18), 2026-11-27",
    "## Controller and kubelet faults (#18)",
    "## The last leftovers, 2026-11-27 (5)",
    "## The lite suite, 2026-11-27 (4)",
    "## Astronomy Shop, the 23 non-lite problems again, 2026-11-27 (4)",
    "### hotel-network-delay-geo and hotel-network-loss-profile, 2026-11-27 (4)",
    "## Node-OS faults (#18)",
    "## Ingress faults, 2026-11-27",
    "## Storage wiring, RBAC and CronJobs",
    "### `hotel-cronjob-sidecar-blocks-frontend`",
    "## Astronomy Shop, 2026-11-27 (3)",
    "## Social Network, 2026-11-27 (3)",
    "## The lite suite, 2026-11-27 (all seven agents",
    "## Social Network, 2026-11-27 re-run",
    "## TrainTicket, 2026-11-27 re-run",
    "## TrainTicket, 2026-11-27: the 8 problems",
    "## Astronomy Shop, new problems, 2026-11-27",
    "### Hotel Reservation, the last seven",
    "### hotel-network-delay-geo and hotel-network-loss-profile, 2026-11-27 08:45",
    "### Hotel Reservation follow-up",
    "## Hotel Reservation, the other 38",
    "### `social-cache-auth-home-timeline-redis`",
    "## Social Network, 2026-11-27: 21 problems",
    "## Astronomy Shop, the other seven problems",
    "## Astronomy Shop flag problems",
    "## Cluster-level faults, 2026-11-25",
    "### Problems whose fix is cluster-scoped",
    "## Lite suite, 2026-11-25",
    "### Earlier runs the same day",
    "## Social Network, 2026-11-25",
    "## Hotel Reservation, 2026-11-24",
]
#: runs with ambient noise: evidence of their own, not the quiet verdict
NOISE_RUNS = ("## The lite suite with upstream noise", "## With noise", "## Quiet and with noise")
#: sections whose re-run row comes first (the first run's rows follow it)
RERUN_FIRST = ("## TrainTicket, 2026-11-27 re-run",)
ROW = re.compile(r"\|\s*`?([a-z0-9-]+)`?\s*\|")


def _listing() -> list[dict]:
    sregym = Path(sys.executable).parent / "sregym"
    listing = subprocess.run([str(sregym), "list-problems", "--json"], capture_output=True, text=True, check=True)
    return json.loads(listing.stdout)


def curated_problems() -> dict[str, str]:
    """Problem id -> app, from the installed plugins (`sregym list-problems --json`)."""
    return {p["id"]: p["app"] for p in _listing()}


def problem_files() -> dict[str, Path]:
    """Problem id -> its YAML file in this checkout (curated problems are files named by their id)."""
    found = {}
    for path in ROOT.glob("apps/*/src/*/problems/*.yaml"):
        found[path.stem] = path
    return found


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^a-z0-9 _-]", "", heading.lstrip("#").strip().lower())
    return text.replace(" ", "-")


def newest_rows(log: list[str], ids: set[str]) -> dict[str, tuple[str, list[str]]]:
    """Problem id -> (heading of its newest quiet run, that row's cells after the id)."""
    heading, found = "", {}
    for number, line in enumerate(log):
        if line.startswith(("## ", "### ")):
            heading = line
            continue
        match = ROW.match(line)
        if not match or match.group(1) not in ids or heading.startswith(NOISE_RUNS):
            continue
        rank = next((i for i, start in enumerate(RUNS_NEWEST_FIRST) if heading.startswith(start)), None)
        if rank is None:
            raise SystemExit(f"docs/validation.md:{number + 1}: the run {heading!r} is not in RUNS_NEWEST_FIRST")
        within = -number if heading.startswith(RERUN_FIRST) else number
        key = (rank, -within)
        cells = [c.strip() for c in line.split("|")[2:-1]]
        if match.group(1) not in found or key < found[match.group(1)][0]:
            found[match.group(1)] = (key, heading, cells)
    return {pid: (heading, cells) for pid, (_, heading, cells) in found.items()}


def verdict(cells: list[str]) -> tuple[bool, str]:
    """Sound (the reference passes, the six others fail, the symptom observed or declared latent)."""
    symptom = next((c for c in cells[7:] if c.startswith(("observed", "latent", "UNSOUND", "not observed"))), "")
    agents_ok = cells[0].startswith("pass") and all(c.startswith("fails") for c in cells[1:7]) and len(cells) >= 7
    return agents_ok and symptom.startswith(("observed", "latent")), re.sub(r";[^)]*\)", ")", symptom)


# --- records ----------------------------------------------------------------------------------------


def read_records(path: Path = RECORDS) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def newest_records(records: list[dict]) -> dict[str, dict]:
    """Problem id -> its newest record (by date; a later line wins a tie: runs are appended in order)."""
    newest: dict[str, dict] = {}
    for record in records:
        old = newest.get(record["problem"])
        if old is None or record["date"] >= old["date"]:
            newest[record["problem"]] = record
    return newest


def records_from_log(log: list[str], problems: dict[str, str]) -> list[dict]:
    """The newest quiet row of each problem in docs/validation.md's tables, as records (oldest first)."""
    rows = newest_rows(log, set(problems))
    out = []
    for pid, (heading, cells) in rows.items():
        ok, symptom = verdict(cells)
        date = DATE.search(heading)
        title = heading.lstrip("#").strip().split(":")[0]
        out.append({"problem": pid, "app": problems[pid], "run": title,
                    "date": date.group(1) if date else _heading_date(log, heading),
                    "commit": None, "source": f"docs/validation.md#{anchor(heading)} (hand-written table, imported "
                                              "2026-11-28)",
                    "cells": dict(zip(AGENTS, cells[:7], strict=False)), "symptom": symptom, "sound": ok})
    return sorted(out, key=lambda r: (r["date"], r["problem"]))


def _heading_date(log: list[str], heading: str) -> str:
    """A heading without a date: the nearest date of a heading above it in the log."""
    index = log.index(heading)
    for line in reversed(log[:index]):
        if line.startswith("#") and (found := DATE.search(line)):
            return found.group(1)
    return "2026-11-24"  # the log's first run


def records_from_results(directory: Path, run: str, date: str, commit: str | None) -> list[dict]:
    """Records of a `sregym validate --results DIR` run, one per problem, from its results.jsonl."""
    from sregym_core.cli.validate import SYMPTOM, verdicts
    from sregym_core.results.writer import read_records as read_attempts

    problems = curated_problems()
    table = verdicts(read_attempts(directory))
    out = []
    for pid, cells in table.items():
        agents = {a: cells[a] for a in AGENTS if a in cells}
        symptom = cells.get(SYMPTOM, "-")
        complete = set(agents) == set(AGENTS)
        # the same rule as the log's rows: a missing agent's empty cell is no "fails"
        sound, shown = verdict([agents.get(a, "") for a in AGENTS] + [symptom])
        out.append({"problem": pid, "app": problems.get(pid, "?"), "run": run, "date": date, "commit": commit,
                    "source": f"sregym validate --results {directory.name}"
                              + ("" if complete else f" (agents: {', '.join(agents)}: not a full validation)"),
                    "cells": agents, "symptom": shown or symptom, "sound": sound})
    return out


def last_change(path: Path) -> str | None:
    """The date (YYYY-MM-DD) of the last commit that touched ``path``; None outside a git checkout."""
    try:
        done = subprocess.run(["git", "log", "-1", "--format=%cs", "--", str(path)], cwd=ROOT, capture_output=True,
                              text=True, timeout=60)
    except OSError:
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def read_stale(path: Path = STALE) -> dict[str, str]:
    return json.loads(path.read_text()) if path.exists() else {}


def render(problems: dict[str, str], newest: dict[str, dict], changed: dict[str, str | None],
           stale: dict[str, str] | None = None) -> tuple[str, list[str]]:
    """The status page, and the problems that fail the check: not validated, not sound, changed since
    their newest verdict without being listed in ``stale``, or listed there without being changed."""
    stale = stale or {}
    lines, failing = [], []
    by_app: dict[str, list[str]] = {}
    for pid, app in problems.items():
        by_app.setdefault(app, []).append(pid)
    sound_total = pending = 0
    for app in sorted(by_app):
        lines += ["", f"## {app} ({len(by_app[app])} problems)", "", "| problem | verdict | symptom | run | date |",
                  "|---|---|---|---|---|"]
        for pid in sorted(by_app[app]):
            record = newest.get(pid)
            if record is None:
                lines.append(f"| `{pid}` | not validated | | | |")
                failing.append(pid)
                continue
            is_stale = changed.get(pid) is not None and changed[pid] > record["date"]
            if is_stale != (pid in stale):
                failing.append(pid)
            if not record["sound"]:
                failing.append(pid)
                state = "**not sound**"
            elif is_stale:
                pending += 1
                state = f"sound, **changed since** ({changed[pid]}): to validate again"
            else:
                sound_total += 1
                state = "sound"
            source = record["source"]
            link = f"[{record['run']}]({source.split(' ')[0].removeprefix('docs/')})" if source.startswith("docs/") \
                else f"{record['run']} ({source})"
            lines.append(f"| `{pid}` | {state} | {record['symptom']} | {link} | {record['date']} |")
    head = [
        "# Where every curated problem stands",
        "",
        "The newest quiet `sregym validate` verdict of each curated problem (all seven agents and the symptom",
        "check), from the machine-written records in `validation-records.jsonl` (the runs up to 2026-11-28 were",
        "imported once from the tables of [validation.md](validation.md)); written by",
        "`python tools/validation_status.py`. *Sound*: the reference passes, noop and the five hacker agents",
        "fail, and the declared symptom was observed after injection (or the problem declares itself latent).",
        "*Changed since*: the problem's file has a commit dated after its newest verdict (listed, with why, in",
        "`validation-stale.json` until validated again).",
        "",
        f"**{sound_total} of {len(problems)} sound and unchanged since their verdict**"
        + (f"; {pending} sound but changed since, to validate again." if pending else "."),
    ]
    return "\n".join(head + lines) + "\n", sorted(set(failing))


def changes(problems: dict[str, str]) -> dict[str, str | None]:
    files = problem_files()
    return {pid: last_change(files[pid]) if pid in files else None for pid in problems}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check: exit 1 if a problem is not sound")
    sub = parser.add_subparsers(dest="command")
    rec = sub.add_parser("record", help="append the verdicts of a `sregym validate --results DIR` run")
    rec.add_argument("results", type=Path)
    rec.add_argument("--run", required=True, help="the run's title, e.g. 'Daily sample, 2026-11-29'")
    rec.add_argument("--date", help="YYYY-MM-DD (default: today, UTC)")
    rec.add_argument("--commit", help="the commit validated (default: HEAD)")
    sub.add_parser("import-log", help="(once) the newest row of each problem in docs/validation.md's tables")
    args = parser.parse_args()
    if args.command == "record":
        import datetime as dt

        commit = args.commit or subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                               text=True).stdout.strip() or None
        new = records_from_results(args.results, args.run, args.date or f"{dt.datetime.now(dt.UTC):%Y-%m-%d}", commit)
        partial = [r["problem"] for r in new if "not a full validation" in r["source"]]
        if partial:  # an interrupted run or a subset of agents is evidence of nothing: not a verdict
            print(f"not recorded (not every validation agent ran): {', '.join(partial)}")
            new = [r for r in new if r["problem"] not in partial]
        with RECORDS.open("a") as out:
            for record in new:
                out.write(json.dumps(record) + "\n")
        print(f"{len(new)} record(s) appended to {RECORDS.relative_to(ROOT)}: "
              f"{sum(r['sound'] for r in new)} sound")
    elif args.command == "import-log":
        if RECORDS.exists():
            raise SystemExit(f"{RECORDS.relative_to(ROOT)} exists: the log was imported already")
        imported = records_from_log(LOG.read_text().splitlines(), curated_problems())
        RECORDS.write_text("".join(json.dumps(r) + "\n" for r in imported))
        print(f"{len(imported)} record(s) imported")
    problems = curated_problems()
    changed = changes(problems)
    if all(v is None for v in changed.values()):
        print("not a git checkout: whether a problem changed since its verdict is not checked", file=sys.stderr)
    text, unsound = render(problems, newest_records(read_records()), changed, read_stale())
    if not args.check:
        OUT.write_text(text)
    for pid in unsound:
        print(f"not sound, not validated, or changed since its verdict without being listed in "
              f"{STALE.relative_to(ROOT)} (or listed and not changed): {pid}")
    return 1 if unsound else 0


if __name__ == "__main__":
    sys.exit(main())
