"""Importance in the page records: the frontier's meta (crawler/meta.py IMPORTANCE,
INLINKS) in each record the spider builds (crawler/spiders/pagerecords.py), in the
``pages`` table's ``importance`` and ``inlinks`` columns on SQLite and PostgreSQL
(an older table gets them), NULL without, and rows sorted by them."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse
from twisted.python.failure import Failure

from crawler.meta import IMPORTANCE, INLINKS
from crawler.records.database import RecordsDatabase
from crawler.records.schema import COLUMNS, row_of
from crawler.spiders.pagerecords import (
    failure_record,
    importance_of,
    page_record,
    redirect_records,
)
from tests.unit.test_records import (  # noqa: F401 (fixtures)
    OLD_ROWS,
    OLD_TABLE,
    database_url,
    record,
)

if TYPE_CHECKING:
    from pathlib import Path

URL = "http://a.example/page"


def response(**meta: object) -> HtmlResponse:
    request = Request(URL, meta=dict(meta))
    return HtmlResponse(URL, body=b"<title>t</title>", request=request)


def test_each_record_keeps_the_importance_the_frontier_handed_it_out_with():
    fetched = page_record(response(**{IMPORTANCE: 0.25, INLINKS: 7}), 3)
    assert (fetched.importance, fetched.inlinks) == (0.25, 7)
    try:
        raise ConnectionRefusedError
    except ConnectionRefusedError:
        failure = Failure()
    failure.request = Request(URL, meta={IMPORTANCE: 2, INLINKS: 1})  # type: ignore[attr-defined]
    failed = failure_record(failure)
    assert (failed.importance, failed.inlinks) == (2.0, 1)
    meta = {"redirect_urls": ["http://a.example/old"], IMPORTANCE: 0.5, INLINKS: 4}
    [moved] = redirect_records(meta, URL)
    assert (moved.importance, moved.inlinks) == (0.5, 4)


@pytest.mark.parametrize(
    ("meta", "importance", "inlinks"),
    [
        ({}, None, None),  # not crawled in importance order
        ({IMPORTANCE: 1, INLINKS: 0}, 1.0, 0),
        ({IMPORTANCE: float("nan"), INLINKS: 2.5}, None, None),
        ({IMPORTANCE: float("inf"), INLINKS: "3"}, None, None),
        ({IMPORTANCE: True, INLINKS: False}, None, None),
        ({IMPORTANCE: "0.5", INLINKS: None}, None, None),
    ],
)
def test_anything_but_a_finite_number_and_a_count_is_null(meta, importance, inlinks):
    assert importance_of(meta) == {"importance": importance, "inlinks": inlinks}
    recorded = page_record(response(**meta), 0)
    assert (recorded.importance, recorded.inlinks) == (importance, inlinks)


def test_rows_keep_importance_and_sort_by_it(database_url):  # noqa: F811
    rows = [
        record("http://a.example/low", importance=0.001, inlinks=1),
        record("http://a.example/none"),
        record("http://a.example/high", importance=12.5, inlinks=40),
        record("http://a.example/mid", importance=0.75, inlinks=40),
    ]
    database = RecordsDatabase(database_url).open()
    try:
        database.upsert([row_of(r) for r in rows])
        read = {row["url"]: row for row in database.query()}
        by_importance = [row["url"] for row in database.query(order="importance")]
        by_inlinks = [row["url"] for row in database.query(order="inlinks")]
        top = [row["url"] for row in database.query(order="importance", limit=1)]
    finally:
        database.close()
    high = read["http://a.example/high"]
    assert (high["importance"], high["inlinks"]) == (12.5, 40)
    assert read["http://a.example/low"]["importance"] == 0.001
    assert read["http://a.example/none"]["importance"] is None
    assert read["http://a.example/none"]["inlinks"] is None
    assert by_importance == [
        "http://a.example/high",
        "http://a.example/mid",
        "http://a.example/low",
        "http://a.example/none",
    ]
    assert by_inlinks == [
        "http://a.example/high",  # ties by URL
        "http://a.example/mid",
        "http://a.example/low",
        "http://a.example/none",
    ]
    assert top == ["http://a.example/high"]


def test_an_older_table_gets_the_columns_and_reads_them_as_null(tmp_path: Path):
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
        old = list(reader.query(order="importance"))
    finally:
        reader.close()
    assert {row["importance"] for row in old} == {None}
    database = RecordsDatabase(url).open()
    try:
        database.upsert([row_of(record("http://a.example/x", importance=3.0))])
        first = next(database.query(order="importance"))
    finally:
        database.close()
    assert first["url"] == "http://a.example/x"
    assert COLUMNS[-5:-3] == ("importance", "inlinks")
