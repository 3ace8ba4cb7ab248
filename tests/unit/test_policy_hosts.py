"""Unit tests for crawler/policy/hosts.py: hosts, registered domains, shard keys."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler.policy.hosts import (
    BadURLError,
    _is_dns_name,
    host_of,
    registered_domain,
    shard_key,
)
from tests.unit.properties import PROPERTY


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("http://example.com/", "example.com"),
        ("https://Example.COM/Path?Q=1", "example.com"),
        ("http://example.com:8080/page", "example.com"),
        ("HTTP://User:Secret@WWW.Example.com:443/", "www.example.com"),
        ("http://[::1]/", "::1"),
        ("http://[::1]:8080/x", "::1"),
        ("http://[2001:DB8::1]:80/", "2001:db8::1"),
        ("http://127.0.0.2:8000/robots.txt", "127.0.0.2"),
        ("http://localhost/", "localhost"),
        ("//example.com/no-scheme", "example.com"),
    ],
)
def test_host_is_lower_case_without_port(url: str, host: str) -> None:
    assert host_of(url) == host


@pytest.mark.parametrize(
    "url",
    [
        "",
        "http://",
        "http:///path-only",
        "/relative/path",
        "mailto:someone@example.com",
        "not a url",
        "http://[::1",
        "http://[not-an-ip]/",
        "http://a\uff03b/",
        "http://" + "a" * 64 + ".example/",  # a label over 63 characters
        "http://" + "abcdefghi." * 26 + "example/",  # a name over 253
        "http://a..example/",  # an empty label
    ],
)
def test_url_without_usable_host_is_a_bad_url(url: str) -> None:
    with pytest.raises(BadURLError):
        host_of(url)


def test_bad_url_is_a_value_error() -> None:
    assert issubclass(BadURLError, ValueError)


@pytest.mark.parametrize(
    ("host", "domain"),
    [
        ("a.b.example.co.uk", "example.co.uk"),
        ("example.co.uk", "example.co.uk"),
        ("www.example.com", "example.com"),
        ("deep.er.sub.example.org", "example.org"),
        ("example.com", "example.com"),
        ("127.0.0.1", "127.0.0.1"),
        ("::1", "::1"),
        ("2001:db8::1", "2001:db8::1"),
        ("localhost", "localhost"),
        ("intranet", "intranet"),
    ],
)
def test_registered_domain(host: str, domain: str) -> None:
    assert registered_domain(host) == domain


@pytest.mark.parametrize(
    ("host", "shard_by", "key"),
    [
        ("a.b.example.co.uk", "host", "a.b.example.co.uk"),
        ("a.b.example.co.uk", "domain", "example.co.uk"),
        ("www.example.com", "domain", "example.com"),
        ("127.0.0.1", "host", "127.0.0.1"),
        ("127.0.0.1", "domain", "127.0.0.1"),
        ("localhost", "domain", "localhost"),
    ],
)
def test_shard_key_follows_shard_by(host: str, shard_by: str, key: str) -> None:
    assert shard_key(host, shard_by) == key  # type: ignore[arg-type]


def test_hosts_of_one_domain_share_a_domain_shard_key() -> None:
    hosts = ["www.example.com", "img.example.com", "example.com"]
    assert {shard_key(host, "domain") for host in hosts} == {"example.com"}
    assert len({shard_key(host, "host") for host in hosts}) == 3


# URL punctuation often, anything else (surrogates, NFKC look-alikes) sometimes.
NETLOC_CHARACTERS = st.one_of(
    st.sampled_from("[]:@%.#?/\\ 0123456789abcdefABCDEF"),
    st.characters(),
)


def _host_or_bad_url(url: str) -> None:
    try:
        host = host_of(url)
    except BadURLError:
        return
    assert isinstance(host, str)
    assert host


@PROPERTY
@given(url=st.text())
def test_any_text_gives_a_host_or_bad_url(url: str) -> None:
    _host_or_bad_url(url)


@PROPERTY
@given(
    scheme=st.sampled_from(["http://", "https://", "//", "HTTP://", ""]),
    netloc=st.text(alphabet=NETLOC_CHARACTERS, max_size=30),
    rest=st.sampled_from(["", "/", "/a?b#c", ":80/"]),
)
def test_url_shaped_text_gives_a_host_or_bad_url(
    scheme: str, netloc: str, rest: str
) -> None:
    _host_or_bad_url(scheme + netloc + rest)


@pytest.mark.parametrize(
    "url",
    [
        "http://" + "a" * 63 + ".example/",
        "http://example.com./",  # a trailing dot: the root
        "http://[::1]:8080/",
        "http://127.0.0.2:8000/",
    ],
)
def test_the_longest_dns_names_and_ip_addresses_have_a_host(url: str) -> None:
    assert host_of(url)


def host_by_urlsplit(url: str) -> str | None:
    """``host_of`` without its fast path: urlsplit's host name, checked alike."""
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    if not host or (":" not in host and not _is_dns_name(host)):
        return None
    return host


@PROPERTY
@given(
    scheme=st.sampled_from(["http://", "https://", "//", "HTTP://", "ftp://", ""]),
    netloc=st.one_of(
        st.text(alphabet=st.sampled_from("ab0.-@:"), max_size=6),
        st.text(alphabet=st.sampled_from("ab09.-_:[]@% \t\n\\A"), max_size=12),
        st.text(max_size=30),
    ),
    rest=st.sampled_from(["", "/", "/a?b#c", ":80/", ":/x", ":8x/", "?q", "#f"]),
    label=st.sampled_from(["", "a" * 63 + ".", "b" * 64 + ".", ("c" * 50 + ".") * 5]),
)
def test_the_fast_path_reads_the_host_urlsplit_reads(
    scheme: str, netloc: str, rest: str, label: str
) -> None:
    """Most URLs skip urlsplit (issue 27): they must get its answer, or its error
    (labels of 63 and 64 characters, names over 253)."""
    url = scheme + label + netloc + rest
    try:
        host: str | None = host_of(url)
    except BadURLError:
        host = None
    assert host == host_by_urlsplit(url)
