"""The report's main page: overview, leaderboard, per-problem and per-layer breakdowns, the
diagnosis checklist, and every attempt linked to its own page.

.. versionadded:: 0.2
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..record import utc_now
from .charts import RateBar, color, duration_chart, rate_chart
from .markup import badge, e, figure, page, table
from .measure import format_cost, format_duration, format_int, wilson_interval
from .model import Attempt, ResultSet, Tally, group_by, layer_of, rank_key, standings, tally

RATES = ("success", "diagnosis", "mitigation")
#: Above this many bars, breakdown charts draw one bar per problem or layer (all agents together).
MAX_BARS = 120


def _ci(successes: int, n: int) -> str:
    if not n:
        return '<span class="muted">no attempts</span>'
    low, high = wilson_interval(successes, n)
    return (f'<span class="rate">{successes / n * 100:.0f}%</span> <span class="muted">{successes}/{n}</span> '
            f'<span class="ci muted" title="95% Wilson confidence interval">[{low * 100:.0f}\u2013{high * 100:.0f}%]</span>')


def _entrants_sorted(groups: Mapping[str, Sequence[Attempt]]) -> list[str]:
    """Best first, as the leaderboard ranks them: success rate, then attempts, then name."""
    tallies = {name: tally(group) for name, group in groups.items()}
    return sorted(groups, key=lambda name: (rank_key(tallies[name]), name))


def attempt_href(attempt: Attempt, assets: str) -> str:
    return f"{assets}/attempts/{attempt.page}"


def _attempt_links(attempts: Sequence[Attempt], assets: str) -> str:
    links = []
    for a in sorted(attempts, key=lambda a: (a.suite, a.record.attempt)):
        r = a.record
        mark, word = ("\u2713", "success") if r.success else ("\u2717", "failed")
        if r.deploy_failed:
            mark, word = "\u2298", "deploy failed"
        label = f"{r.problem_id}, {r.agent} attempt {r.attempt} ({a.suite}): {word}"
        links.append(f'<a class="att {"ok" if r.success else "bad"}" href="{e(attempt_href(a, assets))}" '
                     f'title="{e(label)}" aria-label="{e(label)}">#{r.attempt}{mark}</a>')
    return " ".join(links)


def _overview(attempts: Sequence[Attempt], entrants: list[str], by_entrant: Mapping[str, list[Attempt]]) -> str:
    total = tally(attempts)
    cards = [
        ("attempts", f"{total.n}" + (f' <span class="muted">+{total.deploy_failures} not deployed</span>' if total.deploy_failures else "")),
        ("success", _ci(total.success, total.n)),
        ("diagnosis", _ci(total.diagnosis, total.n)),
        ("mitigation", _ci(total.mitigation, total.n)),
        ("tokens", f"{format_int(total.prompt_tokens + total.completion_tokens)}"),
        ("cost", format_cost(total.cost_usd) if total.has_cost else '<span class="muted">none recorded</span>'),
    ]
    out = ['<section id="overview"><h2>Overview</h2><dl class="cards">']
    out += [f"<div><dt>{e(k)}</dt><dd>{v}</dd></div>" for k, v in cards]
    out.append("</dl>")
    tallies = {name: tally(by_entrant[name]) for name in entrants}
    groups = [(name, [RateBar(getattr(tallies[name], rate), tallies[name].n) for rate in RATES]) for name in entrants]
    rows = []
    for name in entrants:
        t = tallies[name]
        incidents = [f"{count} {what}" for count, what in ((t.timeouts, "timed out"), (t.crashes, "crashed"),
                                                           (t.deploy_failures, "not deployed")) if count]
        cost = (f"{format_cost(t.cost_usd)} <span class=muted>({format_cost(t.cost_usd / t.n)} per attempt)</span>"
                if t.has_cost and t.n else "-")
        rows.append([e(name), str(t.n), _ci(t.success, t.n), _ci(t.diagnosis, t.n), _ci(t.mitigation, t.n),
                     e(format_duration(t.median_ttd)), e(format_duration(t.median_ttm)),
                     f"{e(format_int(t.prompt_tokens))} / {e(format_int(t.completion_tokens))}", cost,
                     e(", ".join(incidents) or "-")])
    per_agent = table(["agent (model)", "n", "success", "diagnosis", "mitigation", "median TTD", "median TTM",
                       "tokens (prompt / completion)", "cost", "incidents"], rows, numeric=range(1, 9),
                      caption="Per agent and model")
    out.append(figure(rate_chart("chart-rates", "Success, diagnosis and mitigation rate by agent", groups, list(RATES)),
                      "Success, diagnosis and mitigation rates by agent (bars), with 95% Wilson confidence intervals "
                      "(whiskers)"))
    out.append(per_agent)
    for key, name, long in (("ttd", "TTD", "Time to diagnose"), ("ttm", "TTM", "Time to mitigate")):
        series = [(n, list(getattr(tallies[n], key))) for n in entrants]
        data = table(["agent (model)", "n", "median", "min", "max"],
                     [[e(n), str(len(v)), e(format_duration(tallies[n].median_ttd if key == "ttd" else tallies[n].median_ttm)),
                       e(format_duration(min(v))), e(format_duration(max(v)))] for n, v in series if v],
                     numeric=(1, 2, 3, 4))
        chart = duration_chart(f"chart-{key}", f"{long} by agent", series, colors=[color(i) for i in range(len(series))],
                               empty=f"No {long.lower()} recorded (no passing {'diagnosis' if key == 'ttd' else 'mitigation'}).")
        out.append(figure(chart, f"{long} ({name}) of passing {'diagnoses' if key == 'ttd' else 'mitigations'}: "
                                 "box = quartiles, line = median, dots = attempts", data))
    out.append("</section>")
    return "".join(out)


def _standing_cell(t: Tally | None) -> str:
    if t is None:
        return '<span class="muted" title="no attempt in this suite">-</span>'
    cell = _ci(t.success, t.n)
    if t.deploy_failures:
        cell += f' <span class="muted">+{t.deploy_failures} not deployed</span>'
    return cell


def _leaderboard(sets: Sequence[ResultSet], attempts: Sequence[Attempt]) -> str:
    """Agents (with their models) × suites: the results directories given to ``sregym report``."""
    suites = [s.label for s in sets]
    ranked = standings(attempts, suites)
    rows = [[f"{row.rank}. {e(row.entrant)}", *(_standing_cell(t) for t in row.cells), _standing_cell(row.overall)]
            for row in ranked]
    board = table(["agent (model)", *[e(s) for s in suites], "overall"], rows,
                  caption="Success rate, successes/attempts and 95% Wilson interval per agent (model) and suite",
                  cls="leaderboard")
    groups = [(row.entrant, [RateBar(t.success, t.n) if t is not None and t.n else None for t in row.cells])
              for row in ranked]
    several = len(suites) > 1
    chart = rate_chart("chart-leaderboard", "Leaderboard: success rate by agent" + (" and suite" if several else ""),
                       groups, suites if several else ["success"])
    return ('<section id="leaderboard"><h2>Leaderboard</h2><p>One row per agent and model, ranked by overall success '
            "rate, then by number of attempts (more first; equal rate and attempts share a rank). One column per "
            "suite: each results directory given to <code>sregym report</code>, named after it; then all suites "
            "together. A cell reads: success rate, successes/attempts, [95% Wilson interval]. Attempts whose "
            f"app could not be deployed are not counted.</p>{board}"
            f"{figure(chart, 'Success rate by agent' + (' and suite' if several else '') + ', with 95% intervals')}"
            "</section>")


def _breakdown(section_id: str, title: str, what: str, attempts: Sequence[Attempt], entrants: list[str], key,
               assets: str, *, links: bool, extra_column=None) -> str:
    groups = group_by(attempts, key)
    names = sorted(groups)
    rows = []
    for name in names:
        by_entrant = group_by(groups[name], lambda a: a.entrant)
        cells = [e(name)] + ([e(extra_column(name, groups[name]))] if extra_column else [])
        for entrant in entrants:
            cell = by_entrant.get(entrant, [])
            if not cell:
                cells.append('<span class="muted">-</span>')
                continue
            t = tally(cell)
            text = _ci(t.success, t.n)
            if links:
                text += f'<div class="atts">{_attempt_links(cell, assets)}</div>'
            cells.append(text)
        rows.append(cells)
    headers = [what] + (["layer"] if extra_column else []) + [e(n) for n in entrants]
    data = table(headers, rows, caption=f"Success per {what} and agent" + ("; links open each attempt" if links else ""))
    per_agent = len(names) * len(entrants) <= MAX_BARS
    chart_groups = []
    for name in names:
        if not per_agent:  # one bar per row keeps a long run's chart readable; the table has the rest
            t = tally(groups[name])
            chart_groups.append((name, [RateBar(t.success, t.n) if t.n else None]))
            continue
        by_entrant = group_by(groups[name], lambda a: a.entrant)
        bars = []
        for entrant in entrants:
            t = tally(by_entrant.get(entrant, []))
            bars.append(RateBar(t.success, t.n) if t.n else None)
        chart_groups.append((name, bars))
    series = entrants if per_agent else ["all agents"]
    by = "and agent" if per_agent else "(all agents together)"
    chart = rate_chart(f"chart-{section_id}", f"Success rate by {what} {by}", chart_groups, series)
    return (f'<section id="{section_id}"><h2>{e(title)}</h2>{data}'
            f"{figure(chart, f'Success rate by {what} {by}, with 95% intervals')}</section>")


def _checklist(attempts: Sequence[Attempt], entrants: list[str]) -> str:
    counts: dict[str, dict[str, list[int]]] = {}
    questions: dict[str, str] = {}
    for a in attempts:
        for answer in (a.record.diagnosis or {}).get("answers", []) or []:
            if not isinstance(answer, Mapping):
                continue
            qid = str(answer.get("id", "?"))
            questions.setdefault(qid, str(answer.get("question") or ""))
            cell = counts.setdefault(qid, {}).setdefault(a.entrant, [0, 0])
            cell[0] += bool(answer.get("answer"))
            cell[1] += 1
    if not counts:
        return '<section id="checklist"><h2>Diagnosis checklist</h2><p class="empty">No judged diagnoses.</p></section>'
    rows = []
    for qid, question in questions.items():
        cells = [f'<span title="{e(question)}">{e(qid)}</span>', e(question)]
        for entrant in entrants:
            yes, n = counts[qid].get(entrant, [0, 0])
            cells.append(f"{yes * 100 // n}% <span class=muted>({yes}/{n})</span>" if n else "-")
        rows.append(cells)
    return ('<section id="checklist"><h2>Diagnosis checklist</h2><p>Share of "yes" answers per checklist question: '
            "where diagnoses fall short.</p>"
            + table(["question", "asks", *[e(n) for n in entrants]], rows, numeric=range(2, 2 + len(entrants)),
                    cls="checklist") + "</section>")


def why_failed(attempt: Attempt) -> str:
    """One line: what made an attempt fail."""
    from ..writer import _failed_leaves

    r = attempt.record
    reasons = []
    if r.deploy_failed:
        reasons.append("the app could not be deployed")
    if r.timeouts:
        reasons.append("time limit: " + ", ".join(r.timeouts))
    diagnosis = r.diagnosis or {}
    if not r.diagnosis_passed:
        no = [str(a.get("id", "?")) for a in diagnosis.get("answers", []) or [] if isinstance(a, Mapping) and not a.get("answer")]
        if no:
            reasons.append(f"judge {float(diagnosis.get('composite') or 0):.2f}: no on {', '.join(no)}")
        elif diagnosis.get("error"):
            reasons.append(str(diagnosis["error"]))
    reasons += _failed_leaves(r.mitigation)
    if r.error and r.error not in reasons:
        reasons.append(r.error)
    return "; ".join(dict.fromkeys(reasons))


def _attempts_table(attempts: Sequence[Attempt], assets: str, multi: bool) -> str:
    rows, classes = [], []
    ordered = sorted(attempts, key=lambda a: (a.record.problem_id, a.entrant, a.suite, a.record.attempt))
    for a in ordered:
        r = a.record
        link = (f'<a href="{e(attempt_href(a, assets))}">{e(r.problem_id)}</a>')
        rows.append([link, e(a.entrant), *([e(a.suite)] if multi else []), str(r.attempt),
                     badge(r.success, yes="success", no="failed") if not r.deploy_failed else badge(None, none="not deployed"),
                     badge(r.diagnosis_passed), badge(r.mitigation_passed),
                     e(format_duration(r.time_to_diagnose_s)), e(format_duration(r.time_to_mitigate_s)),
                     e(format_int(r.steps)), e(r.agent_status), f'<span class="why">{e(why_failed(a))}</span>'])
        classes.append("ok" if r.success else "fail")
    headers = ["problem", "agent (model)", *(["suite"] if multi else []), "#", "outcome", "diagnosis", "mitigation",
               "TTD", "TTM", "steps", "agent", "why"]
    offset = 1 if multi else 0
    return ('<section id="attempts"><h2>Attempts</h2><p>Every attempt; the problem name opens its page (judge answers, '
            "oracle evidence, trajectory).</p>"
            + table(headers, rows, numeric=(3 + offset, 7 + offset, 8 + offset, 9 + offset), row_classes=classes,
                    cls="attempts") + "</section>")


def render_index(sets: Sequence[ResultSet], attempts: Sequence[Attempt], *, title: str, assets: str,
                 layers: Mapping[str, str]) -> str:
    by_entrant = group_by(attempts, lambda a: a.entrant)
    entrants = _entrants_sorted(by_entrant)
    sources = "".join(f"<li><code>{e(s.directory if s.directory else s.label)}</code>: {len(s.records)} attempt(s)</li>"
                      for s in sets)
    nav = "".join(f'<li><a href="#{i}">{t}</a></li>' for i, t in (
        ("overview", "Overview"), ("leaderboard", "Leaderboard"), ("problems", "Problems"), ("layers", "Layers"),
        ("checklist", "Checklist"), ("attempts", "Attempts")))
    parts = [
        f'<header><h1>{e(title)}</h1><p class="muted">{len(attempts)} attempts; generated {e(utc_now())}.</p>'
        f'<ul class="sources">{sources}</ul><nav aria-label="sections"><ul>{nav}</ul></nav></header><main>',
    ]
    if not attempts:
        parts.append('<p class="empty">No attempts recorded.</p></main>')
        return page(title, "".join(parts), css_href=f"{assets}/report.css")
    parts.append(_overview(attempts, entrants, by_entrant))
    parts.append(_leaderboard(sets, attempts))
    parts.append(_breakdown("problems", "Problems", "problem", attempts, entrants, lambda a: a.record.problem_id, assets,
                            links=True, extra_column=lambda _name, group: layer_of(group[0].record, layers)))
    parts.append(_breakdown("layers", "Layers", "layer", attempts, entrants, lambda a: layer_of(a.record, layers), assets,
                            links=False))
    parts.append(_checklist(attempts, entrants))
    parts.append(_attempts_table(attempts, assets, multi=len(sets) > 1))
    parts.append("</main>")
    return page(title, "".join(parts), css_href=f"{assets}/report.css")


__all__ = ["render_index", "why_failed", "Tally"]
