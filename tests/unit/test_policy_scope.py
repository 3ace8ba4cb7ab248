"""Unit tests for crawler/policy/scope.py: seed lines and which links are followed."""

from __future__ import annotations

import re

import pytest

from crawler.policy.scope import SCOPES, Scope, parse_seed

SEEDS = ["http://www.example.com/", "https://news.example.co.uk/start"]


@pytest.mark.parametrize(
    ("line", "seed"),
    [
        ("http://example.com/", "http://example.com/"),
        ("https://example.com/a?b=c", "https://example.com/a?b=c"),
        ("  http://example.com/  \n", "http://example.com/"),
        ("HTTP://Example.com/", "HTTP://Example.com/"),
        ("http://127.0.0.1:8080/", "http://127.0.0.1:8080/"),
        ("http://[::1]:8080/", "http://[::1]:8080/"),
        ("", None),
        ("   \t", None),
        ("# a comment", None),
        ("   # an indented comment http://example.com/", None),
    ],
)
def test_seed_lines(line: str, seed: str | None) -> None:
    assert parse_seed(line) == seed


@pytest.mark.parametrize(
    "line",
    [
        "ftp://example.com/file",
        "not a url",
        "example.com",
        "mailto:someone@example.com",
        "http://",
        "https:///path-only",
        "file:///etc/passwd",
    ],
)
def test_bad_seed_line_is_rejected_with_a_message_naming_it(line: str) -> None:
    with pytest.raises(ValueError, match=re.escape(line)) as info:
        parse_seed(line)
    assert "\n" not in str(info.value)


def test_seed_with_unbalanced_bracket_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"\S"):
        parse_seed("http://[::1")


@pytest.mark.parametrize(
    ("scope", "url", "allowed"),
    [
        ("any", "http://www.example.com/x", True),
        ("any", "http://elsewhere.org/", True),
        ("any", "not a url", True),
        ("seed-hosts", "http://www.example.com/other", True),
        ("seed-hosts", "http://WWW.EXAMPLE.COM:8080/other", True),
        ("seed-hosts", "https://news.example.co.uk/", True),
        ("seed-hosts", "http://img.example.com/", False),
        ("seed-hosts", "http://example.com/", False),
        ("seed-hosts", "http://elsewhere.org/", False),
        ("seed-hosts", "http://[::1", False),
        ("seed-hosts", "mailto:a@www.example.com", False),
        ("seed-domains", "http://img.example.com/", True),
        ("seed-domains", "http://example.com/", True),
        ("seed-domains", "http://sport.example.co.uk/", True),
        ("seed-domains", "http://other.co.uk/", False),
        ("seed-domains", "http://example.org/", False),
        ("seed-domains", "http://notexample.com/", False),
        ("seed-domains", "http://[::1", False),
    ],
)
def test_scope_table(scope: str, url: str, allowed: bool) -> None:
    assert Scope(scope, SEEDS).allows(url) is allowed


@pytest.mark.parametrize("scope", ["seed-hosts", "seed-domains"])
def test_ip_seed_allows_only_that_ip(scope: str) -> None:
    rule = Scope(scope, ["http://127.0.0.2:8000/"])
    assert rule.allows("http://127.0.0.2:9000/page")
    assert not rule.allows("http://127.0.0.3:8000/page")


@pytest.mark.parametrize("scope", ["seed-hosts", "seed-domains"])
def test_scope_without_seeds_allows_nothing(scope: str) -> None:
    assert not Scope(scope, []).allows("http://www.example.com/")


@pytest.mark.parametrize("scope", ["", "all", "Any", "seed-host", "domain"])
def test_unknown_scope_is_rejected_listing_the_choices(scope: str) -> None:
    with pytest.raises(ValueError, match="scope") as info:
        Scope(scope, SEEDS)
    for choice in SCOPES:
        assert choice in str(info.value)
