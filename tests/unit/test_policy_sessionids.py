"""Unit tests for crawler/policy/sessionids.py: a session key no list names is told
from one page's links, and what only looks like one (an item's id, a language, a
product's id on its own links) is not."""

from __future__ import annotations

from urllib.parse import quote

from hypothesis import given
from hypothesis import strategies as st

from crawler.policy.sessionids import session_keys
from crawler.policy.traps import TrapsConfig, canonical_url
from tests.unit.properties import PROPERTY

PAGE = "http://shop.example/catalog/"
SESSION_ID = "8f3k2q9x1m7c4v0b"


def test_a_key_with_one_token_on_every_link_is_a_session():
    links = [
        f"http://shop.example/a?visit={SESSION_ID}",
        f"http://shop.example/b/c.html?visit={SESSION_ID}",
        f"http://shop.example/?visit={SESSION_ID}",
        "http://elsewhere.example/x",  # other hosts are not looked at
    ]
    assert session_keys(PAGE, links) == {"visit"}


def test_uuid_and_base64_ids_are_tokens():
    for value in ("3f2b1c4e-9a7d-4e1f-8b2c-0d9e8f7a6b5c", "q9X+ab/3kLmN=="):
        links = [f"http://shop.example/{p}?u={quote(value, safe='')}" for p in "abc"]
        expected = {"u"} if "/" not in value else frozenset()
        assert session_keys(PAGE, links) == expected, value


def test_a_fresh_token_on_each_link_is_a_session_too():
    links = [f"http://shop.example/p{n}?Tok=a1b2c3d4e5f6g{n}" for n in range(5)]
    assert session_keys(PAGE, links) == {"tok"}  # decoded and lowercased


def test_the_session_key_is_dropped_and_the_page_keys_kept():
    config = TrapsConfig()
    link = f"http://shop.example/b?page=2&visit={SESSION_ID}"
    assert canonical_url(link, config, frozenset({"visit"})) == (
        "http://shop.example/b?page=2"
    )
    assert canonical_url(link, config) == link  # no name gives it


def test_an_item_id_on_links_to_one_path_is_no_session():
    links = [f"http://shop.example/item?id=A1B2C3D4E5F6G{n}" for n in range(10)]
    assert session_keys(PAGE, links) == frozenset()


def test_a_short_or_wordy_value_is_no_session():
    paths = ("/a", "/b", "/c", "/d")
    languages = [f"http://shop.example{p}?lang=en" for p in paths]
    words = [f"http://shop.example{p}?from=newsletter_spring" for p in paths]
    assert session_keys(PAGE, languages) == frozenset()
    assert session_keys(PAGE, words) == frozenset()


def test_a_key_on_a_few_of_the_links_is_no_session():
    product = "http://shop.example/product?id=X9Y8Z7W6V5U4"
    own = [
        f"http://shop.example/{part}?product=X9Y8Z7W6V5U4"
        for part in ("reviews", "questions", "specs")
    ]
    navigation = [f"http://shop.example/n{n}.html" for n in range(5)]
    assert session_keys(product, own + navigation) == frozenset()


def test_the_page_s_own_id_on_all_its_links_is_no_session():
    product = "http://shop.example/product?id=X9Y8Z7W6V5U4"
    own = [
        f"http://shop.example/{part}?product=X9Y8Z7W6V5U4"
        for part in ("reviews", "questions", "specs")
    ]
    assert session_keys(product, own) == frozenset()
    in_path = "http://shop.example/product/X9Y8Z7W6V5U4/"
    assert session_keys(in_path, own) == frozenset()


def test_a_page_with_few_links_tells_nothing():
    links = [f"http://shop.example/{p}?visit={SESSION_ID}" for p in ("a", "b")]
    assert session_keys(PAGE, links) == frozenset()


@PROPERTY
@given(page=st.text(max_size=100), links=st.lists(st.text(max_size=100), max_size=8))
def test_hostile_urls_never_raise(page, links):
    found = session_keys(page, links)
    assert all(isinstance(key, str) for key in found)


@PROPERTY
@given(
    paths=st.lists(
        st.text(alphabet="abcxyz/.-", min_size=1, max_size=12), min_size=3, max_size=8
    ),
    value=st.text(alphabet="abc-_", max_size=30),
)
def test_a_value_without_a_digit_is_never_a_session(paths, value):
    links = [f"http://shop.example/{path}?k={value}" for path in paths]
    assert session_keys(PAGE, links) == frozenset()


def test_a_found_key_is_named_as_canonical_url_names_it():
    """An escaped key (``%76isit``, even ``v%2541``) is dropped from the very links
    it was found on: both sides decode it once."""
    for written in ("%76isit", "v%2541"):
        links = [f"http://shop.example/{p}?{written}={SESSION_ID}" for p in "abc"]
        found = session_keys(PAGE, links)
        assert len(found) == 1, written
        for link in links:
            assert "?" not in canonical_url(link, TrapsConfig(), found), written
