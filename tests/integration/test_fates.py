"""Every URL has a fate: a crawl of pages that answer errors, redirects and bodies
that are not HTML gives each URL exactly one record, in the records database and in
the item feed, with the right fate, status and location, and the spider never
raises (tests.site --fates)."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from crawler.records.database import RecordsDatabase
from crawler.spiders.bfs import BfsSpider
from tests.servers import running_site

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.integration

# path on host 0 -> (fate, status, location path or None), as tests/site.py serves
# them (written out here, not read from the site or the crawler).
HOST0_FATES: dict[str, tuple[str, int, str | None]] = {
    "/": ("fetched", 200, None),
    "/p/1.html": ("fetched", 200, None),
    "/p/2.html": ("fetched", 200, None),
    "/fates/404.html": ("http_error", 404, None),
    "/fates/410.html": ("http_error", 410, None),
    "/fates/500.html": ("http_error", 500, None),
    "/fates/503.html": ("http_error", 503, None),
    "/fates/data.json": ("fetched", 200, None),
    "/fates/notes.txt": ("fetched", 200, None),
    "/fates/image": ("fetched", 200, None),
    "/fates/broken.html": ("fetched", 200, None),
    "/fates/moved.html": ("redirected", 301, "/fates/moved-again.html"),
    "/fates/moved-again.html": ("redirected", 302, "/fates/landing.html"),
    "/fates/landing.html": ("fetched", 200, None),
    "/fates/to-root.html": ("redirected", 301, "/"),
    "/fates/big": ("too_large", 0, None),
}


async def crawl(settings: dict[str, Any], **kwargs: Any) -> Any:
    crawler = get_crawler(BfsSpider, settings)
    await crawler.crawl_async(**kwargs)
    return crawler


def database_rows(url: str) -> list[dict[str, Any]]:
    database = RecordsDatabase(url).open(create=False)
    try:
        return list(database.query())
    finally:
        database.close()


def feed_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def fate_settings(settings, tmp_path: Path, **overrides: Any) -> dict[str, Any]:
    return settings(
        RECORDS_DATABASE_URL=f"sqlite:///{tmp_path}/pages.db",
        FEEDS={str(tmp_path / "items.jsonl"): {"format": "jsonlines"}},
        # Final answers at once: no immediate retries, and no retry later (the
        # retry-later delays of transient failures are tested on their own).
        RETRY_TIMES=0,
        RETRY_LATER_DELAYS="",
        DOWNLOAD_MAXSIZE=100_000,  # /fates/big is 200,000 bytes
        TIMEOUTS_TIERS=[0.5],
        DEPTH_LIMIT=3,
        **overrides,
    )


@deferred_f_from_coro_f
async def test_every_url_gets_one_record_with_its_fate(settings, tmp_path):
    with running_site(
        hosts=2, pages=3, links=0, behave={1: "dead"}, fates=True
    ) as site:
        refused = "http://127.0.0.3:1/"  # nothing listens on port 1
        crawler = await crawl(
            fate_settings(settings, tmp_path),
            seeds=f"{site.seeds[0]},{refused}",
            scope="seed-hosts",
        )
        logged = {f"http://{row['host']}{row['path']}" for row in site.pages()}
    base = f"http://{site.host(0)}"
    expected = {
        base + path: (fate, status, base + to if to else None)
        for path, (fate, status, to) in HOST0_FATES.items()
    }
    expected |= {
        site.seeds[1]: ("timed_out", 0, None),  # host 1 never answers
        refused: ("network_error", 0, None),
    }
    assert crawler.stats.get_value("spider_exceptions/count") is None
    rows = database_rows(f"sqlite:///{tmp_path}/pages.db")
    items = feed_rows(tmp_path / "items.jsonl")
    for source in (rows, items):
        urls = [row["url"] for row in source]
        assert sorted(urls) == sorted(set(urls)), "one record per URL"
        found = {
            row["url"]: (row["fate"], row["status"], row["location"]) for row in source
        }
        assert found == expected
    # Every URL the site was asked for has its record.
    assert logged <= set(expected)
    by_url = {row["url"]: row for row in rows}
    for url, (fate, _status, _to) in expected.items():
        if fate not in ("fetched", "redirected"):
            assert by_url[url]["error"], url
        else:
            assert by_url[url]["error"] is None, url
    assert by_url[base + "/fates/data.json"]["links"] == 0
    assert by_url[base + "/fates/notes.txt"]["links"] == 0
    counts = {
        fate: crawler.stats.get_value(f"bfs/fate_count/{fate}")
        for fate in ("fetched", "redirected", "http_error", "too_large")
    }
    assert counts == {"fetched": 8, "redirected": 3, "http_error": 4, "too_large": 1}
    assert crawler.stats.get_value("bfs/records") == len(expected)


@deferred_f_from_coro_f
async def test_a_seed_robots_txt_forbids_is_recorded(settings, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="bfs")
    robots = {0: "disallow:/fates/private.html"}
    with running_site(hosts=1, pages=1, links=0, robots=robots) as site:
        private = site.seeds[0] + "fates/private.html"
        crawler = await crawl(
            fate_settings(settings, tmp_path, ROBOTSTXT_OBEY=True),
            seeds=f"{site.seeds[0]},{private}",
        )
        assert "/fates/private.html" not in {row["path"] for row in site.pages()}
    for source in (
        database_rows(f"sqlite:///{tmp_path}/pages.db"),
        feed_rows(tmp_path / "items.jsonl"),
    ):
        found = {row["url"]: (row["fate"], row["status"]) for row in source}
        assert found == {
            site.seeds[0]: ("fetched", 200),
            private: ("robots_disallowed", 0),
        }
    assert crawler.stats.get_value("bfs/fate_count/robots_disallowed") == 1
    assert (
        "URLs recorded: 2 (1 fetched); 1 failed for good: 1 robots_disallowed"
        in caplog.text
    )
