"""Append attempt records to ``results.jsonl`` and ``results.csv``, durably, one attempt at a time.

Each append is written, flushed and fsynced before it returns, so a crash or Ctrl-C loses at most
the attempt in progress; ``--resume`` reads :meth:`ResultsDir.completed_keys` and skips what is
already recorded. A line torn by a crash is skipped when reading and never glued to the next one.

:class:`ResultsDir` is the read side (recorded keys, where a trajectory goes), which the runner,
the RL environment and executors use; :class:`ResultsWriter` adds :meth:`~ResultsWriter.append`,
which only the builtin results plugin (:mod:`sregym_core.results.results_writer`) calls, from
``sregym_attempt_finished``: the conductor hands every record to the plugin host.

.. versionadded:: 0.1
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import threading
from pathlib import Path
from typing import Any

import structlog

from sregym_core.errors import ConfigError

from .record import AttemptRecord, spreadsheet_safe
from .schema import validate_record_dict

log = structlog.get_logger()

JSONL_NAME = "results.jsonl"
CSV_NAME = "results.csv"
REJECTED_NAME = "results.rejected.jsonl"
TRAJECTORY_DIR = "trajectories"

#: CSV columns: the scalar fields of a record plus one-line verdict digests.
CSV_COLUMNS: tuple[str, ...] = (
    "run_id", "problem_id", "upstream_id", "agent", "attempt", "app", "model", "started_at", "finished_at", "success",
    "diagnosis_passed", "diagnosis_composite", "mitigation_passed", "mitigation_failures", "time_to_diagnose_s",
    "time_to_mitigate_s", "steps", "prompt_tokens", "completion_tokens", "cost_usd", "agent_status", "timeouts",
    "deploy_failed", "deploy_attempts", "error", "trajectory_path", "fault_mechanism",
)


def _failed_leaves(verdict: Any) -> list[str]:
    if not isinstance(verdict, dict) or verdict.get("passed", True):
        return []
    leaves = [leaf for child in verdict.get("children") or () for leaf in _failed_leaves(child)]
    if leaves:
        return leaves
    reason = verdict.get("error") or (verdict.get("evidence") or {}).get("reason") or "failed"
    return [f"{verdict.get('name')}: {reason}"]


def csv_row(record: AttemptRecord) -> dict[str, Any]:
    data = record.to_dict()
    row = {k: data.get(k) for k in CSV_COLUMNS if k in data}
    row["diagnosis_composite"] = (record.diagnosis or {}).get("composite")
    row["mitigation_failures"] = "; ".join(_failed_leaves(record.mitigation))
    row["timeouts"] = ";".join(record.timeouts)
    return {k: "" if row.get(k) is None else spreadsheet_safe(row[k]) for k in CSV_COLUMNS}


class ResultsDir:
    """The read side of a results directory: what is recorded, where an attempt's trajectory goes.

    :param directory: created if missing; holds ``results.jsonl``, ``results.csv`` and
        ``trajectories/``.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.jsonl_path = self.directory / JSONL_NAME
        self.csv_path = self.directory / CSV_NAME
        self.rejected_path = self.directory / REJECTED_NAME

    def records(self) -> list[AttemptRecord]:
        """Every readable record, in file order (torn or invalid lines are skipped with a warning)."""
        return read_records(self.directory)

    def completed_keys(self, *, include_deploy_failures: bool = False) -> set[tuple[str, str, str, int]]:
        """The :func:`~sregym_core.results.record.attempt_key` of recorded attempts, for ``--resume``.

        Attempts whose deploy failed did not run; they are not "completed" unless asked, so a
        resumed run tries them again.
        """
        return {
            r.key for r in self.records() if include_deploy_failures or not r.deploy_failed
        }

    def trajectory_path(self, problem_id: str, agent: str, attempt: int, run_id: str) -> Path:
        """Where the trajectory of an attempt goes (``trajectories/<run>/<problem>__<agent>__<n>.json``)."""
        name = f"{_safe(problem_id)}__{_safe(agent)}__{int(attempt)}.json"
        path = self.directory / TRAJECTORY_DIR / _safe(run_id) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def relative(self, path: str | os.PathLike[str]) -> str:
        """A path as records store it: relative to the results directory when inside it."""
        try:
            return str(Path(path).resolve().relative_to(self.directory.resolve()))
        except ValueError:
            return str(path)


class ResultsWriter(ResultsDir):
    """Durable per-attempt results in ``directory``.

    :param directory: created if missing; holds ``results.jsonl``, ``results.csv`` and
        ``trajectories/``.
    :param validate: check each record against the result schema before writing it.
    """

    def __init__(self, directory: str | os.PathLike[str], *, validate: bool = True) -> None:
        super().__init__(directory)
        self.validate = validate
        self._lock = threading.Lock()

    def append(self, record: AttemptRecord) -> None:
        """Write one record to both files; returns once both are on disk."""
        data = record.to_dict()
        line = json.dumps(data, sort_keys=False, default=str, ensure_ascii=False) + "\n"
        if self.validate:
            try:
                validate_record_dict(data)
            except ConfigError as exc:
                # an attempt may have taken many minutes: keep it, out of the way of readers, then fail loudly
                with self._lock:
                    _append_durably(self.rejected_path, line)
                exc.hints = (*exc.hints, f"the record was kept in {self.rejected_path}")
                raise
        with self._lock:
            _append_durably(self.jsonl_path, line)
            buffer = io.StringIO()
            writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, lineterminator="\n")
            if not self.csv_path.exists() or self.csv_path.stat().st_size == 0:
                writer.writeheader()
            writer.writerow(csv_row(record))
            _append_durably(self.csv_path, buffer.getvalue())
        log.debug("attempt_recorded", problem=record.problem_id, agent=record.agent, attempt=record.attempt)


def _safe(part: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+|\.{2,}", "_", str(part)).strip("._") or "_"


def _append_durably(path: Path, text: str) -> None:
    with open(path, "a+b") as handle:
        handle.seek(0, os.SEEK_END)
        if handle.tell() > 0:
            handle.seek(-1, os.SEEK_END)
            if handle.read(1) != b"\n":  # a torn line from a crash: never glue the next record to it
                handle.write(b"\n")
        handle.write(text.encode("utf-8"))
        handle.flush()
        os.fsync(handle.fileno())


def read_records(directory: str | os.PathLike[str]) -> list[AttemptRecord]:
    """Read ``results.jsonl`` of ``directory``; missing file: no records."""
    path = Path(directory) / JSONL_NAME
    if not path.exists():
        return []
    records: list[AttemptRecord] = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                records.append(AttemptRecord.from_dict(json.loads(line)))
            except (ValueError, TypeError, KeyError) as exc:
                log.warning("result_line_skipped", path=str(path), line=number, error=str(exc))
    return records
