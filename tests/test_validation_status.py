"""The README's claim "every curated problem is validated sound" holds on machine-written records.

docs/validation-records.jsonl holds one record per problem per validation run (written by
``tools/validation_status.py record`` from ``sregym validate`` results; the hand-written tables of
docs/validation.md were imported once). docs/validation-status.md is generated from the records. A
curated problem without a record, whose newest record is unsound, or whose file changed after its
newest record fails here, and so does a status page that was not regenerated.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "tools" / "validation_status.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TOOL), *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def tool():
    sys.path.insert(0, str(TOOL.parent))
    try:
        import validation_status
    finally:
        sys.path.remove(str(TOOL.parent))
    return validation_status


def test_every_curated_problem_has_a_sound_newest_record_newer_than_its_last_change_or_listed():
    done = _run("--check")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_status_page_is_up_to_date(tool):
    problems = tool.curated_problems()
    text, _ = tool.render(problems, tool.newest_records(tool.read_records()), tool.changes(problems),
                          tool.read_stale())
    assert (ROOT / "docs" / "validation-status.md").read_text() == text, \
        "docs/validation-status.md is stale: run python tools/validation_status.py"


def test_every_record_is_complete(tool):
    records = tool.read_records()
    assert len(records) >= len(tool.curated_problems())
    for record in records:
        assert {"problem", "app", "run", "date", "commit", "source", "cells", "symptom", "sound"} <= set(record), record
        assert tool.DATE.fullmatch(record["date"]), record


def _record(pid: str, date: str, sound: bool = True) -> dict:
    return {"problem": pid, "app": "app", "run": "r", "date": date, "commit": None, "source": "test", "cells": {},
            "symptom": "observed (slo-drop)", "sound": sound}


def test_unsound_missing_and_changed_problems_are_reported(tool):
    problems = {"p-sound": "app", "p-bad": "app", "p-new": "app", "p-changed": "app", "p-fixed": "app",
                "p-listed": "app", "p-listed-not-changed": "app"}
    records = [_record("p-sound", "2026-11-27"), _record("p-bad", "2026-11-27", sound=False),
               _record("p-changed", "2026-11-25"), _record("p-fixed", "2026-11-25", sound=False),
               _record("p-fixed", "2026-11-28"), _record("p-listed", "2026-11-25"),
               _record("p-listed-not-changed", "2026-11-28")]
    changed = {"p-sound": "2026-11-27", "p-bad": None, "p-new": None, "p-changed": "2026-11-26", "p-fixed": "2026-11-26",
               "p-listed": "2026-11-26", "p-listed-not-changed": "2026-11-26"}
    stale = {"p-listed": "why", "p-listed-not-changed": "validated again since: the list must shrink"}
    text, failing = tool.render(problems, tool.newest_records(records), changed, stale)
    assert failing == ["p-bad", "p-changed", "p-listed-not-changed", "p-new"]
    assert "**3 of 7 sound and unchanged since their verdict**; 2 sound but changed since" in text
    assert "sound, **changed since** (2026-11-26): to validate again" in text


def test_a_validate_results_directory_becomes_records(tool, tmp_path):
    from sregym_core.results.record import AttemptRecord

    agents = list(tool.AGENTS)
    lines = []
    for agent in agents:
        data = {"problem_id": "hotel-wrong-image-geo", "agent": agent, "app": "hotel-reservation", "run_id": "r1", "attempt": 1,
                "diagnosis_passed": agent == "reference", "mitigation_passed": agent == "reference"}
        if agent == "reference":
            data["extra"] = {"symptom": {"symptom_observed": True, "declared": ["pods-not-ready"], "seconds": 2.0}}
        lines.append(json.dumps(AttemptRecord.from_dict(data).to_dict()))
    (tmp_path / "results.jsonl").write_text("\n".join(lines) + "\n")
    (record,) = tool.records_from_results(tmp_path, "a run", "2026-11-29", "abc1234")
    assert record["sound"] is True and record["cells"]["reference"] == "pass"
    assert record["symptom"] == "observed (pods-not-ready)" and record["commit"] == "abc1234"
    # a run without every agent is not a full validation: never sound
    (tmp_path / "results.jsonl").write_text("\n".join(lines[:3]) + "\n")
    (partial,) = tool.records_from_results(tmp_path, "a run", "2026-11-29", None)
    assert partial["sound"] is False and "not a full validation" in partial["source"]


def _latest_runs() -> dict[str, dict]:
    """The newest line of docs/validation-runs.jsonl that ran each pytest part of tools/validate-sample.sh."""
    latest: dict[str, dict] = {}
    for line in (ROOT / "docs" / "validation-runs.jsonl").read_text().splitlines():
        run = json.loads(line)
        for part in ("validation_tests", "matrix_tests"):
            if (run.get(part) or {}).get("outcome", "skipped") != "skipped":
                latest[part] = run
    return latest


def test_what_the_landing_suite_left_to_validation_runs_ran_and_docs_ci_quotes_the_latest_run():
    # issue #33: the service levels and the exhaustive live matrices left the landing check; they run in
    # tools/validate-sample.sh, whose every run is a dated line, and docs/ci.md says how the last one ended
    latest = _latest_runs()
    assert set(latest) == {"validation_tests", "matrix_tests"}, \
        "no recorded run of the validation tests or of the live matrices: tools/validate-sample.sh (docs/ci.md)"
    ci = (ROOT / "docs" / "ci.md").read_text()
    for part, run in latest.items():
        assert run["date"] and run["commit"] in ci and run[part]["summary"] in ci, \
            f"docs/ci.md does not quote the latest {part} run ({run['date']}, {run['commit']}: {run[part]['summary']})"
