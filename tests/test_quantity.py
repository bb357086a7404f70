from decimal import Decimal

import pytest

from sregym_core.quantity import QuantityError, parse_quantity, quantity


@pytest.mark.parametrize("text, value", [("512Mi", 512 * 2**20), ("1.5Gi", 1.5 * 2**30), ("250m", 0.25),
                                         ("2", 2.0), ("1e3", 1000.0), ("16384000Ki", 16384000 * 1024.0),
                                         ("3G", 3e9), (7, 7.0), ("100n", 1e-7), ("5u", 5e-6), ("2E", 2e18),
                                         ("1E3", 1000.0), ("+.5", 0.5)])
def test_quantities(text, value):
    assert parse_quantity(text) == pytest.approx(value)


def test_decimal_semantics_are_exact():
    assert quantity("100m") * 3 == Decimal("0.3")  # a float sum would be 0.30000000000000004
    assert quantity("1n") + quantity("999999999n") == Decimal(1)
    assert quantity("1.5Gi") == Decimal(3 * 2**29)


@pytest.mark.parametrize("text", ["", "Mi", "12XB", "1.2.3Gi", "ten", "1e", "5 Mi", "1Kb", True])
def test_bad_quantities_name_the_value(text):
    with pytest.raises(QuantityError) as info:
        parse_quantity(text)
    assert repr(text) in str(info.value) and info.value.hints
