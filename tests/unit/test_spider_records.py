"""The spider's records (crawler/spiders/pagerecords.py): which fate each failure
gets, redirect chains, which answers are read for links, the end-of-crawl line."""

from __future__ import annotations

import re

import pytest
from scrapy import Request
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadTimeoutError,
    IgnoreRequest,
    UnsupportedURLSchemeError,
)
from scrapy.http import HtmlResponse, Response, TextResponse
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.python.failure import Failure

from crawler.frontier.holds import HoldRequest
from crawler.meta import FATE
from crawler.spiders.arguments import unknown_arguments_message
from crawler.spiders.pagerecords import (
    failure_record,
    fate_of_failure,
    fates_summary,
    is_html,
    page_record,
    redirect_records,
)

URL = "http://a.example/page"


def failure_of(exception: BaseException, **meta: object) -> Failure:
    """The failure Scrapy hands an errback: the exception, with its request."""
    try:
        raise exception
    except BaseException:  # noqa: BLE001 (wrapped, as Scrapy does)
        failure = Failure()
    request = Request(URL, meta=dict(meta))
    failure.request = request  # type: ignore[attr-defined]
    response = getattr(exception, "response", None)
    if response is not None:
        response.request = request  # as the engine ties them
    return failure


def http_error(status: int, **headers: str) -> HttpError:
    response = Response(URL, status=status, headers=headers, body=b"oops")
    return HttpError(response, "Ignoring non-200 response")


@pytest.mark.parametrize(
    ("exception", "fate", "error"),
    [
        (http_error(404), "http_error", "HTTP 404 Not Found"),
        (http_error(503), "http_error", "HTTP 503 Service Unavailable"),
        (http_error(599), "http_error", "HTTP 599"),
        (
            http_error(302, Location="javascript:alert(1)"),
            "redirected",
            "HTTP 302 Found",
        ),
        (CannotResolveHostError("no such host"), "network_error", "no such host"),
        (DownloadConnectionRefusedError("refused"), "network_error", "refused"),
        (DownloadTimeoutError("took longer"), "timed_out", "took longer"),
        (DownloadCancelledError("larger than max"), "too_large", "larger than max"),
        (
            HoldRequest("robots.txt unreachable", until=0.0, fate="robots_unreachable"),
            "robots_unreachable",
            "unreachable",
        ),
        (IgnoreRequest("max redirections reached"), "unparseable", "max redirections"),
        (UnsupportedURLSchemeError("javascript"), "unparseable", "javascript"),
        (
            ValueError("Missing scheme in request url: mailto:x"),
            "unparseable",
            "mailto",
        ),
    ],
)
def test_each_failure_gets_its_fate_and_error(exception, fate, error):
    got_fate, got_error = fate_of_failure(failure_of(exception))
    assert got_fate == fate
    assert error in got_error


@pytest.mark.parametrize(
    ("given", "fate", "error"),
    [
        ("robots_unreachable", "robots_unreachable", "DownloadTimeoutError: slow"),
        (
            ["network_error", "held 3 times: refused"],
            "network_error",
            "held 3 times: refused",
        ),
        (("http_error", ""), "http_error", "DownloadTimeoutError: slow"),
        ("not a fate", "timed_out", "DownloadTimeoutError: slow"),
    ],
)
def test_a_fate_set_in_meta_wins(given, fate, error):
    failure = failure_of(DownloadTimeoutError("slow"), **{FATE: given})
    assert fate_of_failure(failure) == (fate, error)


def test_a_fate_set_in_meta_keeps_the_status_line_of_an_answer():
    failure = failure_of(http_error(503), **{FATE: "http_error"})
    assert fate_of_failure(failure) == ("http_error", "HTTP 503 Service Unavailable")


def test_an_http_error_record_keeps_the_answer_but_not_its_body():
    record = failure_record(failure_of(http_error(410), depth=2, tier=1))
    assert (record.url, record.status, record.fate) == (URL, 410, "http_error")
    assert (record.depth, record.tier, record.length) == (2, 1, 4)
    assert record.error == "HTTP 410 Gone"
    assert record.body == b""


def test_a_network_failure_record_has_status_0():
    record = failure_record(failure_of(CannotResolveHostError("nxdomain")))
    assert (record.status, record.fate, record.host) == (
        0,
        "network_error",
        "a.example",
    )
    assert record.error == "CannotResolveHostError: nxdomain"


def test_a_redirect_chain_gives_each_hop_its_location():
    meta = {
        "redirect_urls": ["http://a.example/1", "http://a.example/2"],
        "redirect_reasons": [301, "meta refresh"],
        "depth": 3,
    }
    records = redirect_records(meta, "http://b.example/end")
    found = [(r.url, r.status, r.fate, r.location, r.depth) for r in records]
    assert found == [
        ("http://a.example/1", 301, "redirected", "http://a.example/2", 3),
        ("http://a.example/2", 200, "redirected", "http://b.example/end", 3),
    ]
    assert redirect_records({}, URL) == []


@pytest.mark.parametrize(
    ("response", "html"),
    [
        (HtmlResponse(URL, body=b"<a href='/x'>x</a>"), True),
        (
            TextResponse(
                URL, body=b"<a>x</a>", headers={"Content-Type": "application/xhtml+xml"}
            ),
            True,
        ),
        (
            TextResponse(URL, body=b"{}", headers={"Content-Type": "application/json"}),
            False,
        ),
        (TextResponse(URL, body=b"x", headers={"Content-Type": "text/plain"}), False),
        (Response(URL, body=b"\x89PNG", headers={"Content-Type": "image/png"}), False),
    ],
)
def test_only_html_is_read_for_links(response, html):
    assert is_html(response) is html


def test_the_end_of_crawl_line_counts_failures_by_fate():
    stats = {
        "bfs/fate_count/fetched": 7,
        "bfs/fate_count/redirected": 2,
        "bfs/fate_count/http_error": 3,
        "bfs/fate_count/timed_out": 1,
    }
    assert fates_summary(stats) == (
        "URLs recorded: 13 (7 fetched, 2 redirected); 4 failed for good: "
        "3 http_error, 1 timed_out"
    )
    assert fates_summary({"bfs/fate_count/fetched": 1}) == (
        "URLs recorded: 1 (1 fetched); none failed for good"
    )


def test_an_unknown_argument_names_the_one_it_may_be():
    message = unknown_arguments_message(["seed", "zzz"])
    assert "'seed' (did you mean 'seeds'?)" in message
    assert "'zzz'," not in message
    assert "'zzz':" in message


# An article of 400 words (a page's length), with a clock at its top.
WORDS = " ".join(f"word{i * 7919 % 1000}" for i in range(400))
ARTICLE = "<html><body><p>Updated {}</p><p>" + WORDS + "</p></body></html>"


def test_an_html_page_gets_the_simhash_of_its_text() -> None:
    def record_of(clock: str) -> str | None:
        body = ARTICLE.format(clock).encode()
        response = HtmlResponse(
            "http://127.0.0.2/a",
            body=body,
            encoding="utf-8",
            request=Request("http://127.0.0.2/a"),
        )
        return page_record(response, 0).text_hash

    first, later = record_of("09:14:02"), record_of("09:14:03")
    assert first is not None
    assert later is not None
    assert re.fullmatch("[0-9a-f]{16}", first)
    assert (int(first, 16) ^ int(later, 16)).bit_count() <= 3  # a clock: little


@pytest.mark.parametrize(
    "response",
    [
        TextResponse(
            "http://127.0.0.2/a.txt",
            body=b"plain text",
            encoding="utf-8",
            request=Request("http://127.0.0.2/a.txt"),
        ),
        HtmlResponse(
            "http://127.0.0.2/a",
            status=404,
            body=b"<p>gone</p>",
            request=Request("http://127.0.0.2/a"),
        ),
    ],
)
def test_only_html_answered_200_gets_a_text_hash(response) -> None:
    assert page_record(response, 0).text_hash is None
