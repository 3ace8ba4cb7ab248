"""Redirect hops of a rendered page's requests: where a redirect leads and how."""

from __future__ import annotations

import pytest

from crawler.render.hops import Hop, abort_code, client_headers, next_hop

POST = Hop("https://a.example/form", "POST", b"x=1")


@pytest.mark.parametrize(
    ("hop", "status", "location", "expected"),
    [
        (POST, 303, "/done", Hop("https://a.example/done", "GET", None)),
        (POST, 302, "/done", Hop("https://a.example/done", "GET", None)),
        (POST, 301, "/done", Hop("https://a.example/done", "GET", None)),
        (POST, 307, "/again", Hop("https://a.example/again", "POST", b"x=1")),
        (POST, 308, "//b.example/x", Hop("https://b.example/x", "POST", b"x=1")),
        (
            Hop("https://a.example/a/b", "GET", None),
            302,
            "c?d=1",
            Hop("https://a.example/a/c?d=1", "GET", None),
        ),
    ],
)
def test_next_hop(hop, status, location, expected):
    assert next_hop(hop, status, location) == expected


def test_client_headers_carry_the_crawls_user_agent_and_no_encoding():
    headers = {
        "User-Agent": "HeadlessChrome",
        "Accept-Encoding": "gzip, br, zstd",
        "Accept": "*/*",
        "Content-Length": "3",
    }
    assert client_headers(headers, "crawler/1.0") == {
        "Accept": "*/*",
        "user-agent": "crawler/1.0",
    }
    assert client_headers(headers, None) == {
        "User-Agent": "HeadlessChrome",
        "Accept": "*/*",
    }


@pytest.mark.parametrize(
    ("message", "code"),
    [
        (
            "apiRequestContext._wrapApiCall: connect ECONNREFUSED 127.0.0.1:9",
            "connectionrefused",
        ),
        ("getaddrinfo ENOTFOUND nowhere.example", "namenotresolved"),
        ("Timeout 1000ms exceeded", "timedout"),
        ("something else", "failed"),
    ],
)
def test_abort_codes(message, code):
    assert abort_code(RuntimeError(message)) == code
