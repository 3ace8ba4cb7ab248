"""Unit tests for crawler/frontier/encoding/plainurl.py: a seed's URL and fingerprint
without a Request, against what Scrapy gives the Request."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy import Request
from scrapy.utils.request import fingerprint

from crawler.frontier.encoding.plainurl import get_fingerprint, request_url
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
