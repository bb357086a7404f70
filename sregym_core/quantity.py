"""Kubernetes resource quantities (``512Mi``, ``1.5Gi``, ``250m``, ``100n``, ``1e3``).

One parser for the core and every fault pack: :func:`quantity` gives the exact
:class:`~decimal.Decimal` (as the API server computes it), :func:`parse_quantity` the same as a float.
A string Kubernetes would refuse is a :class:`QuantityError` naming it. (The embedded cluster keeps
its own parser, which also formats and canonicalizes quantities as the API server does.)
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from .errors import SregymError

_SUFFIXES: dict[str, Decimal] = {
    "": Decimal(1), "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "k": Decimal("1e3"),
    "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"), "P": Decimal("1e15"), "E": Decimal("1e18"),
    "Ki": Decimal(2) ** 10, "Mi": Decimal(2) ** 20, "Gi": Decimal(2) ** 30, "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50, "Ei": Decimal(2) ** 60,
}
# a number, then either a decimal exponent (1e3, 2E-2) or one suffix; "1E" alone is one exa
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|([a-zA-Z]*))$")


class QuantityError(SregymError):
    """A resource quantity that Kubernetes would not accept."""


def quantity(value: str | int | float | Decimal) -> Decimal:
    """The exact number a quantity stands for: bytes for memory, cores for CPU."""
    if isinstance(value, bool):
        raise _error(value)
    if isinstance(value, int | Decimal):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value))
    match = _QUANTITY.match(str(value).strip())
    if not match or (match.group(3) or "") not in _SUFFIXES:
        raise _error(value)
    number, exponent, suffix = match.groups()
    try:
        base = Decimal(number + (exponent or ""))
    except InvalidOperation as exc:  # the pattern admits only valid numbers; this is belt and braces
        raise _error(value) from exc
    return base * _SUFFIXES[suffix or ""]


def parse_quantity(value: str | int | float | Decimal) -> float:
    """:func:`quantity` as a float (what byte and core arithmetic in faults and oracles uses)."""
    return float(quantity(value))


def _error(value: object) -> QuantityError:
    return QuantityError(f"not a resource quantity: {value!r}",
                         hints=("use a number with an optional suffix such as 512Mi, 2Gi, 250m, 100n",))


__all__ = ["QuantityError", "parse_quantity", "quantity"]
