"""Kubernetes resource quantities (``512Mi``, ``1.5Gi``, ``250m``, ``100n``, ``1e3``).

The one quantity parser of the core and every plugin. It follows the apimachinery grammar: a number
(``+1``, ``.5``, ``1.``), then either nothing, one SI suffix (``n u m k M G T P E``), one binary suffix
(``Ki`` .. ``Ei``) or a decimal exponent (``e3``, ``E-2``; ``1E`` alone is one exa).

* :func:`quantity` — the exact :class:`~decimal.Decimal`; :func:`parse_quantity` — the same as a float.
* :func:`quantity_or_zero` — a float that is 0 for an unset or malformed value (readers of stored objects).
* :func:`cpu_millis`, :func:`memory_bytes` — integers rounded up, as the kubelet does; None when unset.
* :func:`milli_value` — ``Quantity.MilliValue()``: thousandths, rounded up.

A string Kubernetes would refuse is a :class:`QuantityError` (also a ``ValueError``) whose message is
the API server's own. :mod:`sregym_core.quantity_canonical` adds what the API server stores and prints.
"""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, Context, Decimal, localcontext

from .errors import SregymError

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"

# The message a real API server gives for a quantity that does not parse.
QUANTITY_REGEX_MESSAGE = ("quantities must match the regular expression "
                          "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")

DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
BINARY_SUFFIXES = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}

# a number, then either a decimal exponent or a (possibly empty) suffix; ASCII digits only, and (as the
# API server) at most eight characters after the number
_QUANTITY = re.compile(r"([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))(?:[eE]([+-][0-9]{1,6}|[0-9]{1,7})|([a-zA-Z]{0,2}))")
# Exact arithmetic for every quantity Kubernetes accepts (the API server caps exponents far below this).
EXACT = Context(prec=100, Emax=10**7, Emin=-(10**7))


class QuantityError(SregymError, ValueError):
    """A resource quantity that Kubernetes would not accept."""


def parse_with_format(value: object) -> tuple[Decimal, str]:
    """The exact value of a quantity and the format it was written in (``DecimalSI``, ``BinarySI``,
    ``DecimalExponent``). JSON numbers count as their text, as the API server reads ``cpu: 1``."""
    if isinstance(value, bool) or not isinstance(value, str | int | float | Decimal):
        raise _error(value)
    text = str(value).strip()
    match = _QUANTITY.fullmatch(text)
    if not match:
        raise _error(value)
    number, exponent, suffix = match.groups()
    with localcontext(EXACT):
        if exponent is not None:
            scale, fmt = Decimal(10) ** int(exponent), DECIMAL_EXPONENT
        elif suffix in BINARY_SUFFIXES:
            scale, fmt = Decimal(1024) ** BINARY_SUFFIXES[suffix], BINARY_SI
        elif suffix in DECIMAL_SUFFIXES:
            scale, fmt = Decimal(10) ** DECIMAL_SUFFIXES[suffix], DECIMAL_SI
        else:
            raise _error(value)
        try:
            return Decimal(number) * scale, fmt
        except ArithmeticError as exc:  # the pattern admits only numbers; belt and braces
            raise _error(value) from exc


def quantity(value: object) -> Decimal:
    """The exact number a quantity stands for: bytes for memory, cores for CPU."""
    return parse_with_format(value)[0]


def parse_quantity(value: object) -> float:
    """:func:`quantity` as a float (what byte and core arithmetic in faults and oracles uses)."""
    return float(quantity(value))


def quantity_or_zero(value: object) -> float:
    """:func:`parse_quantity`, but 0.0 for an unset or malformed value (readers of stored objects)."""
    try:
        return parse_quantity(value)
    except QuantityError:
        return 0.0


def milli_value(value: object) -> int:
    """``Quantity.MilliValue()``: the value in thousandths, rounded up (a quantity or a Decimal)."""
    exact = value if isinstance(value, Decimal) else quantity(value)
    with localcontext(EXACT):
        return int((exact * 1000).to_integral_value(rounding=ROUND_CEILING))


def cpu_millis(value: object) -> int | None:
    """A CPU quantity in millicores, rounded up as the kubelet does; None when unset."""
    return None if value is None or value == "" else milli_value(value)


def memory_bytes(value: object) -> int | None:
    """A memory quantity in whole bytes, rounded up; None when unset."""
    if value is None or value == "":
        return None
    return int(quantity(value).to_integral_value(rounding=ROUND_CEILING))


def _error(value: object) -> QuantityError:
    return QuantityError(f"{QUANTITY_REGEX_MESSAGE}: {value!r}",
                         hints=("use a number with an optional suffix such as 512Mi, 2Gi, 250m, 100n",))


__all__ = ["BINARY_SI", "DECIMAL_EXPONENT", "DECIMAL_SI", "QUANTITY_REGEX_MESSAGE", "QuantityError", "cpu_millis",
           "memory_bytes", "milli_value", "parse_quantity", "parse_with_format", "quantity", "quantity_or_zero"]
