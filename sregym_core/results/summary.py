"""Summaries of a results directory: one row per problem x agent, and the printable table.

Rates count every recorded attempt (an attempt without a diagnosis fails diagnosis); a stage's
rate counts the attempts that ran the stage, and is ``None`` (printed "not run") when none did
(``--stages mitigation``). Median
time-to-diagnose and time-to-mitigate are over the attempts whose stage *passed*: the time it takes
to get it right. When an attempt key appears several times (a rerun without ``--resume``), the
last record wins.

.. versionadded:: 0.1
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Iterable, Sequence

import attrs

from .record import AttemptRecord
from .writer import read_records


@attrs.frozen(kw_only=True)
class SummaryRow:
    """Aggregate of the attempts of one agent at one problem (or ``*`` for all problems)."""

    problem_id: str
    agent: str
    attempts: int
    success_rate: float
    diagnosis_pass_rate: float | None  # None: no attempt ran the stage
    mitigation_pass_rate: float | None
    median_ttd_s: float | None
    median_ttm_s: float | None
    crashed: int = 0
    timeouts: int = 0
    deploy_failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


def latest_per_key(records: Iterable[AttemptRecord]) -> list[AttemptRecord]:
    latest: dict[tuple[str, str, str, int], AttemptRecord] = {}
    for record in records:
        latest.pop(record.key, None)  # keep file order of the latest occurrence
        latest[record.key] = record
    return list(latest.values())


def _median(values: Sequence[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def _row(problem_id: str, agent: str, group: Sequence[AttemptRecord]) -> SummaryRow:
    ran = [r for r in group if not r.deploy_failed]
    n = len(ran)

    def rate(flag: Iterable[bool]) -> float:
        return round(sum(flag) / n, 4) if n else 0.0

    def stage_rate(stage: str, passed) -> float | None:
        graded = [r for r in ran if stage in r.stages]
        if ran and not graded:
            return None
        return round(sum(bool(passed(r)) for r in graded) / len(graded), 4) if graded else 0.0

    return SummaryRow(
        problem_id=problem_id,
        agent=agent,
        attempts=n,
        success_rate=rate(r.success for r in ran),
        diagnosis_pass_rate=stage_rate("diagnosis", lambda r: r.diagnosis_passed),
        mitigation_pass_rate=stage_rate("mitigation", lambda r: r.mitigation_passed),
        median_ttd_s=_median([r.time_to_diagnose_s for r in ran if r.diagnosis_passed and r.time_to_diagnose_s is not None]),
        median_ttm_s=_median([r.time_to_mitigate_s for r in ran if r.mitigation_passed and r.time_to_mitigate_s is not None]),
        crashed=sum(r.agent_status in ("crashed", "garbage") for r in ran),
        timeouts=sum(r.agent_status == "timeout" or bool(r.timeouts) for r in ran),
        deploy_failures=sum(r.deploy_failed for r in group),
        prompt_tokens=sum(r.prompt_tokens or 0 for r in ran),
        completion_tokens=sum(r.completion_tokens or 0 for r in ran),
        cost_usd=round(sum(r.cost_usd or 0.0 for r in ran), 6),
    )


def summarize_records(records: Iterable[AttemptRecord], *, totals: bool = True) -> list[SummaryRow]:
    """Rows per (problem, agent), sorted; with ``totals``, one ``*`` row per agent after them."""
    records = latest_per_key(records)
    groups: dict[tuple[str, str], list[AttemptRecord]] = {}
    for record in records:
        groups.setdefault((record.problem_id, record.agent), []).append(record)
    rows = [_row(p, a, g) for (p, a), g in sorted(groups.items())]
    if totals and len({p for p, _ in groups}) > 1:
        by_agent: dict[str, list[AttemptRecord]] = {}
        for record in records:
            by_agent.setdefault(record.agent, []).append(record)
        rows += [_row("*", agent, group) for agent, group in sorted(by_agent.items())]
    return rows


def summarize(directory: str | os.PathLike[str]) -> list[SummaryRow]:
    """Summary rows of the results in ``directory`` (see :func:`summarize_records`)."""
    return summarize_records(read_records(directory))


NOT_RUN = "not run"


def _fmt_rate(value: float | None) -> str:
    return NOT_RUN if value is None else f"{value * 100:.0f}%"


def _fmt_seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


TABLE_HEADERS = ("problem", "agent", "n", "success", "diagnosis", "mitigation", "med TTD s", "med TTM s", "crash", "timeout", "deploy fail")


def table_rows(rows: Sequence[SummaryRow]) -> list[tuple[str, ...]]:
    return [
        (
            r.problem_id,
            r.agent,
            str(r.attempts),
            _fmt_rate(r.success_rate),
            _fmt_rate(r.diagnosis_pass_rate),
            _fmt_rate(r.mitigation_pass_rate),
            _fmt_seconds(r.median_ttd_s),
            _fmt_seconds(r.median_ttm_s),
            str(r.crashed),
            str(r.timeouts),
            str(r.deploy_failures),
        )
        for r in rows
    ]


def format_summary(rows: Sequence[SummaryRow]) -> str:
    """A plain-text table (what ``sregym report`` prints)."""
    if not rows:
        return "no results recorded"
    body = table_rows(rows)
    widths = [max(len(h), *(len(row[i]) for row in body)) for i, h in enumerate(TABLE_HEADERS)]
    numeric = set(range(2, len(TABLE_HEADERS)))

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if i in numeric else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    out = [line(TABLE_HEADERS), line(["-" * w for w in widths])]
    for row in body:
        if row[0] == "*" and out[-1][0] != "-":
            out.append(line(["-" * w for w in widths]))
        out.append(line(row))
    return "\n".join(out)


def judges_note(records: Iterable[AttemptRecord]) -> str | None:
    """One line when the diagnoses were graded by different judges (their pass rates differ in meaning)."""
    judges = sorted({str(r.diagnosis["judge"]) for r in records if r.diagnosis and r.diagnosis.get("judge")})
    if len(judges) < 2:
        return None
    return f"note: diagnoses graded by different judges ({', '.join(judges)}); diagnosis pass rates are not comparable across them"


def summary_table(directory: str | os.PathLike[str]) -> str:
    """The printable summary table of a results directory (and a note when judges were mixed)."""
    records = read_records(directory)
    note = judges_note(latest_per_key(records))
    return format_summary(summarize_records(records)) + (f"\n{note}" if note else "")
