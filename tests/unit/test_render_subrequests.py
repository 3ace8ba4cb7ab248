"""What a rendered page's own requests may fetch: its host only, no images, fonts
or media by default, never another scheme; hostile URLs refused, never raised."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler.render.subrequests import RESOURCE_TYPES, blocked_reason

DEFAULT = frozenset({"third-party", "image", "font", "media"})
PAGE_HOST = "example.org"


@pytest.mark.parametrize(
    ("url", "kind", "reason"),
    [
        ("https://example.org/app.js", "script", None),
        ("http://example.org:8080/data", "fetch", None),  # the host, any port
        ("https://EXAMPLE.org/more", "xhr", None),
        ("https://cdn.example.org/app.js", "script", "third-party"),
        ("https://tracker.test/pixel", "image", "third-party"),
        ("https://example.org/logo.png", "image", "image"),
        ("https://example.org/logo.svg", "imageset", "image"),
        ("https://example.org/font.woff2", "font", "font"),
        ("https://example.org/film.mp4", "media", "media"),
        ("https://example.org/style.css", "stylesheet", None),
        ("file:///etc/passwd", "document", "scheme"),
        ("ftp://example.org/x", "other", "scheme"),
        ("https://[::1/", "script", "bad_url"),
        ("https:///no-host", "script", "bad_url"),
    ],
)
def test_default_rules(url, kind, reason):
    assert blocked_reason(url, kind, page_host=PAGE_HOST, block=DEFAULT) == reason


@pytest.mark.parametrize(
    ("block", "kind", "reason"),
    [
        (frozenset({"fetch"}), "xhr", "fetch"),
        (frozenset({"fetch"}), "websocket", "fetch"),
        (frozenset({"script"}), "script", "script"),
        (frozenset({"stylesheet"}), "stylesheet", "stylesheet"),
        (frozenset(), "image", None),
    ],
)
def test_what_render_block_names_is_blocked(block, kind, reason):
    url = "https://example.org/x"
    assert blocked_reason(url, kind, page_host=PAGE_HOST, block=block) == reason


def test_without_third_party_other_hosts_are_fetched():
    block = frozenset({"image"})
    url = "https://cdn.test/app.js"
    assert blocked_reason(url, "script", page_host=PAGE_HOST, block=block) is None


@given(
    url=st.text(max_size=60),
    kind=st.sampled_from(sorted({t for ts in RESOURCE_TYPES.values() for t in ts})),
    block=st.frozensets(st.sampled_from([*RESOURCE_TYPES, "third-party"])),
)
def test_any_url_gets_an_answer_and_other_hosts_never_pass(url, kind, block):
    reason = blocked_reason(url, kind, page_host=PAGE_HOST, block=block)
    assert reason is None or isinstance(reason, str)
    if reason is None and "third-party" in block:
        assert url.lower().startswith(("http://", "https://"))
