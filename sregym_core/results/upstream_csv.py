"""Results in upstream SREGym's layout, beside ``results.jsonl`` (which stays the source of truth).

Upstream writes, per run started at ``<MMDD_HHMM>``::

    <results>/<MMDD_HHMM>/<agent>/<problem>/run_<n>/<problem>_results.csv   one row per attempt
    <results>/<MMDD_HHMM>/<agent>/<problem>/run_<n>/trajectory.json          the ATIF trajectory
    <results>/<MMDD_HHMM>/<agent>/<problem>/<problem>_<agent>_results.csv    every attempt of the problem
    <results>/<MMDD_HHMM>/<agent>_ALL_results.csv                             every attempt of the agent

with nested verdicts flattened as ``Stage.key`` and the columns the sorted union of all keys
(upstream-parity.md §4.1). Column meanings here:

* ``Diagnosis.judgment``/``Diagnosis.success``: "True"/"False"/"" (no diagnosis stage);
  ``Diagnosis.accuracy``: composite × 100; ``Diagnosis.composite_score``, ``Diagnosis.dimensions``
  (JSON ``{name: score}``), ``Diagnosis.checklist`` (JSON answers), ``Diagnosis.reasoning`` (the
  evidence of each answer), ``Diagnosis.submission``, ``Diagnosis.error``;
* ``TTL``/``TTM``: seconds from the end of injection to the end of judging / of the mitigation
  oracle (the record's ``diagnosis_graded_s``/``mitigation_graded_s``);
* ``Mitigation.success``, ``Mitigation.reason`` (failed oracle leaves), ``Mitigation.error``,
  ``Mitigation.oracles`` (JSON verdict tree);
* ``timed_out``, ``agent_timeout_seconds``, ``deploy_failed``; plus ``problem_id`` and ``attempt``.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from .record import AttemptRecord


def _bool(value: Any) -> str:
    return "" if value is None else str(bool(value))


def _failed_reasons(verdict: Any) -> list[str]:
    if not isinstance(verdict, dict) or verdict.get("passed", True):
        return []
    leaves = [r for child in verdict.get("children") or () for r in _failed_reasons(child)]
    if leaves:
        return leaves
    return [f"{verdict.get('name')}: {verdict.get('error') or (verdict.get('evidence') or {}).get('reason') or 'failed'}"]


def upstream_row(record: AttemptRecord) -> dict[str, Any]:
    """One attempt as upstream's flattened CSV row."""
    row: dict[str, Any] = {"problem_id": record.problem_id, "attempt": record.attempt}
    if "diagnosis" in record.stages:
        verdict = dict(record.diagnosis or {})
        composite = verdict.get("composite")
        answers = verdict.get("answers") or []
        row.update({
            "Diagnosis.judgment": _bool(record.diagnosis_passed), "Diagnosis.success": _bool(record.diagnosis_passed),
            "Diagnosis.accuracy": "" if composite is None else round(float(composite) * 100, 2),
            "Diagnosis.composite_score": "" if composite is None else composite,
            "Diagnosis.dimensions": json.dumps(verdict.get("dimensions") or {}, sort_keys=True),
            "Diagnosis.checklist": json.dumps(answers),
            "Diagnosis.reasoning": " | ".join(f"{a.get('id')}: {a.get('evidence', '')}" for a in answers),
            "Diagnosis.submission": (verdict.get("inputs") or {}).get("submission", ""),
            "Diagnosis.error": verdict.get("error") or "",
            "TTL": "" if record.diagnosis_graded_s is None else round(record.diagnosis_graded_s, 3),
        })
    if "mitigation" in record.stages:
        verdict = dict(record.mitigation or {})
        row.update({
            "Mitigation.success": _bool(record.mitigation_passed),
            "Mitigation.reason": "; ".join(_failed_reasons(verdict)),
            "Mitigation.error": verdict.get("error") or "",
            "Mitigation.oracles": json.dumps(verdict),
            "TTM": "" if record.mitigation_graded_s is None else round(record.mitigation_graded_s, 3),
        })
    row.update({"timed_out": str("agent" in record.timeouts or record.agent_status == "timeout"),
                "agent_timeout_seconds": "" if record.agent_timeout_s is None else record.agent_timeout_s,
                "deploy_failed": str(bool(record.deploy_failed))})
    return row


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    columns = sorted({key for row in rows for key in row})  # upstream: the sorted union of every key
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: row.get(k, "") for k in columns})
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".csv.tmp")
    tmp.write_text(buffer.getvalue())
    os.replace(tmp, path)


class UpstreamLayout:
    """Writes one run's attempts in upstream's directory layout under ``results_dir/<MMDD_HHMM>``."""

    def __init__(self, results_dir: str | os.PathLike[str], *, started: float | None = None) -> None:
        stamp = time.strftime("%m%d_%H%M", time.localtime(started if started is not None else time.time()))
        self.root = Path(results_dir) / stamp
        self._rows: dict[tuple[str, str], list[dict[str, Any]]] = {}

    def append(self, record: AttemptRecord, trajectory: Path | None = None) -> Path:
        """Record one attempt; returns its ``run_<n>`` directory."""
        row = upstream_row(record)
        run_dir = self.root / record.agent / record.problem_id / f"run_{record.attempt}"
        _write_csv(run_dir / f"{record.problem_id}_results.csv", [row])
        if trajectory is not None and Path(trajectory).is_file():
            shutil.copyfile(trajectory, run_dir / "trajectory.json")
        self._rows.setdefault((record.agent, record.problem_id), []).append(row)
        problem_rows = self._rows[(record.agent, record.problem_id)]
        _write_csv(self.root / record.agent / record.problem_id / f"{record.problem_id}_{record.agent}_results.csv",
                   problem_rows)
        agent_rows = [r for (agent, _p), rows in self._rows.items() if agent == record.agent for r in rows]
        _write_csv(self.root / f"{record.agent}_ALL_results.csv", agent_rows)
        return run_dir
