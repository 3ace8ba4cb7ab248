"""Unit tests for crawler/frontier/encoding/plainurl.py: a seed's URL and fingerprint
without a Request, against what Scrapy gives the Request."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy import Request
from scrapy.utils.request import fingerprint
from w3lib.url import canonicalize_url, safe_url_string

from crawler.frontier.encoding.plainurl import as_is, get_fingerprint, request_url
from tests.unit.properties import PROPERTY

# Text a URL's path and query may hold, escaped or not, quotes and backslashes too.
URL_TEXT = st.lists(
    st.sampled_from([*"aZ09/?&=#%.-_~ \"\\'ü中", "%7e", "%20", "%zz"]), max_size=20
).map("".join)


@PROPERTY
@given(host=st.sampled_from(["h1.test", "H1.Test", "münchen.test", "h2.test:8443"]),
       rest=URL_TEXT, scheme=st.sampled_from(["http", "https"]))  # fmt: skip
def test_a_plain_url_gets_the_url_and_fingerprint_scrapy_gives_its_request(
    host: str, rest: str, scheme: str
) -> None:
    url = f"{scheme}://{host}/{rest}"
    try:
        request = Request(url)
    except ValueError:
        return
    assert request_url(url) == request.url
    assert get_fingerprint(request_url(url)) == fingerprint(request)


@pytest.mark.parametrize(
    "url", ["http://h3.test", "http://a.test/?b=1&a=2#frag", 'http://a.test/"q\\']
)
def test_known_forms_get_scrapys_fingerprint(url: str) -> None:
    assert get_fingerprint(request_url(url)) == fingerprint(Request(url))


# URLs near the edge of what w3lib keeps as it is (plainurl.as_is): hosts, ports
# and paths of characters it keeps, dot segments, and a few it changes.
EDGE_HOSTS = st.sampled_from(
    ["a", "h1.test", "a-b.test", "a.test.", "A.test", "xn--bcher-kva.test", "a..b"]
)
EDGE_PORTS = st.sampled_from(
    ["", ":80", ":080", ":8443", ":0", ":65535", ":65536", ":99999", ":"]
)
EDGE_PATHS = st.lists(
    st.sampled_from([*"aZ09-._~!$&'()*+,;=:@/", "/.", "/..", "%41", "?", "#", " "]),
    max_size=8,
).map("".join)


@PROPERTY
@given(
    scheme=st.sampled_from(["http", "https", "HTTP"]),
    host=EDGE_HOSTS,
    port=EDGE_PORTS,
    path=EDGE_PATHS,
)
def test_a_url_kept_as_is_is_the_url_and_fingerprint_scrapy_gives(
    scheme: str, host: str, port: str, path: str
) -> None:
    """The fast path (no w3lib parse, issue 27) agrees with w3lib where it runs."""
    url = f"{scheme}://{host}{port}/{path}"
    if as_is(url):
        assert safe_url_string(url, "utf-8") == url
        assert canonicalize_url(url) == url
    try:
        request = Request(url)
    except ValueError:
        with pytest.raises(ValueError, match="Port"):  # a bad seed on both paths
            request_url(url)
        return
    assert request_url(url) == request.url
    assert get_fingerprint(request_url(url)) == fingerprint(request)
