"""What a lazy-load action names, and which URLs RENDER_MODE may render."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler.render.actions import action_kind
from crawler.render.middleware import looks_like_a_page


@pytest.mark.parametrize(
    ("action", "kind"),
    [
        ("scroll", "scroll"),
        ("loadMore()", "function"),
        ("app.feed.more()", "function"),
        ("loadMore", "function"),
        ("$init", "function"),
        ("load_more", "function"),
        ("article", "either"),
        ("div.items", "either"),
        ("app.more", "either"),
        ("#feed li", "selector"),
        ("div > a[href]", "selector"),
        ("main .late", "selector"),
        ("load()()", "selector"),
        ("scroll()", "function"),  # window.scroll, called
    ],
)
def test_action_kinds(action, kind):
    assert action_kind(action) == kind


@given(st.text(max_size=30))
def test_any_action_has_a_kind(action):
    assert action_kind(action) in {"scroll", "function", "selector", "either"}


@pytest.mark.parametrize(
    ("url", "page"),
    [
        ("https://a.example/", True),
        ("https://a.example/news/item?id=3", True),
        ("https://a.example/index.php", True),
        ("https://a.example/app.html", True),
        ("https://a.example/logo.PNG", False),
        ("https://a.example/style.css", False),
        ("https://a.example/report.pdf", False),
        ("https://a.example/sitemap.xml", False),
        ("https://a.example/feed.json", False),
        ("https://a.example/notes.txt", False),
        ("https://a.example/backup.tar.gz", False),
        ("https://[::1/", False),
    ],
)
def test_only_what_may_be_a_page_is_rendered_by_mode(url, page):
    assert looks_like_a_page(url) is page
