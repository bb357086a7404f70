"""Results in upstream SREGym's layout and cell formats, beside ``results.jsonl`` (which stays the
source of truth, typed, with both ids).

Upstream writes, per run started at ``<MMDD_HHMM>``::

    <results>/<MMDD_HHMM>/<agent>/<problem>/run_<n>/<problem>_results.csv   one row per attempt
    <results>/<MMDD_HHMM>/<agent>/<problem>/run_<n>/trajectory.json          the ATIF trajectory
    <results>/<MMDD_HHMM>/<agent>/<problem>/<problem>_<agent>_results.csv    every attempt of the problem
    <results>/<MMDD_HHMM>/<agent>_ALL_results.csv                             every attempt of the agent

with nested verdicts flattened as ``Stage.key`` and the columns the sorted union of all keys
(upstream-parity.md §4.1). ``<problem>`` and the ``problem_id`` column are the upstream id when
the problem was run by one (``record.upstream_id``), else ours. Cells are what upstream's
``csv`` module makes of its Python values: booleans ``True``/``False``, no value empty, and every
dict or list cell ``str()`` of plain Python values, so ``ast.literal_eval`` reads it back:

* ``Diagnosis.judgment``/``Diagnosis.success``: ``True``/``False``; ``Diagnosis.accuracy``:
  composite × 100; ``Diagnosis.composite_score`` (rounded to 0.01, as upstream rounds);
  ``Diagnosis.dimensions``: ``{'D1': {'name': 'Fault Localization', 'score': 0.67}, ...}`` (the
  project's dimensions localization/characterization/scope are D1/D2/D3);
  ``Diagnosis.checklist``: ``[{'id': ..., 'answer': 'Yes'|'No', 'evidence': ..., 'confidence':
  'High'|'Medium'|'Low'}, ...]``; ``Diagnosis.reasoning`` (the evidence of each answer),
  ``Diagnosis.submission``, ``Diagnosis.error``;
* ``TTL``/``TTM``: seconds from the end of injection to the end of judging / of the mitigation
  oracle (the record's ``diagnosis_graded_s``/``mitigation_graded_s``);
* ``Mitigation.success``, ``Mitigation.reason`` (failed oracle leaves), ``Mitigation.error``,
  ``Mitigation.oracles`` (the verdict tree);
* ``timed_out``, ``agent_timeout_seconds``, ``deploy_failed``; plus ``problem_id`` and ``attempt``.

A stage the attempt did not run has no cells (upstream's row has no such keys).
"""

from __future__ import annotations

import csv
import io
import math
import os
import shutil
import time
from pathlib import Path
from typing import Any

from .record import AttemptRecord, spreadsheet_safe


def _bool(value: Any) -> str:
    return "" if value is None else str(bool(value))


def _plain(value: Any) -> Any:
    """``value`` as plain Python literals (dict, list, str, int, float, bool, None): what
    ``str()`` may print for ``ast.literal_eval`` to read back. Anything else becomes its string;
    a non-finite float (``nan`` is no literal) too."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def literal_cell(value: Any) -> str:
    """A dict or list cell as upstream writes it: ``str()`` of plain Python values."""
    return str(_plain(value))


def _number(value: Any) -> Any:
    """A number as upstream's Python would print it: an integral float as an int (1800, not 1800.0)."""
    if value is None:
        return ""
    value = float(value)
    return int(value) if value.is_integer() else value


def _confidence(value: Any) -> str:
    """Upstream's judge answers High/Medium/Low; the project's judges a number in 0..1."""
    if isinstance(value, str):
        return value
    try:
        number = float(value)
    except (TypeError, ValueError):
        return "Medium"
    return "High" if number >= 0.8 else "Medium" if number >= 0.5 else "Low"


def upstream_dimensions(dimensions: Any) -> dict[str, dict[str, Any]]:
    """``{'D1': {'name': 'Fault Localization', 'score': 0.67}, ...}`` from either rubric's scores."""
    from ..oracles.judge import DIMENSIONS, UPSTREAM_DIMENSION_NAMES

    scores = dict(dimensions or {})
    by_number = {f"D{index}": scores[name] for index, name in enumerate(DIMENSIONS, 1) if name in scores}
    by_number.update({key: value for key, value in scores.items() if key in UPSTREAM_DIMENSION_NAMES})
    return {key: {"name": UPSTREAM_DIMENSION_NAMES[key], "score": round(float(value), 2)}
            for key, value in sorted(by_number.items())}


def upstream_checklist(answers: Any) -> list[dict[str, Any]]:
    """The judge's answers as upstream's checklist: ``Yes``/``No``, confidence High/Medium/Low."""
    return [{"id": a.get("id"), "answer": "Yes" if a.get("answer") is True or a.get("answer") == "Yes" else "No",
             "evidence": a.get("evidence", ""), "confidence": _confidence(a.get("confidence", 1.0))}
            for a in answers or () if isinstance(a, dict)]


def _failed_reasons(verdict: Any) -> list[str]:
    if not isinstance(verdict, dict) or verdict.get("passed", True):
        return []
    leaves = [r for child in verdict.get("children") or () for r in _failed_reasons(child)]
    if leaves:
        return leaves
    return [f"{verdict.get('name')}: {verdict.get('error') or (verdict.get('evidence') or {}).get('reason') or 'failed'}"]


def upstream_problem_id(record: AttemptRecord) -> str:
    """The id upstream's files are keyed by: the upstream id the problem was run as, else ours."""
    return record.upstream_id or record.problem_id


def upstream_row(record: AttemptRecord) -> dict[str, Any]:
    """One attempt as upstream's flattened CSV row."""
    row: dict[str, Any] = {"problem_id": upstream_problem_id(record), "attempt": record.attempt}
    if "diagnosis" in record.stages:
        verdict = dict(record.diagnosis or {})
        composite = verdict.get("composite")
        answers = verdict.get("answers") or []
        row.update({
            "Diagnosis.judgment": _bool(record.diagnosis_passed), "Diagnosis.success": _bool(record.diagnosis_passed),
            "Diagnosis.accuracy": "" if composite is None else round(float(composite) * 100, 2),
            "Diagnosis.composite_score": "" if composite is None else round(float(composite), 2),
            "Diagnosis.dimensions": literal_cell(upstream_dimensions(verdict.get("dimensions"))),
            "Diagnosis.checklist": literal_cell(upstream_checklist(answers)),
            "Diagnosis.reasoning": " | ".join(f"{a.get('id')}: {a.get('evidence', '')}" for a in answers
                                               if isinstance(a, dict)),
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
            "Mitigation.oracles": literal_cell(verdict),
            "TTM": "" if record.mitigation_graded_s is None else round(record.mitigation_graded_s, 3),
        })
    row.update({"timed_out": str("agent" in record.timeouts or record.agent_status == "timeout"),
                "agent_timeout_seconds": _number(record.agent_timeout_s),
                "deploy_failed": str(bool(record.deploy_failed))})
    return row


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    columns = sorted({key for row in rows for key in row})  # upstream: the sorted union of every key
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: spreadsheet_safe(row.get(k, "")) for k in columns})
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
        problem = upstream_problem_id(record)
        run_dir = self.root / record.agent / problem / f"run_{record.attempt}"
        _write_csv(run_dir / f"{problem}_results.csv", [row])
        if trajectory is not None and Path(trajectory).is_file():
            shutil.copyfile(trajectory, run_dir / "trajectory.json")
        self._rows.setdefault((record.agent, problem), []).append(row)
        problem_rows = self._rows[(record.agent, problem)]
        _write_csv(self.root / record.agent / problem / f"{problem}_{record.agent}_results.csv", problem_rows)
        agent_rows = [r for (agent, _p), rows in self._rows.items() if agent == record.agent for r in rows]
        _write_csv(self.root / f"{record.agent}_ALL_results.csv", agent_rows)
        return run_dir
