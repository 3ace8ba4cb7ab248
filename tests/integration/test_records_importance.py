"""Importance in the page records on whole crawls: what the frontier sets on a popped
request (meta IMPORTANCE, INLINKS) is in each page's row, NULL in a crawl that sets
none (bfs order), and `scrapy pages --order importance` lists the most important
first. Until the frontier's importance order sets them, a downloader middleware of
this module stands in for it, setting them as a popped request would carry them."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from crawler.meta import IMPORTANCE, INLINKS
from tests.integration.test_records import crawl, pages, rows_of
from tests.unit.test_records import (  # noqa: F401 (fixtures)
    database_url,
)

if TYPE_CHECKING:
    from scrapy import Request

pytestmark = pytest.mark.integration

STAND_IN = f"{__name__}.ImportanceStandIn"


class ImportanceStandIn:
    """Sets a request's importance and in-links as the frontier's pop would: here
    1 / (1 + depth) and the depth it is fetched at, so each row can be checked
    against itself."""

    def process_request(self, request: Request) -> None:
        depth = request.meta.get("depth", 0)
        request.meta[IMPORTANCE] = 1.0 / (1 + depth)
        request.meta[INLINKS] = depth


@deferred_f_from_coro_f
async def test_rows_keep_the_importance_the_frontier_handed_pages_out_with(
    site,
    settings,
    database_url,  # noqa: F811
):
    values = settings(
        RECORDS_DATABASE_URL=database_url,
        DOWNLOADER_MIDDLEWARES={STAND_IN: 10},
    )
    await crawl(values, seeds=site.seeds[0])
    rows = rows_of(database_url)

    assert rows
    for row in rows.values():
        # The stand-in's in-links are the depth the page was fetched at (depth
        # repair may lower the row's depth later; its importance stays).
        assert row["importance"] == pytest.approx(1.0 / (1 + row["inlinks"]))
        assert row["inlinks"] >= row["depth"]
    result = pages(database_url, "--order", "importance", "--format", "jsonl")
    assert result.returncode == 0, result.stderr
    listed = [json.loads(line) for line in result.stdout.splitlines()]
    assert [row["url"] for row in listed] == sorted(
        rows, key=lambda url: (-rows[url]["importance"], url)
    )
    table = pages(database_url, "--order", "importance", "--limit", "2").stdout
    header, first = table.splitlines()[:2]
    assert header.split()[4:6] == ["importance", "inlinks"]
    assert first.startswith(site.seeds[0])
    assert first.split()[4:6] == ["1", "0"]


@deferred_f_from_coro_f
async def test_a_crawl_in_bfs_order_records_no_importance(site, settings, tmp_path):
    database = f"sqlite:///{tmp_path}/pages.db"
    await crawl(settings(RECORDS_DATABASE_URL=database), seeds=site.seeds[0])
    rows: dict[str, Any] = rows_of(database)

    assert rows
    assert {(row["importance"], row["inlinks"]) for row in rows.values()} == {
        (None, None)
    }
