"""A self-contained HTML report of a results directory, with inline SVG plots.

No plotting library and no JavaScript: the charts are SVG drawn here, so the report opens
anywhere and can be attached to a CI run. Plots: success rate by problem and agent (grouped
bars), and the distributions of time-to-diagnose and time-to-mitigate per agent (box plots with
every attempt drawn as a dot).

.. versionadded:: 0.1
"""

from __future__ import annotations

import html
import os
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path

from .record import AttemptRecord, utc_now
from .summary import TABLE_HEADERS, SummaryRow, latest_per_key, summarize_records, table_rows
from .writer import _failed_leaves, read_records

REPORT_NAME = "report.html"
PALETTE = ("#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377", "#bbbbbb", "#222255")


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _color(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def _legend(agents: Sequence[str], x: float, y: float) -> list[str]:
    parts = []
    for i, agent in enumerate(agents):
        yy = y + i * 18
        parts.append(f'<rect x="{x}" y="{yy - 10}" width="12" height="12" fill="{_color(i)}"/>')
        parts.append(f'<text x="{x + 18}" y="{yy}" font-size="12">{_e(agent)}</text>')
    return parts


def success_chart(rows: Sequence[SummaryRow]) -> str:
    """Grouped bars: one group per problem, one bar per agent, height = success rate."""
    rows = [r for r in rows if r.problem_id != "*"]
    problems = sorted({r.problem_id for r in rows})
    agents = sorted({r.agent for r in rows})
    if not problems:
        return "<p>No attempts recorded.</p>"
    rate = {(r.problem_id, r.agent): r.success_rate for r in rows}
    bar, gap, left, top, plot_h = 16, 18, 50, 20, 180
    group_w = bar * len(agents) + gap
    width = left + group_w * len(problems) + 160
    height = top + plot_h + 120
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="success rate by problem and agent" font-family="sans-serif">'
    ]
    for tick in (0, 25, 50, 75, 100):
        y = top + plot_h - plot_h * tick / 100
        parts.append(f'<line x1="{left}" y1="{y}" x2="{left + group_w * len(problems)}" y2="{y}" stroke="#ddd"/>')
        parts.append(f'<text x="{left - 6}" y="{y + 4}" font-size="11" text-anchor="end">{tick}%</text>')
    for p_index, problem in enumerate(problems):
        x0 = left + p_index * group_w + gap / 2
        for a_index, agent in enumerate(agents):
            if (problem, agent) not in rate:
                continue
            value = rate[(problem, agent)]
            h = max(plot_h * value, 1)
            x = x0 + a_index * bar
            parts.append(
                f'<rect class="bar" x="{x}" y="{top + plot_h - h}" width="{bar - 2}" height="{h}" fill="{_color(a_index)}">'
                f"<title>{_e(problem)} / {_e(agent)}: {value * 100:.0f}%</title></rect>"
            )
        cx = x0 + bar * len(agents) / 2
        parts.append(
            f'<text x="{cx}" y="{top + plot_h + 14}" font-size="11" text-anchor="end" '
            f'transform="rotate(-35 {cx} {top + plot_h + 14})">{_e(problem)}</text>'
        )
    parts += _legend(agents, left + group_w * len(problems) + 20, top + 10)
    parts.append("</svg>")
    return "".join(parts)


def distribution_chart(values_by_agent: Mapping[str, Sequence[float]], label: str) -> str:
    """Horizontal box plots per agent, every value also drawn as a dot."""
    agents = [a for a in sorted(values_by_agent) if values_by_agent[a]]
    if not agents:
        return f"<p>No {html.escape(label)} recorded (no passing stage).</p>"
    high = max(max(v) for v in values_by_agent.values() if v) or 1.0
    left, top, row_h, plot_w = 140, 20, 34, 480
    height = top + row_h * len(agents) + 40

    def sx(value: float) -> float:
        return round(left + plot_w * value / high, 2)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + plot_w + 40}" height="{height}" role="img" '
        f'aria-label="{_e(label)} distribution" font-family="sans-serif">'
    ]
    for i in range(5):
        tick = high * i / 4
        parts.append(f'<line x1="{sx(tick)}" y1="{top - 5}" x2="{sx(tick)}" y2="{top + row_h * len(agents)}" stroke="#eee"/>')
        parts.append(f'<text x="{sx(tick)}" y="{top + row_h * len(agents) + 16}" font-size="11" text-anchor="middle">{tick:.0f}s</text>')
    for index, agent in enumerate(agents):
        values = sorted(values_by_agent[agent])
        cy = top + row_h * index + row_h / 2
        q1, q2, q3 = (statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else [values[0]] * 3)
        color = _color(index)
        parts.append(f'<text x="{left - 8}" y="{cy + 4}" font-size="12" text-anchor="end">{_e(agent)}</text>')
        parts.append(f'<line x1="{sx(values[0])}" y1="{cy}" x2="{sx(values[-1])}" y2="{cy}" stroke="{color}"/>')
        parts.append(
            f'<rect class="box" x="{sx(q1)}" y="{cy - 9}" width="{max(sx(q3) - sx(q1), 1)}" height="18" '
            f'fill="{color}" fill-opacity="0.25" stroke="{color}"><title>{_e(agent)}: median {q2:.1f}s, '
            f"n={len(values)}</title></rect>"
        )
        parts.append(f'<line x1="{sx(q2)}" y1="{cy - 9}" x2="{sx(q2)}" y2="{cy + 9}" stroke="{color}" stroke-width="2"/>')
        for value in values:
            parts.append(f'<circle class="dot" cx="{sx(value)}" cy="{cy}" r="2.5" fill="{color}"/>')
    parts.append("</svg>")
    return "".join(parts)


def _summary_html(rows: Sequence[SummaryRow]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in TABLE_HEADERS)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in table_rows(rows))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _attempts_html(records: Sequence[AttemptRecord]) -> str:
    head = "".join(f"<th>{h}</th>" for h in ("problem", "agent", "#", "success", "diagnosis", "mitigation", "status", "why"))
    rows = []
    for r in records:
        why = []
        if r.diagnosis and not r.diagnosis_passed:
            no = [a.get("id", "?") for a in r.diagnosis.get("answers", []) if not a.get("answer")]
            why.append(f"judge {r.diagnosis.get('composite', 0):.2f}: no on {', '.join(no)}")
        why += _failed_leaves(r.mitigation)
        if r.error:
            why.append(r.error)
        cells = (
            r.problem_id, r.agent, r.attempt, "yes" if r.success else "no", _flag(r.diagnosis_passed), _flag(r.mitigation_passed),
            r.agent_status + (" (deploy failed)" if r.deploy_failed else ""), "; ".join(why),
        )
        css = "ok" if r.success else "fail"
        rows.append(f'<tr class="{css}">' + "".join(f"<td>{_e(c)}</td>" for c in cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def checklist_html(records: Sequence[AttemptRecord]) -> str:
    """Share of "yes" answers per checklist question and agent: where diagnoses fall short."""
    counts: dict[str, dict[str, list[int]]] = {}
    questions: list[str] = []
    for record in records:
        for answer in (record.diagnosis or {}).get("answers", []) or []:
            qid = str(answer.get("id", "?"))
            if qid not in questions:
                questions.append(qid)
            cell = counts.setdefault(record.agent, {}).setdefault(qid, [0, 0])
            cell[0] += bool(answer.get("answer"))
            cell[1] += 1
    if not counts:
        return "<p>No judged diagnoses.</p>"
    head = "<th>agent</th>" + "".join(f"<th>{_e(q)}</th>" for q in questions)
    rows = []
    for agent in sorted(counts):
        cells = []
        for q in questions:
            yes, n = counts[agent].get(q, [0, 0])
            cells.append(f"<td>{yes * 100 // n}%</td>" if n else "<td>-</td>")
        rows.append(f"<tr><td>{_e(agent)}</td>{''.join(cells)}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _flag(value: bool | None) -> str:
    return "-" if value is None else ("pass" if value else "fail")


_STYLE = """
body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:1em 0}
th,td{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left}th{background:#f4f4f4}
tr.fail td:nth-child(4){color:#b00}tr.ok td:nth-child(4){color:#070}h2{margin-top:1.6em}
"""


def render_html(records: Sequence[AttemptRecord], *, title: str = "SREGym results") -> str:
    records = latest_per_key(records)
    rows = summarize_records(records)
    ttd: dict[str, list[float]] = {}
    ttm: dict[str, list[float]] = {}
    for r in records:
        if r.diagnosis_passed and r.time_to_diagnose_s is not None:
            ttd.setdefault(r.agent, []).append(r.time_to_diagnose_s)
        if r.mitigation_passed and r.time_to_mitigate_s is not None:
            ttm.setdefault(r.agent, []).append(r.time_to_mitigate_s)
    return "\n".join(
        [
            "<!DOCTYPE html>",
            f'<html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title><style>{_STYLE}</style></head><body>',
            f"<h1>{_e(title)}</h1><p>{len(records)} attempts; generated {_e(utc_now())}.</p>",
            "<h2>Summary</h2>",
            _summary_html(rows),
            "<h2>Success by problem and agent</h2>",
            success_chart(rows),
            "<h2>Time to diagnose (passing diagnoses)</h2>",
            distribution_chart(ttd, "time to diagnose"),
            "<h2>Time to mitigate (passing mitigations)</h2>",
            distribution_chart(ttm, "time to mitigate"),
            "<h2>Diagnosis checklist (share of yes answers)</h2>",
            checklist_html(records),
            "<h2>Attempts</h2>",
            _attempts_html(records),
            "</body></html>",
        ]
    )


def write_html_report(directory: str | os.PathLike[str], out: str | os.PathLike[str] | None = None) -> Path:
    """Write ``report.html`` (or ``out``) for the results in ``directory``; returns its path."""
    path = Path(out) if out else Path(directory) / REPORT_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(read_records(directory), title=f"SREGym results: {Path(directory).name}"), encoding="utf-8")
    return path
