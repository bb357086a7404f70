"""Numbers with units read as values: "1.5 s" is the truth's ``delay_ms: 1500``, "16 KiB" its
``size: 16Ki``, "a month behind" its ``offset_days: -30``.

A diagnosis states a quantity in whatever unit the writer thinks in; the truth records it in the
fault's. Both are brought to one base unit per dimension (seconds, bytes) and compared with a small
tolerance, the sign ignored (an offset of -30 days is "30 days behind").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

_TIME = {
    "ms": 0.001, "msec": 0.001, "millisecond": 0.001, "milliseconds": 0.001,
    "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
    "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0,
    "h": 3600.0, "hr": 3600.0, "hrs": 3600.0, "hour": 3600.0, "hours": 3600.0,
    "d": 86400.0, "day": 86400.0, "days": 86400.0, "week": 604800.0, "weeks": 604800.0,
    "month": 2592000.0, "months": 2592000.0,
}
_SIZE = {
    "b": 1, "byte": 1, "bytes": 1,
    "k": 1024, "ki": 1024, "kib": 1024, "kb": 1000,
    "m": 1024**2, "mi": 1024**2, "mib": 1024**2, "mb": 1000**2,
    "g": 1024**3, "gi": 1024**3, "gib": 1024**3, "gb": 1000**3,
    # the unit spelled out, as plain English writes it ("capped at 16 kilobytes")
    "kilobyte": 1000, "kilobytes": 1000, "kibibyte": 1024, "kibibytes": 1024,
    "megabyte": 1000**2, "megabytes": 1000**2, "mebibyte": 1024**2, "mebibytes": 1024**2,
    "gigabyte": 1000**3, "gigabytes": 1000**3, "gibibyte": 1024**3, "gibibytes": 1024**3,
}
_WORD_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "ten": 10,
                 "twelve": 12, "fifteen": 15, "twenty": 20, "thirty": 30, "sixty": 60, "ninety": 90, "hundred": 100}
# a key's unit suffix: ``delay_ms``, ``offset_minutes``, ``size_mb``
_KEY_UNIT = re.compile(r"(?:^|_)(ms|msec|s|sec|seconds|min|minutes|hours|h|days|d|weeks|months|bytes|kb|kib|mb|mib|gb|gib)$")
_UNITS = "|".join(sorted({*_TIME, *_SIZE}, key=len, reverse=True))
_IN_TEXT = re.compile(
    rf"(?<![\w.])(-?\d+(?:\.\d+)?|{'|'.join(_WORD_NUMBERS)})\s*({_UNITS})(?![a-z0-9])", re.I)
_VALUE = re.compile(rf"^\s*(-?\d+(?:\.\d+)?)\s*({_UNITS})?\s*$", re.I)


def _base(number: float, unit: str) -> tuple[str, float] | None:
    unit = unit.lower()
    if unit in _TIME:
        return "time", abs(number) * _TIME[unit]
    if unit in _SIZE:
        return "size", abs(number) * _SIZE[unit]
    return None


def truth_quantities(mutated: Mapping[str, Any]) -> list[tuple[str, str, float]]:
    """(how the truth wrote it, dimension, magnitude in base units) for every mutated value with a unit:
    a number under a key with a unit suffix, or a string such as ``16Ki``, ``10sec``, ``1500ms``."""
    found: list[tuple[str, str, float]] = []

    def visit(key: str, value: Any) -> None:
        if isinstance(value, Mapping):
            for sub, item in value.items():
                if str(sub).lower() not in ("before", "baseline", "original", "previous", "old"):
                    visit(str(sub), item)
            return
        if isinstance(value, bool) or value is None:
            return
        if isinstance(value, int | float):
            unit = _KEY_UNIT.search(key.lower())
            base = _base(float(value), unit.group(1)) if unit else None
        else:
            match = _VALUE.match(str(value))
            base = _base(float(match.group(1)), match.group(2)) if match and match.group(2) else None
        if base and base[1] > 0:
            found.append((f"{value}", *base))

    for key, value in mutated.items():
        if str(key).lower() not in ("before", "baseline", "original", "previous", "old", "decoys"):
            visit(str(key), value)
    return found


# "a second and a half", "two minutes and a half", "half a second": the half said in words
_AND_A_HALF = re.compile(rf"(?<![\w.])(\d+|{'|'.join(_WORD_NUMBERS)})\s+({_UNITS})\s+and\s+a\s+half(?![a-z0-9])", re.I)
_HALF_A = re.compile(rf"(?<![\w.])half\s+an?\s+({_UNITS})(?![a-z0-9])", re.I)


def text_quantities(text: str) -> Iterable[tuple[str, str, float, int, int]]:
    """(as written, dimension, magnitude in base units, start, end) of every number with a unit."""
    for match in _AND_A_HALF.finditer(text):
        raw = match.group(1).lower()
        base = _base((float(_WORD_NUMBERS[raw]) if raw in _WORD_NUMBERS else float(raw)) + 0.5, match.group(2))
        if base and len(match.group(2)) > 2:
            yield match.group(0), *base, match.start(), match.end()
    for match in _HALF_A.finditer(text):
        base = _base(0.5, match.group(1))
        if base and len(match.group(1)) > 2:
            yield match.group(0), *base, match.start(), match.end()
    for match in _IN_TEXT.finditer(text):
        raw = match.group(1).lower()
        number = float(_WORD_NUMBERS[raw]) if raw in _WORD_NUMBERS else float(raw)
        unit = match.group(2)
        # a bare "m", "k", "g", "b" or "s" right after a word-number ("a m") is no unit
        if raw in _WORD_NUMBERS and len(unit) <= 2:
            continue
        base = _base(number, unit)
        if base:
            yield match.group(0), *base, match.start(), match.end()


def same_quantity(a: float, b: float) -> bool:
    """Equal within 10 % (a writer rounds: "about 1.5 s" for 1500 ms, "a month" for 30 days)."""
    return abs(a - b) <= 0.1 * max(a, b)


def find_quantity(text: str, mutated: Mapping[str, Any]) -> tuple[str, str, int, int] | None:
    """(the truth's value, as the text wrote it, start, end) of the first quantity in ``text`` equal
    to one of the truth's."""
    wanted = truth_quantities(mutated)
    if not wanted:
        return None
    for written, dimension, size, start, end in text_quantities(text):
        for value, want_dimension, want in wanted:
            if dimension == want_dimension and same_quantity(size, want):
                return value, written, start, end
    return None
