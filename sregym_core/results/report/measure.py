"""Text widths, number and duration formatting, axis ticks and confidence intervals for the report.

Charts are laid out here, not in the browser, so labels must be measured here. Widths come from
the advance widths of DejaVu Sans (the font the charts ask for first; Verdana, its closest
relative, is as wide), measured in Chromium with ``canvas.measureText`` at 100 px and stored in
hundredths of an em, plus a safety margin. Characters outside ASCII count as one em (wider than
any Latin glyph), so an estimate errs on the wide side and a label laid out with it is not cut.

.. versionadded:: 0.2
"""

from __future__ import annotations

import math

#: The font stack of every chart (CSS and SVG ``font-family``); metrics below are for its first entry.
CHART_FONT = "'DejaVu Sans', Verdana, 'Bitstream Vera Sans', sans-serif"

# advance widths of characters 32..126 in DejaVu Sans, in 1/100 em
_ASCII_WIDTHS = (
    32, 40, 46, 84, 64, 95, 78, 27, 39, 39, 50, 84, 32, 36, 32, 34, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 34, 34,
    84, 84, 84, 53, 100, 68, 69, 70, 77, 63, 58, 77, 75, 29, 29, 66, 56, 86, 75, 79, 60, 79, 69, 63, 61, 73, 68, 99,
    69, 61, 69, 39, 34, 39, 84, 50, 50, 61, 63, 55, 63, 62, 35, 63, 63, 28, 28, 58, 28, 97, 63, 61, 63, 63, 41, 52,
    39, 63, 59, 82, 59, 59, 52, 64, 34, 64, 84,
)
_MARGIN = 1.06
ELLIPSIS = "\u2026"


def text_width(text: str, size: float) -> float:
    """Estimated rendered width in px of ``text`` at font size ``size`` (slightly over, never under)."""
    units = 0
    for char in text:
        code = ord(char)
        units += _ASCII_WIDTHS[code - 32] if 32 <= code < 127 else 100
    return units * size / 100 * _MARGIN


def fit_text(text: str, size: float, max_width: float) -> str:
    """``text`` if it fits in ``max_width``, else its longest prefix that fits followed by an ellipsis."""
    if text_width(text, size) <= max_width:
        return text
    budget = max_width - text_width(ELLIPSIS, size)
    low, high = 0, len(text)
    while low < high:  # longest prefix within budget
        mid = (low + high + 1) // 2
        if text_width(text[:mid], size) <= budget:
            low = mid
        else:
            high = mid - 1
    return text[:low].rstrip() + ELLIPSIS


# ---------------------------------------------------------------- numbers and durations


def format_duration(seconds: float | None) -> str:
    """A duration in the unit that reads best: ``340 ms``, ``4.2 s``, ``2.5 min``, ``1.2 h``."""
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "-"
    value = abs(seconds)
    if value < 1:
        return f"{seconds * 1000:.0f} ms"
    if value < 60:
        return f"{seconds:.1f} s" if value < 10 else f"{seconds:.0f} s"
    if value < 3600:
        minutes = seconds / 60
        return f"{minutes:.1f} min" if abs(minutes) < 10 else f"{minutes:.0f} min"
    return f"{seconds / 3600:.1f} h"


def format_rate(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def format_int(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def format_cost(value: float | None) -> str:
    if value is None:
        return "-"
    return f"${value:.4f}" if value < 1 else f"${value:,.2f}"


#: (unit name, seconds per unit, upper bound of the axis range the unit is used for)
_TIME_UNITS = (("ms", 0.001, 1.0), ("s", 1.0, 180.0), ("min", 60.0, 3 * 3600.0), ("h", 3600.0, math.inf))


def nice_step(span: float, max_ticks: int) -> float:
    """The smallest step of the form {1, 2, 2.5, 5} x 10^k giving at most ``max_ticks`` intervals over ``span``."""
    if span <= 0:
        return 1.0
    raw = span / max(max_ticks, 1)
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        if factor * power >= raw * (1 - 1e-9):
            return factor * power
    return 10 * power


def _decimals(step: float) -> int:
    for decimals in range(0, 6):
        if abs(round(step, decimals) - step) < step * 1e-6:
            return decimals
    return 6


def linear_ticks(high: float, max_ticks: int, fmt=None) -> tuple[float, list[tuple[float, str]]]:
    """Ticks from 0 to at least ``high``: returns the axis maximum and (value, label) pairs."""
    high = high if high > 0 else 1.0
    step = nice_step(high, max_ticks)
    count = max(1, math.ceil(high / step - 1e-9))
    decimals = _decimals(step)
    ticks = [(i * step, fmt(i * step) if fmt else f"{i * step:.{decimals}f}") for i in range(count + 1)]
    return count * step, ticks


def time_ticks(high_s: float, max_ticks: int) -> tuple[float, list[tuple[float, str]]]:
    """Ticks (in seconds) for a time axis from 0 to ``high_s``, labelled in one readable unit.

    Every label carries the unit and enough decimals to tell neighbours apart (no "0s 0s 1s").
    """
    high_s = high_s if high_s > 0 else 1.0
    name, scale, _ = next(u for u in _TIME_UNITS if high_s <= u[2])
    step = nice_step(high_s / scale, max_ticks)
    count = max(1, math.ceil(high_s / scale / step - 1e-9))
    decimals = _decimals(step)
    ticks = [(i * step * scale, f"{i * step:.{decimals}f} {name}") for i in range(count + 1)]
    return count * step * scale, ticks


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion (95% by default); (0, 1) when n is 0."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)
