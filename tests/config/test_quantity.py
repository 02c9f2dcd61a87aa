"""Kubernetes quantity parsing."""

from decimal import Decimal

import pytest

from gpu_fabric.config.quantity import QuantityError, parse_quantity, whole_count


@pytest.mark.parametrize("text, value", [
    (2, Decimal(2)), ("2", Decimal(2)), ("2000m", Decimal(2)), ("8Gi", Decimal(8 * 2**30)),
    ("1k", Decimal(1000)), ("1e3", Decimal(1000)), ("0.5", Decimal("0.5")), ("-1", Decimal(-1)),
])
def test_parse(text, value):
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["two", "", "1.2.3", "5 Gi", True, None, [1]])
def test_refused(text):
    with pytest.raises(QuantityError):
        parse_quantity(text)


def test_whole_count():
    assert whole_count("2") == 2
    assert whole_count("1500m") is None
    assert whole_count("x") is None


@pytest.mark.parametrize("text", [
    "\u0662",          # ARABIC-INDIC DIGIT TWO: Python's int() and Decimal() read it as 2
    "\uff18Gi",        # FULLWIDTH DIGIT EIGHT
    "1\u0660",         # a Latin one followed by an Arabic-Indic zero
    "\u0968e3",        # DEVANAGARI DIGIT TWO with an exponent
    "1e\u0663",        # a non-ASCII digit in the exponent
])
def test_only_ascii_digits_as_kubernetes_parses_them(text):
    with pytest.raises(QuantityError):
        parse_quantity(text)
    assert whole_count(text) is None


def test_surrounding_white_space_is_trimmed_as_the_json_decoder_does():
    assert parse_quantity(" 2 ") == parse_quantity("2\n") == Decimal(2)
