"""What the report is built from: result sets (one per results directory), attempts with their page
names, tallies per group, and the pieces of a record that older or newer records may lack.

.. versionadded:: 0.2
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from ..record import AttemptRecord
from ..summary import latest_per_key
from ..writer import read_records

UNKNOWN_LAYER = "unknown"


@attrs.frozen
class ResultSet:
    """The records of one results directory; ``label`` names it in the leaderboard (a suite, a model...)."""

    label: str
    directory: Path | None
    records: tuple[AttemptRecord, ...]


@attrs.frozen
class Attempt:
    """One attempt as the report shows it."""

    suite: str
    directory: Path | None
    record: AttemptRecord
    page: str  #: file name of its page, inside the report's ``attempts/`` folder

    @property
    def entrant(self) -> str:
        return entrant_label(self.record)

    @property
    def ran(self) -> bool:
        return not self.record.deploy_failed


def entrant_label(record: AttemptRecord) -> str:
    """What the leaderboard ranks: the agent, with its model when it has one."""
    return f"{record.agent} ({record.model})" if record.model else record.agent


def load_sets(directories: Sequence[str | os.PathLike[str]]) -> list[ResultSet]:
    """One set per directory (latest record per attempt key), labelled by the directory's name,
    made unique with its parents' names when two directories share a name."""
    paths = [Path(d) for d in directories]
    labels = _unique_labels(paths)
    return [ResultSet(label=label, directory=path, records=tuple(latest_per_key(read_records(path))))
            for label, path in zip(labels, paths, strict=True)]


def _unique_labels(paths: Sequence[Path]) -> list[str]:
    resolved = [p.resolve() for p in paths]
    depth = 1
    while True:
        labels = ["/".join(r.parts[-depth:]) or str(r) for r in resolved]
        if len(set(labels)) == len(labels) or depth > max(len(r.parts) for r in resolved):
            return labels
        depth += 1


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._")[:60] or "_"


def attempts_of(sets: Sequence[ResultSet]) -> list[Attempt]:
    out = []
    for index, result_set in enumerate(sets, 1):
        for record in result_set.records:
            digest = hashlib.sha256(json.dumps([result_set.label, record.run_id, *record.key]).encode()).hexdigest()[:8]
            page = f"{index}-{_safe(record.problem_id)}-{_safe(record.agent)}-{record.attempt}-{digest}.html"
            out.append(Attempt(suite=result_set.label, directory=result_set.directory, record=record, page=page))
    return out


# ---------------------------------------------------------------- tallies


@attrs.frozen
class Tally:
    """Counts over a group of attempts; rates count the attempts that ran (deploy failures did not)."""

    n: int
    success: int
    diagnosis: int
    mitigation: int
    ttd: tuple[float, ...]
    ttm: tuple[float, ...]
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    has_cost: bool
    timeouts: int
    crashes: int
    deploy_failures: int

    @property
    def success_rate(self) -> float:
        return self.success / self.n if self.n else 0.0

    @property
    def median_ttd(self) -> float | None:
        return statistics.median(self.ttd) if self.ttd else None

    @property
    def median_ttm(self) -> float | None:
        return statistics.median(self.ttm) if self.ttm else None


def tally(attempts: Iterable[Attempt]) -> Tally:
    group = list(attempts)
    ran = [a.record for a in group if a.ran]
    return Tally(
        n=len(ran),
        success=sum(r.success for r in ran),
        diagnosis=sum(bool(r.diagnosis_passed) for r in ran),
        mitigation=sum(bool(r.mitigation_passed) for r in ran),
        ttd=tuple(r.time_to_diagnose_s for r in ran if r.diagnosis_passed and r.time_to_diagnose_s is not None),
        ttm=tuple(r.time_to_mitigate_s for r in ran if r.mitigation_passed and r.time_to_mitigate_s is not None),
        prompt_tokens=sum(r.prompt_tokens or 0 for r in ran),
        completion_tokens=sum(r.completion_tokens or 0 for r in ran),
        cost_usd=sum(r.cost_usd or 0.0 for r in ran),
        has_cost=any(r.cost_usd for r in ran),
        timeouts=sum(r.agent_status == "timeout" or bool(r.timeouts) for r in ran),
        crashes=sum(r.agent_status in ("crashed", "garbage") for r in ran),
        deploy_failures=sum(a.record.deploy_failed for a in group),
    )


def rank_key(t: Tally) -> tuple[float, int]:
    """How entrants are ordered everywhere in the report: success rate, then attempts (more first)."""
    return (-t.success_rate, -t.n)


@attrs.frozen
class Standing:
    """One row of the leaderboard: an agent with its model, its tally per suite and over all of them."""

    rank: int  #: 1 for the best; entrants with the same rate and the same number of attempts share a rank
    entrant: str
    cells: tuple[Tally | None, ...]  #: per suite, in the order asked for; ``None``: no attempt in that suite
    overall: Tally


def standings(attempts: Sequence[Attempt], suites: Sequence[str]) -> list[Standing]:
    """The leaderboard: one row per agent (with its model), ranked by overall success rate, then by
    attempts, then by name; one cell per suite (attempts are in a suite by :attr:`Attempt.suite`)."""
    by_entrant = group_by(attempts, lambda a: a.entrant)
    by_cell = group_by(attempts, lambda a: (a.entrant, a.suite))
    overall = {name: tally(group) for name, group in by_entrant.items()}
    ordered = sorted(overall, key=lambda name: (rank_key(overall[name]), name))
    rows: list[Standing] = []
    for position, name in enumerate(ordered, 1):
        tied = rows and rank_key(rows[-1].overall) == rank_key(overall[name])
        cells = tuple(tally(by_cell[(name, s)]) if (name, s) in by_cell else None for s in suites)
        rows.append(Standing(rank=rows[-1].rank if tied else position, entrant=name, cells=cells,
                             overall=overall[name]))
    return rows


def group_by(attempts: Iterable[Attempt], key) -> dict[Any, list[Attempt]]:
    groups: dict[Any, list[Attempt]] = {}
    for attempt in attempts:
        groups.setdefault(key(attempt), []).append(attempt)
    return groups


def layer_of(record: AttemptRecord, layers: Mapping[str, str]) -> str:
    """The fault layer: from the record (its ground truth) when it says, else from the problem catalogue."""
    for key in ("layer",):
        if isinstance(record.extra.get(key), str):
            return record.extra[key]
    truth = ((record.diagnosis or {}).get("inputs") or {}).get("truth")
    if isinstance(truth, list):
        found = sorted({t["layer"] for t in truth if isinstance(t, Mapping) and isinstance(t.get("layer"), str)})
        if found:
            return "+".join(found)
    return layers.get(record.problem_id, UNKNOWN_LAYER)


# ---------------------------------------------------------------- optional parts of a record


def noise_events(record: AttemptRecord) -> list[Mapping[str, Any]]:
    """Noise injected during the attempt, if the record carries it (newer records do)."""
    for source in (getattr(record, "noise_events", None), getattr(record, "noise", None),
                   record.extra.get("noise_events"), record.extra.get("noise")):
        if isinstance(source, list):
            return [e if isinstance(e, Mapping) else {"event": e} for e in source]
        if isinstance(source, Mapping) and isinstance(source.get("events"), list):
            return [e if isinstance(e, Mapping) else {"event": e} for e in source["events"]]
    return []


def parse_time(value: Any) -> float | None:
    """Seconds since the epoch from an ISO-8601 string or an epoch number; ``None`` otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if value > 1e9 else None
    if isinstance(value, str):
        try:
            return _dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def event_offset(event: Mapping[str, Any], start: float | None) -> float | None:
    """When an event happened, in seconds from the attempt's start."""
    for key in ("offset_s", "at_s", "t_s", "elapsed_s"):
        if isinstance(event.get(key), int | float) and not isinstance(event.get(key), bool):
            return float(event[key])
    for key in ("at", "timestamp", "started_at", "injected_at", "time"):
        epoch = parse_time(event.get(key))
        if epoch is not None and start is not None:
            return epoch - start
    return None


def load_trajectory(attempt: Attempt) -> tuple[dict[str, Any] | None, str | None]:
    """The attempt's trajectory document, or why it is not shown.

    The path comes from the record; only files inside the results directory are read.
    """
    relative = attempt.record.trajectory_path
    if not relative:
        return None, "no trajectory was recorded"
    if attempt.directory is None:
        return None, "the results directory is unknown"
    base = attempt.directory.resolve()
    path = (base / relative).resolve()
    if not path.is_relative_to(base):
        return None, f"trajectory path {relative!r} is outside the results directory; not read"
    try:
        document = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except FileNotFoundError:
        return None, f"trajectory file {relative} is missing"
    except (OSError, ValueError) as exc:
        return None, f"trajectory file {relative} is unreadable: {exc}"
    if not isinstance(document, dict) or not isinstance(document.get("steps", []), list):
        return None, f"trajectory file {relative} is not an ATIF document"
    return document, None
