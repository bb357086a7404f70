"""Kubernetes resource quantities ("500m", "64Mi", "1.5", "129e6") as plain numbers."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_SUFFIXES = {
    "": Decimal(1),
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"),
    "k": Decimal(10) ** 3, "M": Decimal(10) ** 6, "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12, "P": Decimal(10) ** 15, "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10, "Mi": Decimal(2) ** 20, "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40, "Pi": Decimal(2) ** 50, "Ei": Decimal(2) ** 60,
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(value: str | int | float) -> Decimal:
    """The numeric value of a quantity, e.g. ``"500m" -> 0.5`` and ``"1Ki" -> 1024``."""
    if isinstance(value, (int, float)):
        return Decimal(str(value))
    match = _QUANTITY.match(str(value).strip())
    if not match or match.group(2) not in _SUFFIXES:
        raise QuantityError(f"quantities must match the regular expression "
                            f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {value!r}")
    try:
        return Decimal(match.group(1)) * _SUFFIXES[match.group(2)]
    except InvalidOperation as exc:
        raise QuantityError(f"invalid quantity {value!r}") from exc


def cpu_millis(value: str | int | float | None) -> int | None:
    """CPU quantity in millicores (rounded up like the kubelet), None when unset."""
    if value is None or value == "":
        return None
    millis = parse_quantity(value) * 1000
    return int(millis.to_integral_value(rounding="ROUND_CEILING"))


def memory_bytes(value: str | int | float | None) -> int | None:
    """Memory quantity in bytes, None when unset."""
    if value is None or value == "":
        return None
    return int(parse_quantity(value).to_integral_value(rounding="ROUND_CEILING"))
