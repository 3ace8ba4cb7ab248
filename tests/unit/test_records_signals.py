"""Content signals on their way to the records: ContentSignalsMiddleware
(crawler/middlewares/contentsignals.py) puts robots.txt's and the headers' on a
response's meta, the page record takes them (crawler/spiders/pagerecords.py), the
``pages`` table keeps them as JSON (``content_signals``, added to an older table) on
SQLite and PostgreSQL, and ``--signal`` filters select by them."""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler
from twisted.python.failure import Failure

from crawler.commands.pages import _shown, signal_filters
from crawler.meta import CONTENT_SIGNALS, REPARSED, ROBOTS_FETCH, ROBOTS_SIGNALS
from crawler.middlewares.contentsignals import ContentSignalsMiddleware
from crawler.records.database import RecordsDatabase
from crawler.records.schema import row_of
from crawler.spiders.pagerecords import failure_record, page_record
from tests.unit.test_records import (  # noqa: F401 (fixtures)
    OLD_ROWS,
    OLD_TABLE,
    database_url,
    record,
)

if TYPE_CHECKING:
    from pathlib import Path

URL = "http://a.example/page"
ROBOTS = {"robots:content-signal": {"search": "yes", "ai-train": "no"}}


def response_for(
    request: Request, headers: dict[str, list[bytes]] | None = None
) -> HtmlResponse:
    return HtmlResponse(
        request.url, body=b"<html></html>", headers=headers or {}, request=request
    )


def middleware() -> ContentSignalsMiddleware:
    return ContentSignalsMiddleware.from_crawler(get_crawler())


# --- the middleware --------------------------------------------------------------------


def test_robots_and_header_signals_go_to_the_meta_each_under_its_source() -> None:
    component = middleware()
    request = Request(URL, meta={ROBOTS_SIGNALS: [URL, ROBOTS]})
    headers = {
        "Content-Usage": [b"train-ai=n", b"search=y"],
        "Content-Signal": [b"ai-input=no"],
    }
    component.process_response(request, response_for(request, headers))
    assert request.meta[CONTENT_SIGNALS] == {
        "robots:content-signal": {"search": "yes", "ai-train": "no"},
        "header:content-usage": {"train-ai": "n", "search": "y"},
        "header:content-signal": {"ai-input": "no"},
    }
    assert component._stats.get_value("signals/pages") == 1


def test_robots_signals_set_for_another_url_are_not_this_pages() -> None:
    """A spider that copies a response's meta to its links' requests carries the
    page's robots.txt signals along; they are told apart by their URL."""
    component = middleware()
    request = Request(URL, meta={ROBOTS_SIGNALS: ["http://a.example/other", ROBOTS]})
    component.process_response(request, response_for(request))
    assert CONTENT_SIGNALS not in request.meta
    assert component._stats.get_value("signals/pages") is None


def test_a_page_without_signals_loses_any_stale_ones() -> None:
    component = middleware()
    request = Request(URL, meta={CONTENT_SIGNALS: ROBOTS})  # copied from a parent
    component.process_response(request, response_for(request))
    assert CONTENT_SIGNALS not in request.meta


def test_an_unreadable_header_is_counted_and_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    component = middleware()
    for index in range(3):
        request = Request(f"{URL}/{index}")
        headers = {"Content-Usage": [b"Train-AI=n"]}
        component.process_response(request, response_for(request, headers))
        assert CONTENT_SIGNALS not in request.meta
    assert component._stats.get_value("signals/skipped") == 3
    assert len([r for r in caplog.records if "signals/skipped" in r.getMessage()]) == 1


@pytest.mark.parametrize("mark", [ROBOTS_FETCH, REPARSED])
def test_robots_fetches_and_reparsed_pages_are_left_alone(mark: str) -> None:
    component = middleware()
    request = Request(URL, meta={mark: True})
    component.process_response(
        request, response_for(request, {"Content-Usage": [b"train-ai=n"]})
    )
    assert CONTENT_SIGNALS not in request.meta


# --- the page record -------------------------------------------------------------------


def test_the_page_record_takes_the_signals_of_its_response() -> None:
    request = Request(URL, meta={CONTENT_SIGNALS: ROBOTS})
    assert page_record(response_for(request), 0).content_signals == ROBOTS
    plain = Request(URL)
    assert page_record(response_for(plain), 0).content_signals is None


def test_an_http_error_answer_keeps_its_signals() -> None:
    request = Request(URL, meta={CONTENT_SIGNALS: ROBOTS})
    response = HtmlResponse(URL, status=404, body=b"", request=request)
    error = Exception("404")
    error.response = response  # type: ignore[attr-defined]
    failure = Failure(error)
    failure.request = request  # type: ignore[attr-defined]
    assert failure_record(failure).content_signals == ROBOTS


def test_meta_that_is_not_signals_is_not_recorded() -> None:
    request = Request(URL, meta={CONTENT_SIGNALS: {"a": ["not", "a", "mapping"]}})
    assert page_record(response_for(request), 0).content_signals is None


# --- the database ----------------------------------------------------------------------

SIGNALLED = {
    "http://a.example/robots": {"robots:content-signal": {"ai-train": "no"}},
    "http://a.example/both": {
        "robots:content-signal": {"ai-train": "no", "search": "yes"},
        "header:content-usage": {"train-ai": "n"},
    },
    "http://a.example/header": {"header:content-usage": {"train-ai": "y"}},
    "http://a.example/none": None,
}


def written(url: str) -> RecordsDatabase:
    database = RecordsDatabase(url).open()
    database.upsert(
        [row_of(record(page, content_signals=s)) for page, s in SIGNALLED.items()]
    )
    return database


@pytest.mark.parametrize(
    ("filters", "urls"),
    [
        ((("ai-train", "no"),), ["http://a.example/both", "http://a.example/robots"]),
        ((("train-ai", "n"),), ["http://a.example/both"]),
        ((("train-ai", None),), ["http://a.example/both", "http://a.example/header"]),
        ((("ai-train", "no"), ("train-ai", "n")), ["http://a.example/both"]),
        ((("search", "no"),), []),
        ((("robots:content-signal", None),), []),  # keys, not sources
    ],
)
def test_pages_are_selected_by_their_signals(
    database_url: str,  # noqa: F811
    filters: tuple[tuple[str, str | None], ...],
    urls: list[str],
) -> None:
    database = written(database_url)
    try:
        assert [row["url"] for row in database.query(signals=filters)] == urls
    finally:
        database.close()


def test_signals_are_kept_as_json_and_none_as_null(database_url: str) -> None:  # noqa: F811
    database = written(database_url)
    try:
        rows = {row["url"]: row["content_signals"] for row in database.query()}
    finally:
        database.close()
    assert rows.pop("http://a.example/none") is None
    assert {url: json.loads(text) for url, text in rows.items()} == {
        url: signals for url, signals in SIGNALLED.items() if signals
    }


def test_an_older_table_gets_the_column_and_filters_find_nothing_before(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as connection:
        connection.execute(OLD_TABLE)
        connection.executemany(
            f"INSERT INTO pages VALUES ({','.join('?' * 15)})",  # noqa: S608 (marks only)
            OLD_ROWS,
        )
    connection.close()
    url = f"sqlite:///{path}"
    reader = RecordsDatabase(url).open(create=False)  # read-only: as it is
    try:
        assert list(reader.query(signals=(("ai-train", "no"),))) == []
        assert {row["content_signals"] for row in reader.query()} == {None}
    finally:
        reader.close()
    database = written(url)
    try:
        found = [row["url"] for row in database.query(signals=(("train-ai", "y"),))]
    finally:
        database.close()
    assert found == ["http://a.example/header"]


# --- scrapy pages ----------------------------------------------------------------------


def test_signal_options_are_key_and_value_or_key_alone() -> None:
    assert signal_filters(["ai-train=no", " train-ai ", "x=a=b"]) == (
        ("ai-train", "no"),
        ("train-ai", None),
        ("x", "a=b"),
    )


@pytest.mark.parametrize("given", ["=no", "", " = "])
def test_a_signal_option_without_a_key_is_refused(given: str) -> None:
    from scrapy.exceptions import UsageError  # noqa: PLC0415 (this test's only)

    with pytest.raises(UsageError, match="--signal"):
        signal_filters([given])


def test_the_table_shows_signals_on_one_line() -> None:
    text = json.dumps(SIGNALLED["http://a.example/both"])
    assert _shown("content_signals", text) == (
        "robots:content-signal ai-train=no,search=yes; header:content-usage train-ai=n"
    )
    assert _shown("content_signals", None) == ""
    assert _shown("content_signals", "not json") == "not json"
