import pytest

from sregym_core.quantity import QuantityError, parse_quantity


@pytest.mark.parametrize("text, value", [("512Mi", 512 * 2**20), ("1.5Gi", 1.5 * 2**30), ("250m", 0.25),
                                         ("2", 2.0), ("1e3", 1000.0), ("16384000Ki", 16384000 * 1024.0),
                                         ("3G", 3e9), (7, 7.0)])
def test_quantities(text, value):
    assert parse_quantity(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["", "Mi", "12XB", "1.2.3Gi", "ten"])
def test_bad_quantities_name_the_value(text):
    with pytest.raises(QuantityError) as info:
        parse_quantity(text)
    assert repr(text) in str(info.value) and info.value.hints
