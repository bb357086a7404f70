"""One page per attempt: the outcome, a timeline of stage changes and steps, the judge's answers
with their evidence, the mitigation oracle tree with its evidence, noise events, and the agent's
trajectory step by step.

.. versionadded:: 0.2
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from typing import Any

from .charts import Mark, Segment, timeline_chart
from .index_page import why_failed
from .markup import as_text, badge, collapsible, e, page, pre, table
from .measure import format_cost, format_duration, format_int
from .model import Attempt, event_offset, load_trajectory, noise_events, parse_time


def _facts(attempt: Attempt) -> str:
    r = attempt.record
    items = [
        ("outcome", badge(r.success, yes="success", no="failed") if not r.deploy_failed else badge(None, none="not deployed")),
        ("diagnosis", badge(r.diagnosis_passed)), ("mitigation", badge(r.mitigation_passed)),
        ("agent", e(r.agent)), ("model", e(r.model or "-")), ("app", e(r.app or "-")), ("suite", e(attempt.suite)),
        ("run", f"<code>{e(r.run_id)}</code>"), ("started", e(_when(r.started_at))), ("finished", e(_when(r.finished_at))),
        ("time to diagnose", e(format_duration(r.time_to_diagnose_s))),
        ("time to mitigate", e(format_duration(r.time_to_mitigate_s))),
        ("agent status", e(r.agent_status)), ("timeouts", e(", ".join(r.timeouts) or "none")),
        ("steps", e(format_int(r.steps))),
        ("tokens", e(f"{format_int(r.prompt_tokens)} prompt / {format_int(r.completion_tokens)} completion")),
        ("cost", e(format_cost(r.cost_usd))),
    ]
    judge = getattr(r, "judge", None) or (r.diagnosis or {}).get("judge") or r.extra.get("judge")
    if judge:
        items.insert(6, ("judge", e(judge)))
    out = '<dl class="facts">' + "".join(f"<div><dt>{e(k)}</dt><dd>{v}</dd></div>" for k, v in items) + "</dl>"
    why = why_failed(attempt)
    if why and not r.success:
        out += f'<p class="why-box"><strong>Why it failed:</strong> {e(why)}</p>'
    return out


def _when(stamp: str | None) -> str:
    """An ISO timestamp as people read it: ``2026-11-25 11:28:27 UTC``."""
    epoch = parse_time(stamp)
    if epoch is None:
        return stamp or "-"
    return _dt.datetime.fromtimestamp(epoch, _dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


# ---------------------------------------------------------------- timeline


def _step_offset(step: Mapping[str, Any], start: float | None) -> float | None:
    """When a step happened: agents log their own clock in ``extra.timestamp``; the step's own
    ``timestamp`` may be the time the trajectory was written, so it comes second."""
    if start is None:
        return None
    raw_extra = step.get("extra")
    extra = raw_extra if isinstance(raw_extra, Mapping) else {}
    for value in (extra.get("timestamp"), step.get("timestamp")):
        epoch = parse_time(value)
        if epoch is not None:
            return epoch - start
    return None


def _timeline(attempt: Attempt, steps: Sequence[Mapping[str, Any]], events: Sequence[Mapping[str, Any]]) -> str:
    r = attempt.record
    start, end = parse_time(r.started_at), parse_time(r.finished_at)
    total = (end - start) if start is not None and end is not None else None
    ttd, ttm = r.time_to_diagnose_s, r.time_to_mitigate_s
    segments: list[Segment] = []
    stage_rows = []
    # the stage machine: setup and diagnosis until the diagnosis is submitted, then mitigation
    # until the mitigation is submitted, then grading and teardown until the record is written
    cursor = 0.0
    if ttd is not None:
        segments.append(Segment("diagnosis", 0.0, ttd, "setup + diagnosis"))
        cursor = ttd
        if ttm is not None:
            segments.append(Segment("mitigation", ttd, ttm, "mitigation"))
            cursor = ttm
        elif total is not None:
            segments.append(Segment("mitigation", ttd, total, "mitigation (not submitted)"))
            cursor = total
    elif total is not None:
        segments.append(Segment("diagnosis", 0.0, total, "setup + diagnosis (not submitted)"))
        cursor = total
    if total is not None and total > cursor:
        segments.append(Segment("grading", cursor, total, "grading + teardown"))
    for segment in segments:
        stage_rows.append([e(segment.label), e(format_duration(segment.start)), e(format_duration(segment.end))])
    marks = []
    for index, step in enumerate(steps, 1):
        at = _step_offset(step, start)
        if at is not None:
            action = (step.get("extra") or {}).get("action") if isinstance(step.get("extra"), Mapping) else None
            marks.append(Mark(at=at, label=f"step {index} at {format_duration(at)}: {action or step.get('source', '')}"
                                           f" {str(step.get('message') or '')[:80]}", href=f"#step-{index}"))
    for event in events:
        at = event_offset(event, start)
        if at is not None:
            marks.append(Mark(at=at, label=f"noise at {format_duration(at)}: {_event_name(event)}", kind="event"))
    if not segments and not marks:
        return '<p class="empty">No timing recorded.</p>'
    chart = timeline_chart("chart-timeline", "Timeline of the attempt: stages and agent steps", segments, marks,
                           total or 0.0)
    data = table(["stage", "from", "to"], stage_rows, caption="Stage changes (seconds from the attempt's start)",
                 numeric=(1, 2))
    return (f'<figure class="chart-box"><figcaption>Stages over time; each dot is an agent step (select it to jump to '
            f'the step)</figcaption><div class="chart-scroll">{chart}</div></figure>{data}')


def _event_name(event: Mapping[str, Any]) -> str:
    for key in ("name", "kind", "type", "noise", "event"):
        if event.get(key):
            return str(event[key])
    return "event"


# ---------------------------------------------------------------- diagnosis


def _diagnosis(attempt: Attempt) -> str:
    verdict = attempt.record.diagnosis
    if not verdict:
        return '<p class="empty">No diagnosis verdict recorded.</p>'
    out = []
    composite, threshold = verdict.get("composite"), verdict.get("threshold")
    summary = [f"verdict {badge(verdict.get('passed'))}"]
    if composite is not None:
        summary.append(f"composite score {e(f'{float(composite):.2f}')}"
                       + (f" (threshold {e(threshold)})" if threshold is not None else ""))
    dimensions = verdict.get("dimensions") or {}
    if isinstance(dimensions, Mapping) and dimensions:
        summary.append("; ".join(f"{e(k)} {e(_num(v))}" for k, v in dimensions.items()))
    out.append(f"<p>{' &middot; '.join(summary)}</p>")
    if verdict.get("error"):
        out.append(f'<p class="why-box">{e(verdict["error"])}</p>')
    submission = (verdict.get("inputs") or {}).get("submission") if isinstance(verdict.get("inputs"), Mapping) else None
    if submission:
        out.append("<h3>The agent's diagnosis</h3>" + pre(as_text(submission), cls="submission"))
    answers = [a for a in verdict.get("answers") or [] if isinstance(a, Mapping)]
    if answers:
        rows = [[e(a.get("id", "?")), e(a.get("dimension", "")), e(a.get("question", "")), badge(a.get("answer"), yes="yes", no="no"),
                 e(_num(a.get("confidence"))), f'<span class="evidence">{e(a.get("evidence", ""))}</span>'] for a in answers]
        out.append(table(["id", "dimension", "question", "answer", "confidence", "evidence"], rows,
                         caption=f"The judge's {len(answers)} checklist answers", numeric=(4,),
                         row_classes=["ok" if a.get("answer") else "fail" for a in answers], cls="answers"))
    out.append(_read_evidence((verdict.get("inputs") or {}).get("evidence") if isinstance(verdict.get("inputs"), Mapping) else None))
    return "".join(out)


def _read_evidence(evidence: Any) -> str:
    """Which sentence of the diagnosis asserted the component, the mechanism and each value (a
    judge that records ``inputs.evidence``, as judge-rules does)."""
    if not isinstance(evidence, Mapping):
        return ""
    rows = []
    for item in evidence.get("component") or []:
        if isinstance(item, Mapping):
            rows.append(["component", e(item.get("component", "")), e(item.get("sentence", ""))])
    for item in evidence.get("mechanism") or []:
        if isinstance(item, Mapping):
            rows.append(["mechanism", e(f"{item.get('fault', '')}: {item.get('phrase', '')}"), e(item.get("sentence", ""))])
    for item in evidence.get("values") or []:
        if isinstance(item, Mapping):
            shown = str(item.get("value", "")) + (f" (as {item['as']!r})" if item.get("as") else "")
            rows.append(["value", e(shown), e(item.get("sentence", ""))])
    if evidence.get("chain"):
        rows.append(["cause and effect", "", e(evidence["chain"])])
    if not rows:
        return '<p class="empty">The judge found no sentence asserting the component, mechanism or values.</p>'
    return table(["what", "read as", "the sentence that asserts it"], rows,
                 caption="What the judge read, sentence by sentence", cls="answers")


def _num(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "-" if value is None else str(value)
    if isinstance(value, int | float):
        return f"{value:.2f}"
    return str(value)


# ---------------------------------------------------------------- mitigation


def _evidence(evidence: Any) -> str:
    if not evidence:
        return ""
    if isinstance(evidence, Mapping):
        rows = []
        for key, value in evidence.items():
            text = as_text(value)
            cell = pre(text, cls="inline") if "\n" in text or len(text) > 120 else e(text)
            rows.append(f"<tr><th scope=row>{e(key)}</th><td>{cell}</td></tr>")
        return f'<table class="evidence"><tbody>{"".join(rows)}</tbody></table>'
    return pre(as_text(evidence), cls="inline")


def _oracle_tree(node: Any, depth: int = 0) -> str:
    if not isinstance(node, Mapping):
        return f"<li>{e(as_text(node))}</li>"
    children = [c for c in node.get("children") or [] if c is not None]
    error = f'<p class="why-box">{e(node["error"])}</p>' if node.get("error") else ""
    body = _evidence(node.get("evidence")) + error
    if children:
        body += '<ul class="tree">' + "".join(_oracle_tree(c, depth + 1) for c in children) + "</ul>"
    head = f'{badge(node.get("passed"))} <strong>{e(node.get("name", "?"))}</strong>'
    opened = " open" if depth < 2 or not node.get("passed", True) else ""
    return f"<li><details{opened}><summary>{head}</summary>{body}</details></li>"


def _mitigation(attempt: Attempt) -> str:
    verdict = attempt.record.mitigation
    if not verdict:
        return '<p class="empty">No mitigation verdict recorded.</p>'
    return f'<ul class="tree root">{_oracle_tree(verdict)}</ul>'


# ---------------------------------------------------------------- noise


def _noise(events: Sequence[Mapping[str, Any]], start: float | None) -> str:
    if not events:
        return '<p class="empty">No noise events recorded for this attempt.</p>'
    keys: list[str] = []
    for event in events:
        keys += [k for k in event if k not in keys]
    rows = []
    for event in events:
        at = event_offset(event, start)
        rows.append([e(format_duration(at)), *[e(as_text(event.get(k, ""))) for k in keys]])
    return table(["at", *[e(k) for k in keys]], rows, caption=f"{len(events)} noise event(s)", numeric=(0,))


# ---------------------------------------------------------------- trajectory


def _step(index: int, step: Mapping[str, Any], start: float | None) -> str:
    raw_extra = step.get("extra")
    extra = dict(raw_extra) if isinstance(raw_extra, Mapping) else {}
    at = _step_offset(step, start)
    action = extra.pop("action", None)
    extra.pop("timestamp", None)
    head = [f'<span class="step-no">#{e(step.get("step_id", index))}</span>',
            f'<span class="muted">{e("+" + format_duration(at) if at is not None else "")}</span>',
            f'<span class="source">{e(step.get("source", ""))}</span>']
    if action:
        head.append(f'<span class="action">{e(action)}</span>')
    if step.get("model_name"):
        head.append(f'<span class="muted">{e(step["model_name"])}</span>')
    parts = [f'<article class="step" id="step-{index}" aria-labelledby="step-{index}-h">'
             f'<h3 id="step-{index}-h" class="step-head">{" ".join(head)}</h3>']
    message = step.get("message")
    if message:
        parts.append(collapsible(as_text(message), "message", open_below_lines=30))
    if step.get("reasoning_content"):
        parts.append(collapsible(as_text(step["reasoning_content"]), "reasoning", open_below_lines=0))
    for call in step.get("tool_calls") or []:
        if not isinstance(call, Mapping):
            continue
        arguments = call.get("arguments")
        parts.append(f'<div class="call"><span class="muted">tool call</span> <code>{e(call.get("function_name", "?"))}</code>'
                     f' <span class="muted">{e(call.get("tool_call_id", ""))}</span>'
                     f'{pre(as_text(arguments), cls="args") if arguments not in (None, {}, "") else ""}</div>')
    observation = step.get("observation")
    results = observation.get("results") if isinstance(observation, Mapping) else None
    for result in results or []:
        if isinstance(result, Mapping):
            source = result.get("source_call_id")
            parts.append(collapsible(as_text(result.get("content", "")), "output" + (f" of {source}" if source else "")))
    if "observation" in extra:
        parts.append(collapsible(as_text(extra.pop("observation")), "output"))
    metrics = step.get("metrics")
    if isinstance(metrics, Mapping) and metrics:
        extra.update({f"metrics.{k}": v for k, v in metrics.items()})
    if extra:
        parts.append('<dl class="step-extra">' + "".join(
            f"<div><dt>{e(k)}</dt><dd>{e(as_text(v))}</dd></div>" for k, v in extra.items()) + "</dl>")
    parts.append("</article>")
    return "".join(parts)


def _trajectory(steps: Sequence[Mapping[str, Any]], document: Mapping[str, Any] | None, error: str | None,
                start: float | None) -> str:
    if error:
        return f'<p class="empty">{e(error)}</p>'
    if not steps:
        return '<p class="empty">The agent recorded no steps.</p>'
    head = ""
    if document:
        raw_agent = document.get("agent")
        agent = raw_agent if isinstance(raw_agent, Mapping) else {}
        bits = [f"{len(steps)} steps", f"format {as_text(document.get('schema_version', '?'))}"]
        if agent.get("model_name"):
            bits.append(f"model {as_text(agent['model_name'])}")
        if document.get("notes"):
            bits.append(f"notes: {as_text(document['notes'])}")
        head = f'<p class="muted">{e("; ".join(bits))}</p>'
    return head + "".join(_step(i, s if isinstance(s, Mapping) else {"message": s}, start) for i, s in enumerate(steps, 1))


def render_attempt(attempt: Attempt, *, index_href: str, css_href: str, report_title: str) -> str:
    r = attempt.record
    document, error = load_trajectory(attempt)
    steps = [s for s in (document or {}).get("steps") or [] if s is not None]
    events = noise_events(r)
    start = parse_time(r.started_at)
    title = f"{r.problem_id} \u00b7 {attempt.entrant} \u00b7 attempt {r.attempt}"
    nav = (f'<nav aria-label="breadcrumb"><a href="{e(index_href)}">{e(report_title)}</a> &rsaquo; '
           f'<a href="{e(index_href)}#attempts">attempts</a></nav>')
    toc = "".join(f'<li><a href="#{i}">{t}</a></li>' for i, t in (
        ("timeline", "Timeline"), ("diagnosis", "Diagnosis"), ("mitigation", "Mitigation"), ("noise", "Noise"),
        ("trajectory", "Trajectory")))
    body = (f"<header>{nav}<h1>{e(title)}</h1>{_facts(attempt)}<nav aria-label='sections'><ul>{toc}</ul></nav></header><main>"
            f'<section id="timeline"><h2>Timeline</h2>{_timeline(attempt, steps, events)}</section>'
            f'<section id="diagnosis"><h2>Diagnosis</h2>{_diagnosis(attempt)}</section>'
            f'<section id="mitigation"><h2>Mitigation oracles</h2>{_mitigation(attempt)}</section>'
            f'<section id="noise"><h2>Noise events</h2>{_noise(events, start)}</section>'
            f'<section id="trajectory"><h2>Trajectory</h2>{_trajectory(steps, document, error, start)}</section></main>')
    return page(f"{title} - {report_title}", body, css_href=css_href)
