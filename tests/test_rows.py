"""Parsing authority limit values (narrow unit tests of `warehouse.rows.parse_number`)."""

from __future__ import annotations

import pytest

from warehouse.rows import parse_number


@pytest.mark.parametrize(
    ("value", "number"),
    [
        ("250,000", 250_000.0),
        ("$1,000,000", 1_000_000.0),
        ("1M", 1_000_000.0),
        ("1 000 000", 1_000_000.0),
        ("1\u00a0000\u202f000", 1_000_000.0),
        ("2.5bn", 2_500_000_000.0),
        ("10k", 10_000.0),
        ("USD 5,000", 5_000.0),
        ("5,000 EUR", 5_000.0),
        ("€750", 750.0),
        ("1,000.50", 1_000.5),
        ("-5", -5.0),
    ],
)
def test_a_limit_in_a_common_format_is_read(value: str, number: float) -> None:
    assert parse_number(value) == number


@pytest.mark.parametrize("value", ["Unlimited", "", "about a million", "1.2.3", "5 apples"])
def test_a_value_that_is_not_a_number_is_none(value: str) -> None:
    assert parse_number(value) is None
