"""Write docs/validation-status.md: the newest quiet verdict of every curated problem.

docs/validation.md is a log of validation runs, one section per run, each with a table of rows
``| `problem` | reference | noop | ... | symptom |``. This reads those tables and keeps, per problem,
the row of the newest run (sections ranked by RUNS_NEWEST_FIRST; runs with ambient noise are
separate evidence and not used here), then writes one table per app: sound or not, the symptom, and
a link to the run. A problem with no row is "not validated".

    python tools/validation_status.py          # rewrite docs/validation-status.md
    python tools/validation_status.py --check  # exit 1 when a curated problem is not sound there

When a new run is logged in docs/validation.md, put its heading's start at the top of
RUNS_NEWEST_FIRST and re-run this.
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


def curated_problems() -> dict[str, str]:
    """Problem id -> app, from the installed plugins (`sregym list-problems --json`)."""
    sregym = Path(sys.executable).parent / "sregym"
    listing = subprocess.run([str(sregym), "list-problems", "--json"], capture_output=True, text=True, check=True)
    return {p["id"]: p["app"] for p in json.loads(listing.stdout)}


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


def render(problems: dict[str, str], rows: dict) -> tuple[str, list[str]]:
    lines, unsound = [], []
    by_app: dict[str, list[str]] = {}
    for pid, app in problems.items():
        by_app.setdefault(app, []).append(pid)
    sound_total = 0
    for app in sorted(by_app):
        lines += ["", f"## {app} ({len(by_app[app])} problems)", "", "| problem | verdict | symptom | run |",
                  "|---|---|---|---|"]
        for pid in sorted(by_app[app]):
            if pid not in rows:
                lines.append(f"| `{pid}` | not validated | | |")
                unsound.append(pid)
                continue
            heading, cells = rows[pid]
            ok, symptom = verdict(cells)
            sound_total += ok
            if not ok:
                unsound.append(pid)
            title = heading.lstrip("#").strip().split(":")[0]
            lines.append(f"| `{pid}` | {'sound' if ok else '**not sound**'} | {symptom} | "
                         f"[{title}](validation.md#{anchor(heading)}) |")
    head = [
        "# Where every curated problem stands",
        "",
        "The newest quiet `sregym validate` verdict of each curated problem (all seven agents and the symptom",
        "check), taken from the runs logged in [validation.md](validation.md); written by",
        "`python tools/validation_status.py`. *Sound*: the reference passes, noop and the five hacker agents",
        "fail, and the declared symptom was observed after injection (or the problem declares itself latent).",
        "",
        f"**{sound_total} of {len(problems)} sound.**",
    ]
    return "\n".join(head + lines) + "\n", unsound


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check: exit 1 if a problem is not sound")
    args = parser.parse_args()
    problems = curated_problems()
    text, unsound = render(problems, newest_rows(LOG.read_text().splitlines(), set(problems)))
    if not args.check:
        OUT.write_text(text)
    for pid in unsound:
        print(f"not sound or not validated: {pid}")
    return 1 if unsound else 0


if __name__ == "__main__":
    sys.exit(main())
