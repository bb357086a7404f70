"""Quantity parsing and canonical formatting, as resource.Quantity does it."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sregym_core.quantity import BINARY_SI, DECIMAL_EXPONENT, QuantityError, milli_value
from sregym_core.quantity_canonical import canonical_quantity, format_quantity, quantity_format
from sregym_core.quantity_canonical import stored_quantity as parse_quantity


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("100m", Decimal("0.1")), ("1Gi", Decimal(1024**3)), ("1e3", Decimal(1000)), ("0.5", Decimal("0.5")),
        ("1.5", Decimal("1.5")), ("2k", Decimal(2000)), ("3M", Decimal(3_000_000)), ("1Ki", Decimal(1024)),
        (".5", Decimal("0.5")), ("+1", Decimal(1)), ("-2Mi", Decimal(-2 * 1024**2)), ("12E-3", Decimal("0.012")),
        ("5n", Decimal("5e-9")), ("7u", Decimal("7e-6")), (2, Decimal(2)), (0.25, Decimal("0.25")),
    ],
)
def test_parse(text: object, value: Decimal) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("bad", ["", "abc", "1x", "1.2.3", "--1", "1 Gi", "Gi", "1Kb", None, True, [], "1e"])
def test_parse_rejects_with_real_message(bad: object) -> None:
    with pytest.raises(QuantityError, match="quantities must match the regular expression"):
        parse_quantity(bad)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("100m", "100m"), ("0.1", "100m"), ("1.5", "1500m"), ("1000m", "1"), ("2000000", "2M"), ("1500", "1500"),
        ("1048576Ki", "1Gi"), ("1536Mi", "1536Mi"), ("1000Ki", "1000Ki"), ("0.5Gi", "512Mi"), ("512", "512"),
        ("1e3", "1e3"), ("1.5e3", "1500"), ("0", "0"), ("0Gi", "0"), ("0.1n", "1n"), ("-1Gi", "-1Gi"), ("1E", "1E"),
        ("1.25Ki", "1280"), ("1e21", "1e21"), ("2000E", "2000E"),
    ],
)
def test_canonical_form(text: str, canonical: str) -> None:
    assert canonical_quantity(text) == canonical


def test_format_helpers() -> None:
    assert quantity_format("1Gi") == BINARY_SI and quantity_format("2e6") == DECIMAL_EXPONENT
    assert format_quantity(Decimal("0.25")) == "250m"
    assert format_quantity(Decimal(3 * 1024**2), BINARY_SI) == "3Mi"
    assert format_quantity(5) == "5"
    assert milli_value(Decimal("0.0001")) == 1 and milli_value(Decimal(2)) == 2000


@given(st.integers(min_value=-(10**15), max_value=10**15), st.sampled_from(["", "m", "k", "Mi", "Gi", "n"]))
def test_canonical_round_trip(number: int, suffix: str) -> None:
    text = f"{number}{suffix}"
    canonical = canonical_quantity(text)
    assert parse_quantity(canonical) == parse_quantity(text)
    assert canonical_quantity(canonical) == canonical
