"""RENDER_* settings: good values read, hostile ones refused with one line naming
the setting (never another exception, never a crawl that cannot end)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy.settings import Settings

from crawler import defaults
from crawler.render.config import (
    BadRenderSetting,
    RenderConfig,
    find_browser,
    parse_actions,
)

DEFAULTS = {name: getattr(defaults, name) for name in dir(defaults) if name.isupper()}


def config(**overrides: object) -> RenderConfig:
    return RenderConfig.from_settings(Settings({**DEFAULTS, **overrides}))


def test_defaults_render_nothing_and_scroll_when_asked():
    read = config()
    assert read.mode == "never"
    assert read.actions == ("scroll",)
    assert read.block == {"third-party", "image", "font", "media"}
    assert read.concurrency == 8
    assert read.max_pages_per_context == 100


@pytest.mark.parametrize(
    ("value", "mode"), [("always", "always"), (" AUTO ", "auto"), ("", "never")]
)
def test_mode_is_read_in_any_case(value, mode):
    assert config(RENDER_MODE=value).mode == mode


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("image,font", {"image", "font"}),
        ('["third-party", "Media"]', {"third-party", "media"}),
        (["script"], {"script"}),
        ("", set()),
        ([], set()),
    ],
)
def test_block_from_a_list_a_comma_list_or_json(value, expected):
    assert config(RENDER_BLOCK=value).block == expected


@pytest.mark.parametrize(
    ("name", "value", "words"),
    [
        ("RENDER_MODE", "sometimes", ["RENDER_MODE", "'sometimes'"]),
        ("RENDER_BLOCK", "images", ["RENDER_BLOCK", "images"]),
        ("RENDER_BLOCK", "[1", ["RENDER_BLOCK", "JSON"]),
        ("RENDER_BLOCK", "[" * 100_000, ["RENDER_BLOCK", "JSON"]),
        ("RENDER_TIMEOUT", "0", ["RENDER_TIMEOUT", "> 0"]),
        ("RENDER_TIMEOUT", "inf", ["RENDER_TIMEOUT", "number"]),
        ("RENDER_TIMEOUT", "nan", ["RENDER_TIMEOUT", "number"]),
        ("RENDER_TIMEOUT", "soon", ["RENDER_TIMEOUT", "number"]),
        ("RENDER_CONCURRENCY", "0", ["RENDER_CONCURRENCY", ">= 1"]),
        ("RENDER_CONCURRENCY", "2.5", ["RENDER_CONCURRENCY", "integer"]),
        ("RENDER_CONCURRENCY", "1e400", ["RENDER_CONCURRENCY", "integer"]),
        ("RENDER_MAX_PAGES_PER_CONTEXT", "-1", ["RENDER_MAX_PAGES_PER_CONTEXT"]),
        ("RENDER_SETTLE", "-0.5", ["RENDER_SETTLE", ">= 0"]),
        ("RENDER_ACTION", '["scroll", 3]', ["RENDER_ACTION"]),
        ("RENDER_ACTION", "[scroll", ["RENDER_ACTION", "JSON"]),
        ("RENDER_ACTION", {"a": 1}, ["RENDER_ACTION"]),
    ],
)
def test_a_bad_value_is_one_line_naming_the_setting(name, value, words):
    with pytest.raises(BadRenderSetting) as raised:
        config(**{name: value})
    message = str(raised.value)
    assert "\n" not in message
    for word in words:
        assert word in message


@pytest.mark.parametrize(
    ("value", "actions"),
    [
        ("scroll", ("scroll",)),
        ("  loadMore()  ", ("loadMore()",)),
        ('["scroll", "div.items", ""]', ("scroll", "div.items")),
        (["app.load", " "], ("app.load",)),
        ("", ()),
        (None, ()),
    ],
)
def test_actions_one_a_list_or_json(value, actions):
    assert parse_actions(value) == actions


@given(
    st.one_of(
        st.text(max_size=40),
        st.lists(st.one_of(st.text(max_size=10), st.integers()), max_size=4),
        st.integers(),
        st.floats(),
        st.none(),
    )
)
def test_any_action_value_is_read_or_refused_in_one_line(value):
    try:
        actions = parse_actions(value)
    except BadRenderSetting as exc:
        message = str(exc)
        actions = ()
    else:
        message = ""
    assert "\n" not in message
    assert all(action == action.strip() and action for action in actions)


SETTINGS_NAMES = (
    "RENDER_MODE",
    "RENDER_BLOCK",
    "RENDER_TIMEOUT",
    "RENDER_CONCURRENCY",
    "RENDER_MAX_PAGES_PER_CONTEXT",
    "RENDER_SETTLE",
    "RENDER_SAMPLE_PAGES",
    "RENDER_MIN_GAINED_LINKS",
)


@given(
    st.sampled_from(SETTINGS_NAMES),
    st.one_of(
        st.text(max_size=30),
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(min_value=-(10**30), max_value=10**30),
        st.lists(st.text(max_size=8), max_size=3),
        st.booleans(),
    ),
)
def test_any_value_gives_a_usable_config_or_one_line(name, value):
    try:
        read = config(**{name: value})
    except BadRenderSetting as exc:
        message = str(exc)
    else:
        message = ""
    if message:
        assert "\n" not in message
        assert name in message
    else:
        assert read.timeout > 0
        assert read.timeout != float("inf")
        assert read.concurrency >= 1
        assert read.max_pages_per_context >= 1
        assert read.settle >= 0


def test_a_browser_path_that_does_not_exist_is_none():
    assert find_browser("/nonexistent/chromium") is None
    assert config(RENDER_BROWSER="/nonexistent/chromium").browser is None
