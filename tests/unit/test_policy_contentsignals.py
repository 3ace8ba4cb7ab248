"""Content signal expressions (crawler/policy/contentsignals.py): the published
examples read as their specifications say, hostile input skipped and counted, never
raised."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler.policy.contentsignals import (
    MAX_EXPRESSION_BYTES,
    MAX_KEYS,
    MAX_VALUE_CHARS,
    checked,
    header_signals,
    parse_content_signal,
    parse_content_usage,
    signals_json,
    signals_of_json,
    signals_text,
)
from tests.unit.properties import PROPERTY

# --- Content-Usage (draft-ietf-aipref-vocab-08 section 6) ------------------------------


@pytest.mark.parametrize(
    ("field", "values"),
    [
        # attach-05 1.2 and vocab 6: the examples.
        pytest.param(b"train-ai=n", {"train-ai": "n"}, id="attach-example"),
        pytest.param(
            b"train-ai=y, search=n",
            {"train-ai": "y", "search": "n"},
            id="vocab-example",
        ),
        # vocab 6.5.1: the last value of a key applies; a bare key is the boolean
        # true, a quoted "n" a String: neither is the Token n, both kept as written.
        pytest.param(
            b'train-ai=y, train-ai, search=n, search="n"',
            {"train-ai": "?1", "search": '"n"'},
            id="duplicates-last-wins",
        ),
        # vocab 6.5.2: parameters carry no preference; the last member's value.
        pytest.param(
            b"train-ai;allow=n, train-ai=y", {"train-ai": "y"}, id="parameters-dropped"
        ),
        pytest.param(
            b"train-ai=n, x-future-use=maybe, ai-use=(a b)",
            {"train-ai": "n", "x-future-use": "maybe", "ai-use": "(a b)"},
            id="unknown-keys-kept",
        ),
        pytest.param(b"  search=y  ", {"search": "y"}, id="surrounding-spaces"),
        pytest.param(b"", {}, id="empty"),
    ],
)
def test_content_usage_is_read_as_the_vocabulary_says(
    field: bytes, values: dict[str, str]
) -> None:
    assert parse_content_usage(field) == (values, 0)


@pytest.mark.parametrize(
    "field",
    [
        pytest.param(b"Train-AI=n", id="upper-case-key"),  # vocab 6.5.1: a failure
        pytest.param(b"train-ai=n,", id="trailing-comma"),
        pytest.param(b"train-ai=n search=y", id="missing-comma"),
        pytest.param(b"train-ai=\xff", id="not-ascii"),
        pytest.param(b"train-ai=n, ((", id="garbage-after"),
        pytest.param(b"a=" + b"y" * MAX_EXPRESSION_BYTES, id="over-8-KiB"),
    ],
)
def test_an_unparseable_content_usage_states_nothing_and_is_counted(
    field: bytes,
) -> None:
    assert parse_content_usage(field) == ({}, 1)


def test_content_usage_keeps_at_most_max_keys() -> None:
    field = ", ".join(f"k{index}=y" for index in range(MAX_KEYS + 8)).encode()
    values, skipped = parse_content_usage(field)
    assert list(values) == [f"k{index}" for index in range(MAX_KEYS)]
    assert skipped == 8


def test_a_content_usage_value_too_long_is_skipped() -> None:
    long = "x" * MAX_VALUE_CHARS
    field = f'search=y, note="{long}"'.encode()
    assert parse_content_usage(field) == ({"search": "y"}, 1)


# --- Content-Signal (contentsignals.org) ----------------------------------------------


@pytest.mark.parametrize(
    ("text", "values", "skipped"),
    [
        pytest.param(
            "search=yes, ai-input=yes, ai-train=no",
            {"search": "yes", "ai-input": "yes", "ai-train": "no"},
            0,
            id="contentsignals-org-example",
        ),
        pytest.param(
            "Search=YES,AI-Train = No",
            {"search": "yes", "ai-train": "no"},
            0,
            id="any-case-any-spacing",
        ),
        pytest.param(
            "ai-train=no, ai-train=yes", {"ai-train": "no"}, 0, id="no-wins-first"
        ),
        pytest.param(
            "ai-train=yes, ai-train=no", {"ai-train": "no"}, 0, id="no-wins-last"
        ),
        pytest.param(
            "search=yes, use=immediate",
            {"search": "yes", "use": "immediate"},
            0,
            id="unknown-keys-kept",
        ),
        pytest.param(
            "search=yes,, ai-train=no,",
            {"search": "yes", "ai-train": "no"},
            0,
            id="empty-parts-ignored",
        ),
        pytest.param(
            'search=yes, nonsense, =no, ai-train=, ai input=no, x="y"',
            {"search": "yes"},
            5,
            id="unreadable-parts-skipped",
        ),
        pytest.param("", {}, 0, id="empty"),
    ],
)
def test_content_signal_is_read_as_pairs(
    text: str, values: dict[str, str], skipped: int
) -> None:
    assert parse_content_signal(text) == (values, skipped)


def test_an_oversized_content_signal_is_skipped_whole() -> None:
    assert parse_content_signal("search=" + "y" * MAX_EXPRESSION_BYTES) == ({}, 1)


# --- headers ---------------------------------------------------------------------------


def test_header_lines_of_one_field_are_one_value() -> None:
    signals, skipped = header_signals(
        [b"train-ai=n", b"search=y"], [b"search=yes", b"ai-train=no"]
    )
    assert signals == {
        "header:content-usage": {"train-ai": "n", "search": "y"},
        "header:content-signal": {"search": "yes", "ai-train": "no"},
    }
    assert skipped == 0


def test_a_broken_header_is_counted_and_the_other_kept() -> None:
    signals, skipped = header_signals([b"train-ai=n,,"], [b"ai-train=no"])
    assert signals == {"header:content-signal": {"ai-train": "no"}}
    assert skipped == 1


def test_no_headers_no_signals() -> None:
    assert header_signals([], []) == ({}, 0)


def test_headers_stating_nothing_give_no_source() -> None:
    assert header_signals([b""], [b" , "]) == ({}, 0)


# --- what is recorded ------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [None, "x", {}, {"a": "b"}, {"a": {"b": 1}}, {1: {"b": "c"}}, {"a": {2: "c"}}],
)
def test_meta_that_is_not_signals_is_refused(value: object) -> None:
    assert checked(value) is None


def test_signals_are_recorded_as_sorted_compact_json() -> None:
    signals = {
        "robots:content-usage": {"train-ai": "n"},
        "header:x": {"b": "2", "a": "1"},
    }
    assert signals_json(signals) == (
        '{"header:x":{"a":"1","b":"2"},"robots:content-usage":{"train-ai":"n"}}'
    )
    assert signals_json(None) is None
    assert signals_json({}) is None


@pytest.mark.parametrize(
    ("text", "signals"),
    [
        ('{"header:x":{"a":"1"}}', {"header:x": {"a": "1"}}),
        ("not json", None),
        ("[1, 2]", None),
        ('{"header:x":{"a":1}}', None),
        ("[" * 100_000, None),
    ],
)
def test_a_column_is_read_back_as_signals_or_none(text: str, signals: object) -> None:
    assert signals_of_json(text) == signals


def test_signals_are_shown_on_one_line() -> None:
    signals = {
        "robots:content-signal": {"search": "yes", "ai-train": "no"},
        "header:content-usage": {"train-ai": "n"},
    }
    assert signals_text(signals) == (
        "robots:content-signal search=yes,ai-train=no; header:content-usage train-ai=n"
    )


# --- hostile input ---------------------------------------------------------------------


@PROPERTY
@given(st.binary(max_size=600) | st.text(max_size=300).map(str.encode))
def test_any_content_usage_bytes_are_read_or_counted(data: bytes) -> None:
    values, skipped = parse_content_usage(data)
    assert len(values) <= MAX_KEYS
    assert skipped >= 0
    for key, value in values.items():
        assert isinstance(key, str)
        assert isinstance(value, str)
        assert len(value) <= MAX_VALUE_CHARS
    json.dumps(values)  # what is recorded is JSON


sf_like = st.lists(
    st.sampled_from(
        ["train-ai", "search", "ai-use", "=", "y", "n", ",", " ", ";", '"', "?1",
         "(", ")", ":", "*", "@", "%", "1.5", "-", "X", "\t", "\x00", "é"]
    ),
    max_size=40,
).map("".join)  # fmt: skip


@PROPERTY
@given(sf_like)
def test_near_miss_dictionaries_never_raise(text: str) -> None:
    values, skipped = parse_content_usage(text.encode())
    assert values or skipped or not text.strip(" ,")


@PROPERTY
@given(st.text(max_size=300))
def test_any_content_signal_text_is_read_or_counted(text: str) -> None:
    values, skipped = parse_content_signal(text)
    assert len(values) <= MAX_KEYS
    assert skipped >= 0
    for key, value in values.items():
        assert key == key.lower()
        assert value == value.lower()
        assert "," not in key + value
        assert "=" not in key + value


@PROPERTY
@given(
    st.lists(st.binary(max_size=100), max_size=4),
    st.lists(st.binary(max_size=100), max_size=4),
)
def test_any_headers_give_signals_or_counts(
    usage: list[bytes], signal: list[bytes]
) -> None:
    signals, skipped = header_signals(usage, signal)
    assert checked(signals) == (signals or None)
    assert skipped >= 0
