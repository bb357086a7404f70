"""The README's claim "every curated problem is validated sound" holds on the docs that prove it.

docs/validation-status.md is written from the runs logged in docs/validation.md; a curated problem
added without a validation run (or whose newest run was unsound) fails here, and so does a status
page that was not regenerated after the log changed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "tools" / "validation_status.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TOOL), *args], capture_output=True, text=True, timeout=300)


def test_every_curated_problem_has_a_sound_newest_run():
    done = _run("--check")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_status_page_is_up_to_date(tmp_path):
    sys.path.insert(0, str(TOOL.parent))
    try:
        import validation_status as tool
    finally:
        sys.path.remove(str(TOOL.parent))
    problems = tool.curated_problems()
    text, _ = tool.render(problems, tool.newest_rows(tool.LOG.read_text().splitlines(), set(problems)))
    assert (ROOT / "docs" / "validation-status.md").read_text() == text, \
        "docs/validation-status.md is stale: run python tools/validation_status.py"


def test_a_problem_without_a_run_or_with_an_unsound_one_is_reported():
    sys.path.insert(0, str(TOOL.parent))
    try:
        import validation_status as tool
    finally:
        sys.path.remove(str(TOOL.parent))
    log = ["## The last leftovers, 2026-11-27 (5): x",
           "| `p-sound` | pass | fails | fails | fails | fails | fails | fails (n/a) | observed (slo-drop; 2.0 s) |",
           "| `p-bad` | **fails (slo)** | fails | fails | fails | fails | fails | fails | observed (slo-drop; 2.0 s) |",
           "| `p-quiet` | pass | fails | fails | fails | fails | fails | fails | UNSOUND (not observed: slo-drop) |"]
    problems = {"p-sound": "app", "p-bad": "app", "p-quiet": "app", "p-new": "app"}
    text, unsound = tool.render(problems, tool.newest_rows(log, set(problems)))
    assert sorted(unsound) == ["p-bad", "p-new", "p-quiet"]
    assert "**1 of 4 sound.**" in text
