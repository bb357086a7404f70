"""Kubernetes resource quantities ("512Mi", "1.5Gi", "250m", "1e3") as plain numbers."""

from __future__ import annotations

import re

from .errors import SregymError

_SUFFIXES = {
    "": 1.0, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
    "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50, "Ei": 2.0**60,
}
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)([a-zA-Z]*)$")


class QuantityError(SregymError):
    """A resource quantity that Kubernetes would not accept."""


def parse_quantity(value: str | int | float) -> float:
    """The number a quantity stands for: bytes for memory, cores for CPU."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    match = _QUANTITY.match(str(value).strip())
    if not match or match.group(2) not in _SUFFIXES:
        raise QuantityError(f"not a resource quantity: {value!r}",
                            hints=("use a number with an optional suffix such as 512Mi, 2Gi, 250m",))
    return float(match.group(1)) * _SUFFIXES[match.group(2)]
