"""Kubernetes resource quantities (``100m``, ``1Gi``, ``1e3``, ``0.5``).

Parsing follows the apimachinery grammar; formatting follows its canonical form so that
values we print (``kubectl describe quota``, quota error messages, PV capacity) look the same
as a real API server's: ``1.5`` prints as ``1500m``, ``2000000`` as ``2M`` and ``1048576Ki`` as ``1Gi``.
"""

from __future__ import annotations

import functools
import re
from decimal import ROUND_CEILING, Context, Decimal, InvalidOperation, localcontext

__all__ = [
    "BINARY_SI",
    "DECIMAL_EXPONENT",
    "DECIMAL_SI",
    "QuantityError",
    "canonical_quantity",
    "format_quantity",
    "milli_value",
    "parse_quantity",
    "quantity_format",
]

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"

# The message a real API server uses when a quantity does not parse.
QUANTITY_REGEX_MESSAGE = (
    "quantities must match the regular expression "
    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)

_BINARY_SUFFIXES = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_BY_EXPONENT = {exp: suffix for suffix, exp in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_POWER = {power: suffix for suffix, power in _BINARY_SUFFIXES.items()}
_NUMBER = re.compile(r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)$")
_NANO = Decimal("1e-9")
# Enough digits for any quantity the API accepts (it caps exponents well below this).
_CONTEXT = Context(prec=80)
_MAX_EXPONENT = 60


class QuantityError(ValueError):
    """A string that is not a valid Kubernetes quantity."""


def _split(text: str) -> tuple[str, str]:
    """Split ``text`` into its number and suffix parts (no validation of the suffix)."""
    index = 0
    if index < len(text) and text[index] in "+-":
        index += 1
    while index < len(text) and (text[index].isdigit() or text[index] == "."):
        index += 1
    return text[:index], text[index:]


def _scale(suffix: str) -> tuple[Decimal, str]:
    if len(suffix) > 8:
        raise QuantityError(QUANTITY_REGEX_MESSAGE)
    if suffix in _BINARY_SUFFIXES:
        return Decimal(1024) ** _BINARY_SUFFIXES[suffix], BINARY_SI
    if suffix in _DECIMAL_SUFFIXES:
        return Decimal(10) ** _DECIMAL_SUFFIXES[suffix], DECIMAL_SI
    match = re.fullmatch(r"[eE]([+-]?[0-9]+)", suffix)
    if match:
        return Decimal(10) ** int(match.group(1)), DECIMAL_EXPONENT
    raise QuantityError(QUANTITY_REGEX_MESSAGE)


def _parse(text: object) -> tuple[Decimal, str]:
    if isinstance(text, bool):
        raise QuantityError(QUANTITY_REGEX_MESSAGE)
    if isinstance(text, int | float | Decimal):
        # JSON numbers are accepted by the API server as quantities (e.g. ``cpu: 1``).
        text = str(text)
    if not isinstance(text, str):
        raise QuantityError(QUANTITY_REGEX_MESSAGE)
    return _parse_text(text)


@functools.lru_cache(maxsize=4096)
def _parse_text(text: str) -> tuple[Decimal, str]:
    # Cached: the same few quantity strings are parsed over and over (every pod, every quota check).
    text = text.strip()
    number, suffix = _split(text)
    if not number or not _NUMBER.match(number):
        raise QuantityError(QUANTITY_REGEX_MESSAGE)
    multiplier, fmt = _scale(suffix)
    with localcontext(_CONTEXT):
        try:
            value = Decimal(number) * multiplier
        except InvalidOperation as exc:  # pragma: no cover - guarded by the regex
            raise QuantityError(QUANTITY_REGEX_MESSAGE) from exc
        if value != 0 and abs(value.adjusted()) > _MAX_EXPONENT:
            raise QuantityError("quantity is too large or too small")
        # The API server keeps at most nano precision and rounds up (never down) beyond it.
        if int(value.as_tuple().exponent) < -9:
            value = value.quantize(_NANO, rounding=ROUND_CEILING)
    return value, fmt


def parse_quantity(text: object) -> Decimal:
    """Parse ``"100m"``, ``"1Gi"``, ``"1e3"``, ``"0.5"`` (or a JSON number) into a Decimal.

    Raises :class:`QuantityError` (a ``ValueError``) with the API server's message otherwise.
    """
    return _parse(text)[0]


def quantity_format(text: object) -> str:
    """The format a quantity was written in: ``BinarySI``, ``DecimalSI`` or ``DecimalExponent``."""
    return _parse(text)[1]


def _integral(value: Decimal) -> bool:
    return value == value.to_integral_value()


def _decimal_parts(value: Decimal, max_exponent: int = 18) -> tuple[int, int]:
    """Return (mantissa, exponent) with the exponent a multiple of 3 and as large as possible."""
    exponent = -9
    mantissa = int((value * Decimal(10) ** 9).to_integral_value(rounding=ROUND_CEILING))
    while mantissa != 0 and mantissa % 1000 == 0 and exponent < max_exponent:
        mantissa //= 1000
        exponent += 3
    if mantissa == 0:
        return 0, 0
    return mantissa, exponent


def format_quantity(value: Decimal | int | float, fmt: str = DECIMAL_SI) -> str:
    """Format a value the way ``resource.Quantity.String()`` does for the given format."""
    with localcontext(_CONTEXT):
        return _format(Decimal(str(value)) if not isinstance(value, Decimal) else value, fmt)


def _format(value: Decimal, fmt: str) -> str:
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    magnitude = -value if value < 0 else value
    if fmt == BINARY_SI:
        # Small or fractional binary values are shown in decimal form to avoid rounding.
        if magnitude < 1024 or not _integral(magnitude):
            fmt = DECIMAL_SI
        else:
            number = int(magnitude)
            power = 0
            while power < 6 and number % 1024 == 0:
                number //= 1024
                power += 1
            return f"{sign}{number}{_BINARY_BY_POWER.get(power, '')}"
    # SI suffixes stop at E (1e18); the exponent form has no such ceiling.
    mantissa, exponent = _decimal_parts(magnitude, 10**6 if fmt == DECIMAL_EXPONENT else 18)
    if fmt == DECIMAL_EXPONENT:
        suffix = f"e{exponent}" if exponent else ""
        return f"{sign}{mantissa}{suffix}"
    return f"{sign}{mantissa}{_DECIMAL_BY_EXPONENT[exponent]}"


def canonical_quantity(text: object) -> str:
    """The canonical spelling of a quantity string, e.g. ``"1.5"`` → ``"1500m"``."""
    value, fmt = _parse(text)
    return format_quantity(value, fmt)


def milli_value(value: Decimal) -> int:
    """``Quantity.MilliValue()``: the value in thousandths, rounded up."""
    return int((value * 1000).to_integral_value(rounding=ROUND_CEILING))
