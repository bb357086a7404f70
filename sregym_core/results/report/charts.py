"""SVG charts laid out in Python: horizontal bars with confidence intervals, box plots on a time
axis, and an attempt's timeline.

Why hand-written SVG rather than a charting library: the report runs no script at all (its pages
forbid scripts, so nothing an agent wrote can run), charts must read without JavaScript, and these
three shapes are small. Labels are measured (:mod:`.measure`) and placed so that none is cut:
category labels sit in a column sized to the longest one (very long ones end in an ellipsis and
keep the full text as a tooltip), axes carry units and as many ticks as fit. Every chart has a
``<title>``/``<desc>`` for screen readers and the pages put a data table next to it.

.. versionadded:: 0.2
"""

from __future__ import annotations

import html
import statistics
from collections.abc import Sequence

import attrs

from .measure import (
    CHART_FONT,
    fit_text,
    format_duration,
    linear_ticks,
    text_width,
    time_ticks,
    wilson_interval,
)

PALETTE = ("#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377", "#bbbbbb", "#222255")
STAGE_COLORS = {"diagnosis": "#66ccee", "mitigation": "#ccbb44", "grading": "#bbbbbb"}
LABEL_SIZE = 12
SMALL_SIZE = 11
MAX_LABEL_WIDTH = 300
LINE_HEIGHT = 1.25  # of the font size: room a text row needs so neighbours do not touch


def color(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _n(value: float) -> str:
    """Coordinates with two decimals at most (smaller files, stable output)."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


class _Svg:
    def __init__(self, chart_id: str, title: str, description: str) -> None:
        self.chart_id, self.title, self.description = chart_id, title, description
        self.parts: list[str] = []

    def add(self, part: str) -> None:
        self.parts.append(part)

    def text(self, x: float, y: float, text: str, *, size: float = LABEL_SIZE, anchor: str = "start",
             max_width: float | None = None, cls: str = "", weight: str = "") -> None:
        """A text whose baseline is placed so the glyphs are centred on ``y``; cut to ``max_width``
        with an ellipsis (the full text stays available as a tooltip)."""
        shown = fit_text(text, size, max_width) if max_width else text
        tooltip = f"<title>{_e(text)}</title>" if shown != text else ""
        attrs_ = f' class="{cls}"' if cls else ""
        attrs_ += f' font-weight="{weight}"' if weight else ""
        self.add(f'<text x="{_n(x)}" y="{_n(y + size * 0.36)}" font-size="{size}" text-anchor="{anchor}"{attrs_}>'
                 f"{tooltip}{_e(shown)}</text>")

    def render(self, width: float, height: float) -> str:
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="{_e(self.chart_id)}" width="{_n(width)}" '
                f'height="{_n(height)}" viewBox="0 0 {_n(width)} {_n(height)}" role="img" '
                f'aria-labelledby="{_e(self.chart_id)}-title {_e(self.chart_id)}-desc" font-family="{_e(CHART_FONT)}" '
                f'fill="#222"><title id="{_e(self.chart_id)}-title">{_e(self.title)}</title>'
                f'<desc id="{_e(self.chart_id)}-desc">{_e(self.description)}</desc>')
        return head + "".join(self.parts) + "</svg>"


def _legend(svg: _Svg, names: Sequence[str], colors: Sequence[str], x0: float, y0: float, max_width: float) -> float:
    """Swatches with names in rows that wrap at ``max_width``; returns the height used."""
    row_h = LABEL_SIZE * LINE_HEIGHT + 4
    x, y = x0, y0
    for name, fill in zip(names, colors, strict=True):
        shown = fit_text(name, LABEL_SIZE, 220)
        item_w = 12 + 6 + text_width(shown, LABEL_SIZE) + 18
        if x > x0 and x + item_w > x0 + max_width:
            x, y = x0, y + row_h
        svg.add(f'<rect x="{_n(x)}" y="{_n(y + row_h / 2 - 6)}" width="12" height="12" fill="{fill}"/>')
        svg.text(x + 18, y + row_h / 2, name, max_width=220)
        x += item_w
    return y + row_h - y0


def _axis_ticks(ticks_for, high: float, plot_w: float, size: float = SMALL_SIZE):
    """The most ticks (up to 8) whose labels fit between their neighbours."""
    for max_ticks in (8, 6, 5, 4, 3, 2, 1):
        top, ticks = ticks_for(high, max_ticks)
        spacing = plot_w / max(len(ticks) - 1, 1)
        if max(text_width(label, size) for _, label in ticks) + 10 <= spacing or max_ticks == 1:
            return top, ticks
    raise AssertionError("unreachable")


# ---------------------------------------------------------------- rates with confidence intervals


@attrs.frozen
class RateBar:
    """One bar: ``successes`` of ``n``; the tooltip names the group and series."""

    successes: int
    n: int

    @property
    def rate(self) -> float:
        return self.successes / self.n if self.n else 0.0


def rate_chart(chart_id: str, title: str, groups: Sequence[tuple[str, Sequence[RateBar | None]]],
               series: Sequence[str], *, plot_width: float = 380) -> str:
    """Horizontal bars, one group per category and one bar per series, with 95% Wilson intervals.

    :param groups: (category label, one bar per series or ``None`` when the series has no attempt).
    """
    if not groups:
        return '<p class="empty">No attempts recorded.</p>'
    description = "; ".join(
        f"{label}: " + ", ".join(f"{s} {bar.rate * 100:.0f}% of {bar.n}" for s, bar in zip(series, bars, strict=True) if bar)
        for label, bars in groups
    )
    svg = _Svg(chart_id, title, description)
    bar_h, pitch, group_gap, pad = 13.0, 17.0, 10.0, 8.0
    label_w = min(max(text_width(label, LABEL_SIZE) for label, _ in groups), MAX_LABEL_WIDTH)
    values = [_bar_value(bar) for _, bars in groups for bar in bars if bar]
    value_w = max((text_width(v, SMALL_SIZE) for v in values), default=0) + 8
    plot_x = pad + label_w + 10
    width = plot_x + plot_width + 8 + value_w + pad
    y = pad
    if len(series) > 1:
        y += _legend(svg, series, [color(i) for i in range(len(series))], plot_x, y, plot_width + value_w) + 6
    plot_top = y
    for label, bars in groups:
        group_h = pitch * len(bars) - (pitch - bar_h)
        svg.text(plot_x - 10, y + group_h / 2, label, anchor="end", max_width=label_w)
        for index, bar in enumerate(bars):
            if bar is None:
                continue
            by = y + pitch * index
            low, high = wilson_interval(bar.successes, bar.n)
            tooltip = (f"{label}{' / ' + series[index] if len(series) > 1 else ''}: {bar.rate * 100:.0f}% "
                       f"({bar.successes}/{bar.n}), 95% CI {low * 100:.0f}-{high * 100:.0f}%")
            svg.add(f'<rect class="bar" x="{_n(plot_x)}" y="{_n(by)}" width="{_n(max(plot_width * bar.rate, 1))}" '
                    f'height="{_n(bar_h)}" fill="{color(index)}"><title>{_e(tooltip)}</title></rect>')
            cy, x1, x2 = by + bar_h / 2, plot_x + plot_width * low, plot_x + plot_width * high
            svg.add(f'<path class="ci" d="M{_n(x1)} {_n(cy)}H{_n(x2)}M{_n(x1)} {_n(cy - 4)}V{_n(cy + 4)}'
                    f'M{_n(x2)} {_n(cy - 4)}V{_n(cy + 4)}" stroke="#333" stroke-width="1.2" fill="none"/>')
            svg.text(plot_x + plot_width + 8, cy, _bar_value(bar), size=SMALL_SIZE)
        y += group_h + group_gap
    plot_bottom = y - group_gap + 4
    _, ticks = linear_ticks(1.0, 4, fmt=lambda v: f"{v * 100:.0f}%")
    for value, tick in ticks:
        x = plot_x + plot_width * value
        svg.parts.insert(0, f'<line x1="{_n(x)}" y1="{_n(plot_top - 2)}" x2="{_n(x)}" y2="{_n(plot_bottom)}" stroke="#e3e3e3"/>')
        svg.text(x, plot_bottom + 10, tick, size=SMALL_SIZE, anchor="middle")
    return svg.render(width, plot_bottom + 10 + SMALL_SIZE + pad)


def _bar_value(bar: RateBar) -> str:
    return f"{bar.rate * 100:.0f}% ({bar.successes}/{bar.n})"


# ---------------------------------------------------------------- time distributions


def duration_chart(chart_id: str, title: str, series: Sequence[tuple[str, Sequence[float]]], *,
                   plot_width: float = 460, empty: str = "nothing recorded", colors: Sequence[str] | None = None) -> str:
    """Box plots on a time axis, one row per series, every value also drawn as a dot.

    :param colors: one per series (so an agent keeps its colour across charts); the palette by default.
    """
    fills = [c for (_, values), c in zip(series, colors or [color(i) for i in range(len(series))], strict=True) if values]
    series = [(label, sorted(values)) for label, values in series if values]
    if not series:
        return f'<p class="empty">{_e(empty)}</p>'
    description = "; ".join(f"{label}: median {format_duration(statistics.median(v))}, n={len(v)}" for label, v in series)
    svg = _Svg(chart_id, title, description)
    row_h, pad = 30.0, 8.0
    label_w = min(max(text_width(label, LABEL_SIZE) for label, _ in series), MAX_LABEL_WIDTH)
    medians = [f"median {format_duration(statistics.median(v))} (n={len(v)})" for _, v in series]
    value_w = max(text_width(m, SMALL_SIZE) for m in medians) + 8
    high = max(v[-1] for _, v in series)
    top, ticks = _axis_ticks(time_ticks, high, plot_width)
    tick_overhang = text_width(ticks[-1][1], SMALL_SIZE) / 2
    plot_x = pad + label_w + 10
    width = plot_x + plot_width + max(value_w + 12, tick_overhang) + pad

    def sx(value: float) -> float:
        return plot_x + plot_width * value / top

    plot_bottom = pad + row_h * len(series)
    for value, label in ticks:
        svg.add(f'<line x1="{_n(sx(value))}" y1="{_n(pad)}" x2="{_n(sx(value))}" y2="{_n(plot_bottom)}" stroke="#e3e3e3"/>')
        svg.text(sx(value), plot_bottom + 10, label, size=SMALL_SIZE, anchor="middle")
    for index, ((label, values), median_text) in enumerate(zip(series, medians, strict=True)):
        cy = pad + row_h * index + row_h / 2
        fill = fills[index]
        q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else [values[0]] * 3
        svg.text(plot_x - 10, cy, label, anchor="end", max_width=label_w)
        svg.add(f'<line x1="{_n(sx(values[0]))}" y1="{_n(cy)}" x2="{_n(sx(values[-1]))}" y2="{_n(cy)}" stroke="{fill}"/>')
        tooltip = (f"{label}: median {format_duration(q2)}, quartiles {format_duration(q1)}-{format_duration(q3)}, "
                   f"range {format_duration(values[0])}-{format_duration(values[-1])}, n={len(values)}")
        svg.add(f'<rect class="box" x="{_n(sx(q1))}" y="{_n(cy - 9)}" width="{_n(max(sx(q3) - sx(q1), 1))}" height="18" '
                f'fill="{fill}" fill-opacity="0.25" stroke="{fill}"><title>{_e(tooltip)}</title></rect>')
        svg.add(f'<line x1="{_n(sx(q2))}" y1="{_n(cy - 9)}" x2="{_n(sx(q2))}" y2="{_n(cy + 9)}" stroke="{fill}" stroke-width="2"/>')
        for value in values:
            svg.add(f'<circle class="dot" cx="{_n(sx(value))}" cy="{_n(cy)}" r="3" fill="{fill}">'
                    f"<title>{_e(format_duration(value))}</title></circle>")
        svg.text(plot_x + plot_width + 12, cy, median_text, size=SMALL_SIZE)
    return svg.render(width, plot_bottom + 10 + SMALL_SIZE + pad)


# ---------------------------------------------------------------- an attempt's timeline


@attrs.frozen
class Segment:
    """A stretch of the attempt in one stage (seconds from its start)."""

    name: str
    start: float
    end: float
    label: str


@attrs.frozen
class Mark:
    """A point in time: an agent step (linked to its entry below the chart) or an event."""

    at: float
    label: str
    href: str | None = None
    kind: str = "step"


def timeline_chart(chart_id: str, title: str, segments: Sequence[Segment], marks: Sequence[Mark], total: float, *,
                   plot_width: float = 780) -> str:
    """Stages as coloured bands over time, agent steps as dots under them (links to the steps)."""
    total = max(total, max((m.at for m in marks), default=0), max((s.end for s in segments), default=0), 0.001)
    description = "; ".join(f"{s.label} from {format_duration(s.start)} to {format_duration(s.end)}" for s in segments)
    description += f"; {sum(m.kind == 'step' for m in marks)} agent steps"
    svg = _Svg(chart_id, title, description)
    pad, band_h, lane_h = 8.0, 24.0, 22.0
    lane_label_w = max(text_width("stages", LABEL_SIZE), text_width("steps", LABEL_SIZE))
    plot_x = pad + lane_label_w + 10
    top, ticks = _axis_ticks(time_ticks, total, plot_width)
    width = plot_x + plot_width + text_width(ticks[-1][1], SMALL_SIZE) / 2 + pad

    def sx(value: float) -> float:
        return plot_x + plot_width * max(value, 0) / top

    band_y, lane_y = pad, pad + band_h + 6
    plot_bottom = lane_y + lane_h
    for value, label in ticks:
        svg.add(f'<line x1="{_n(sx(value))}" y1="{_n(band_y)}" x2="{_n(sx(value))}" y2="{_n(plot_bottom)}" stroke="#e3e3e3"/>')
        svg.text(sx(value), plot_bottom + 10, label, size=SMALL_SIZE, anchor="middle")
    svg.text(plot_x - 10, band_y + band_h / 2, "stages", anchor="end")
    svg.text(plot_x - 10, lane_y + lane_h / 2, "steps", anchor="end")
    for segment in segments:
        x1, x2 = sx(segment.start), sx(segment.end)
        fill = STAGE_COLORS.get(segment.name, "#dddddd")
        tooltip = f"{segment.label}: {format_duration(segment.start)} to {format_duration(segment.end)}"
        svg.add(f'<rect class="stage" x="{_n(x1)}" y="{_n(band_y)}" width="{_n(max(x2 - x1, 1))}" height="{_n(band_h)}" '
                f'fill="{fill}"><title>{_e(tooltip)}</title></rect>')
        if text_width(segment.label, SMALL_SIZE) + 8 <= x2 - x1:  # a label only where it fits; the legend names all
            svg.text((x1 + x2) / 2, band_y + band_h / 2, segment.label, size=SMALL_SIZE, anchor="middle")
    for mark in marks:
        cx, cy = sx(mark.at), lane_y + lane_h / 2
        shape = (f'<circle cx="{_n(cx)}" cy="{_n(cy)}" r="4.5" fill="#4477aa" stroke="#fff"><title>{_e(mark.label)}</title></circle>'
                 if mark.kind == "step" else
                 f'<path d="M{_n(cx)} {_n(cy - 6)}L{_n(cx + 5)} {_n(cy + 5)}H{_n(cx - 5)}Z" fill="#ee6677">'
                 f"<title>{_e(mark.label)}</title></path>")
        if mark.href:
            shape = f'<a href="{_e(mark.href)}" aria-label="{_e(mark.label)}">{shape}</a>'
        svg.add(shape)
    y = plot_bottom + 10 + SMALL_SIZE + 8
    names = [s.label for s in segments]
    colors = [STAGE_COLORS.get(s.name, "#dddddd") for s in segments]
    if any(m.kind != "step" for m in marks):
        names.append("event")
        colors.append("#ee6677")
    legend_h = _legend(svg, names, colors, plot_x, y, plot_width) if names else 0
    return svg.render(width, y + legend_h + pad)
