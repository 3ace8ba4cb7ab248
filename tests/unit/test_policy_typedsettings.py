"""Unit tests for crawler/policy/typedsettings.py: numeric settings, named on error."""

from __future__ import annotations

import pytest
from scrapy.settings import Settings

from crawler.policy.typedsettings import get_float, get_int


def settings_with(value: object) -> Settings:
    return Settings({"SOME_SETTING": value})


@pytest.mark.parametrize(
    ("value", "number"), [(3, 3), ("3", 3), (-2, -2), ("0", 0), (2.0, 2)]
)
def test_get_int_reads_integers(value: object, number: int) -> None:
    assert get_int(settings_with(value), "SOME_SETTING") == number


@pytest.mark.parametrize(
    ("value", "number"),
    [(1.5, 1.5), ("1.5", 1.5), (2, 2.0), ("-0.25", -0.25), ("1e-6", 1e-6)],
)
def test_get_float_reads_finite_numbers(value: object, number: float) -> None:
    assert get_float(settings_with(value), "SOME_SETTING") == number


@pytest.mark.parametrize(
    "value", ["lots", "", "1.5", "1e3", [1], float("inf"), float("nan"), "inf"]
)
def test_get_int_rejects_what_is_no_integer(value: object) -> None:
    with pytest.raises(
        ValueError, match=r"^SOME_SETTING must be an integer, got "
    ) as info:
        get_int(settings_with(value), "SOME_SETTING")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("value", ["soon", "", "1,5", [1], {"a": 1}])
def test_get_float_rejects_what_is_no_number(value: object) -> None:
    with pytest.raises(
        ValueError, match=r"^SOME_SETTING must be a number, got "
    ) as info:
        get_float(settings_with(value), "SOME_SETTING")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "value", ["nan", "NaN", "inf", "-inf", "Infinity", float("nan"), float("-inf")]
)
def test_get_float_rejects_what_is_not_finite(value: object) -> None:
    with pytest.raises(ValueError, match=r"^SOME_SETTING must be a finite number"):
        get_float(settings_with(value), "SOME_SETTING")


def test_message_shows_the_value_as_given() -> None:
    with pytest.raises(ValueError, match=r"got 'soon'$"):
        get_float(settings_with("soon"), "SOME_SETTING")
