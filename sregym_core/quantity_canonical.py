"""Quantities as the API server stores and prints them (``resource.Quantity``).

Parsing is :mod:`sregym_core.quantity`'s; on top of it the server keeps at most nano precision (rounding
up, never down), refuses values beyond 1e±60, and prints a canonical form: ``1.5`` as ``1500m``,
``2000000`` as ``2M``, ``1048576Ki`` as ``1Gi``.
"""

from __future__ import annotations

import functools
from decimal import ROUND_CEILING, Decimal, localcontext

from .quantity import (
    BINARY_SI,
    BINARY_SUFFIXES,
    DECIMAL_EXPONENT,
    DECIMAL_SI,
    DECIMAL_SUFFIXES,
    EXACT,
    QuantityError,
    parse_with_format,
)

_NANO = Decimal("1e-9")
_MAX_EXPONENT = 60
_DECIMAL_BY_EXPONENT = {exp: suffix for suffix, exp in DECIMAL_SUFFIXES.items()}
_BINARY_BY_POWER = {power: suffix for suffix, power in BINARY_SUFFIXES.items()}


def stored_amount(value: object) -> tuple[Decimal, str]:
    """The value the API server keeps for a quantity, and its format. Raises :class:`QuantityError`."""
    if isinstance(value, bool) or not isinstance(value, str | int | float | Decimal):
        return parse_with_format(value)  # raises, naming the value
    return _stored(str(value))


@functools.lru_cache(maxsize=4096)
def _stored(text: str) -> tuple[Decimal, str]:
    # Cached: the same few quantity strings are parsed over and over (every pod, every quota check).
    value, fmt = parse_with_format(text)
    if value != 0 and abs(value.adjusted()) > _MAX_EXPONENT:
        raise QuantityError(f"quantity is too large or too small: {text!r}")
    if int(value.as_tuple().exponent) < -9:
        with localcontext(EXACT):
            value = value.quantize(_NANO, rounding=ROUND_CEILING)
    return value, fmt


def stored_quantity(value: object) -> Decimal:
    """The value the API server keeps for a quantity (nano precision, rounded up)."""
    return stored_amount(value)[0]


def quantity_format(value: object) -> str:
    """The format a quantity was written in: ``BinarySI``, ``DecimalSI`` or ``DecimalExponent``."""
    return stored_amount(value)[1]


def canonical_quantity(value: object) -> str:
    """The canonical spelling of a quantity, e.g. ``"1.5"`` → ``"1500m"``."""
    return format_quantity(*stored_amount(value))


def format_quantity(value: Decimal | int | float, fmt: str = DECIMAL_SI) -> str:
    """Format a value the way ``resource.Quantity.String()`` does for the given format."""
    with localcontext(EXACT):
        return _format(value if isinstance(value, Decimal) else Decimal(str(value)), fmt)


def _format(value: Decimal, fmt: str) -> str:
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    magnitude = -value if value < 0 else value
    if fmt == BINARY_SI:
        if magnitude >= 1024 and magnitude == magnitude.to_integral_value():
            return sign + _binary(int(magnitude))
        fmt = DECIMAL_SI  # small or fractional binary values print in decimal form, avoiding rounding
    # SI suffixes stop at E (1e18); the exponent form has no such ceiling.
    mantissa, exponent = _decimal_parts(magnitude, 10**6 if fmt == DECIMAL_EXPONENT else 18)
    if fmt == DECIMAL_EXPONENT:
        return f"{sign}{mantissa}{f'e{exponent}' if exponent else ''}"
    return f"{sign}{mantissa}{_DECIMAL_BY_EXPONENT[exponent]}"


def _binary(number: int) -> str:
    power = 0
    while power < 6 and number % 1024 == 0:
        number //= 1024
        power += 1
    return f"{number}{_BINARY_BY_POWER.get(power, '')}"


def _decimal_parts(value: Decimal, max_exponent: int) -> tuple[int, int]:
    """(mantissa, exponent) with the exponent a multiple of 3, as large as possible; nano precision."""
    exponent = -9
    mantissa = int((value * Decimal(10) ** 9).to_integral_value(rounding=ROUND_CEILING))
    while mantissa != 0 and mantissa % 1000 == 0 and exponent < max_exponent:
        mantissa //= 1000
        exponent += 3
    return (mantissa, exponent) if mantissa else (0, 0)


__all__ = ["canonical_quantity", "format_quantity", "quantity_format", "stored_amount", "stored_quantity"]
