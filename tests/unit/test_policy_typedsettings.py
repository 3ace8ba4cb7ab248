"""Unit tests for crawler/policy/typedsettings.py: typed settings, named on error."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy.settings import Settings

from crawler.policy.typedsettings import (
    Range,
    as_float,
    as_int,
    get_bool,
    get_choice,
    get_float,
    get_int,
    get_names,
    get_optional_float,
    get_optional_int,
)


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


# --- Ranges ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bounds", "value", "message"),
    [
        ({"above": 0}, 0, "SOME_SETTING must be > 0, got 0.0"),
        ({"above": 0, "note": "seconds"}, "-1", "SOME_SETTING must be > 0 seconds, got -1.0"),
        ({"at_least": 0}, -0.5, "SOME_SETTING must be >= 0, got -0.5"),
        ({"below": 1}, 1, "SOME_SETTING must be < 1, got 1.0"),
        ({"at_most": 64}, 65, "SOME_SETTING must be <= 64, got 65.0"),
        ({"above": 0, "below": 1}, "1", "SOME_SETTING must be in (0, 1), got 1.0"),
        ({"at_least": 1, "at_most": 64}, 0.5, "SOME_SETTING must be in [1, 64], got 0.5"),
        ({"above": 0, "at_most": 9}, 10, "SOME_SETTING must be in (0, 9], got 10.0"),
    ],
)  # fmt: skip
def test_get_float_out_of_range_names_the_range(
    bounds: Range, value: object, message: str
) -> None:
    with pytest.raises(ValueError, match=r"^SOME_SETTING ") as info:
        get_float(settings_with(value), "SOME_SETTING", **bounds)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("bounds", "value", "message"),
    [
        ({"above": 0, "note": "bytes"}, "0", "SOME_SETTING must be > 0 bytes, got 0"),
        ({"at_least": 1}, -3, "SOME_SETTING must be >= 1, got -3"),
        ({"at_least": 0, "note": "(0: no limit)"}, -1, "SOME_SETTING must be >= 0 (0: no limit), got -1"),
        ({"at_least": 1, "at_most": 65535}, 70000, "SOME_SETTING must be in [1, 65535], got 70000"),
    ],
)  # fmt: skip
def test_get_int_out_of_range_names_the_range(
    bounds: Range, value: object, message: str
) -> None:
    with pytest.raises(ValueError, match=r"^SOME_SETTING ") as info:
        get_int(settings_with(value), "SOME_SETTING", **bounds)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("bounds", "value"),
    [({"above": 0}, 1e-9), ({"at_least": 0}, 0), ({"above": 0, "below": 1}, 0.5),
     ({"at_least": 1, "at_most": 64}, 64)],
)  # fmt: skip
def test_bounds_are_inclusive_or_not_as_named(bounds: Range, value: float) -> None:
    assert get_float(settings_with(value), "SOME_SETTING", **bounds) == value
    if float(value).is_integer():
        assert get_int(settings_with(value), "SOME_SETTING", **bounds) == value


# --- Integers, strictly ---------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [True, False, None, 2.5, "2.5", "1_0", "+5", " \u0663 ", "9" * 5000, "0x10", b"3"],
)
def test_get_int_refuses_what_int_would_bend(value: object) -> None:
    with pytest.raises(ValueError, match=r"^SOME_SETTING must be an integer, got "):
        get_int(settings_with(value), "SOME_SETTING")


@pytest.mark.parametrize(("value", "number"), [(" 42 ", 42), ("-7", -7), (1e3, 1000)])
def test_get_int_reads_plain_integers(value: object, number: int) -> None:
    assert get_int(settings_with(value), "SOME_SETTING") == number


@pytest.mark.parametrize("value", [True, None, b"1.5", 10**400, "1e400"])
def test_get_float_refuses_bools_none_and_overflow(value: object) -> None:
    with pytest.raises(ValueError, match=r"^SOME_SETTING must be a (finite )?number"):
        get_float(settings_with(value), "SOME_SETTING")


# --- Optional numbers -----------------------------------------------------------------


@pytest.mark.parametrize("value", [None, "", "  ", "None", "none"])
def test_an_unset_optional_number_is_none(value: object) -> None:
    settings = settings_with(value)
    assert get_optional_float(settings, "SOME_SETTING", above=0) is None
    assert get_optional_int(settings, "SOME_SETTING", at_least=1) is None


def test_a_set_optional_number_is_checked_like_any_other() -> None:
    assert get_optional_float(settings_with("2.5"), "SOME_SETTING") == 2.5
    assert get_optional_int(settings_with("7"), "SOME_SETTING", at_least=1) == 7
    with pytest.raises(ValueError, match=r"^SOME_SETTING must be >= 1, got 0$"):
        get_optional_int(settings_with(0), "SOME_SETTING", at_least=1)
    with pytest.raises(ValueError, match=r"^SOME_SETTING must be a number, got 'x'$"):
        get_optional_float(settings_with("x"), "SOME_SETTING")


def test_a_value_is_read_with_any_name_in_the_message() -> None:
    where = "SOME_OVERRIDES['a.de']"
    assert as_float("1.5", where, at_least=0) == 1.5
    with pytest.raises(ValueError, match=r"^SOME_OVERRIDES\['a.de'\] must be >= 0"):
        as_float(-1, where, at_least=0)
    assert as_int(" 8 ", "REDIS_PORT", at_least=1) == 8


# --- Switches -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [(True, True), (False, False), (1, True), (0, False), ("1", True), ("0", False),
     ("True", True), ("false", False), (" TRUE ", True), (None, False)],
)  # fmt: skip
def test_get_bool_reads_switches(value: object, expected: bool) -> None:
    assert get_bool(settings_with(value), "SOME_SETTING") is expected


@pytest.mark.parametrize("value", [2, -1, "2", "yes", "", 1.0, [1], "maybe"])
def test_get_bool_refuses_what_is_no_switch(value: object) -> None:
    with pytest.raises(ValueError, match=r"^SOME_SETTING ") as info:
        get_bool(settings_with(value), "SOME_SETTING")
    assert str(info.value) == (
        f"SOME_SETTING must be true or false (1 or 0), got {value!r}"
    )


# --- Choices --------------------------------------------------------------------------

COLOURS = ("red", "green")


@pytest.mark.parametrize(
    ("value", "fold_case", "expected"),
    [("red", False, "red"), (" Green ", True, "green"), ("RED", True, "red")],
)
def test_get_choice_reads_one_of_the_choices(
    value: object, fold_case: bool, expected: str
) -> None:
    settings = settings_with(value)
    assert (
        get_choice(settings, "SOME_SETTING", COLOURS, fold_case=fold_case) == expected
    )


@pytest.mark.parametrize(
    ("value", "fold_case"),
    [("Red", False), (" red", False), ("", False), ("", True), (None, True),
     ("blue", True), (1, False), (["red"], False)],
)  # fmt: skip
def test_get_choice_refuses_others_naming_the_choices(
    value: object, fold_case: bool
) -> None:
    with pytest.raises(ValueError, match=r"^SOME_SETTING ") as info:
        get_choice(settings_with(value), "SOME_SETTING", COLOURS, fold_case=fold_case)
    assert str(info.value) == f"SOME_SETTING must be one of red, green, got {value!r}"


@pytest.mark.parametrize("value", [None, ""])
def test_get_choice_default_is_what_unset_means(value: object) -> None:
    settings = settings_with(value)
    assert get_choice(settings, "SOME_SETTING", COLOURS, default="green") == "green"


# --- Lists of names -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "names"),
    [
        ("a, B,,", ("a", "b")),
        ('["a", " C "]', ("a", "c")),
        (["x", "y"], ("x", "y")),
        (("x",), ("x",)),
        ("", ()),
        (None, ()),
        ([], ()),
    ],
)
def test_get_names_reads_lists_json_and_commas(value: object, names: tuple) -> None:
    assert get_names(settings_with(value), "SOME_SETTING") == names


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("[a", "SOME_SETTING is not a JSON list: "),
        ("[" * 100_000, "SOME_SETTING is not a JSON list: "),
        ({"a": 1}, "SOME_SETTING must be a list, got {'a': 1}"),
        (5, "SOME_SETTING must be a list, got 5"),
        ("a,zz,yy", "SOME_SETTING may name a, b; got 'yy', 'zz'"),
    ],
)
def test_get_names_refuses_in_one_line(value: object, message: str) -> None:
    with pytest.raises(ValueError, match=r"^SOME_SETTING ") as info:
        get_names(settings_with(value), "SOME_SETTING", allowed=("a", "b"))
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


# --- Hostile values -------------------------------------------------------------------

HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.binary(max_size=8),
    st.lists(st.one_of(st.integers(), st.text(max_size=5)), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


READERS = [
    (
        lambda s: get_float(s, "SOME_SETTING", above=0, below=1e9),
        lambda r: type(r) is float and 0 < r < 1e9,
    ),
    (
        lambda s: get_int(s, "SOME_SETTING", at_least=1, at_most=64),
        lambda r: type(r) is int and 1 <= r <= 64,
    ),
    (
        lambda s: get_optional_float(s, "SOME_SETTING", at_least=0),
        lambda r: r is None or (type(r) is float and math.isfinite(r) and r >= 0),
    ),
    (
        lambda s: get_optional_int(s, "SOME_SETTING"),
        lambda r: r is None or type(r) is int,
    ),
    (lambda s: get_bool(s, "SOME_SETTING"), lambda r: type(r) is bool),
    (
        lambda s: get_choice(s, "SOME_SETTING", COLOURS, fold_case=True),
        lambda r: r in COLOURS,
    ),
    (
        lambda s: get_names(s, "SOME_SETTING", allowed=COLOURS),
        lambda r: all(name in COLOURS for name in r),
    ),
]


@given(HOSTILE)
def test_any_value_is_read_as_asked_or_refused_in_one_line_naming_it(
    value: object,
) -> None:
    settings = {"SOME_SETTING": value}
    for read, acceptable in READERS:
        try:
            result, message = read(settings), ""
        except ValueError as exc:
            result, message = None, str(exc)
        if message:
            assert message.startswith("SOME_SETTING ")
            assert "\n" not in message
        else:
            assert acceptable(result), (value, result)
