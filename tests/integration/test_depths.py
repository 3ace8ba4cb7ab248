"""Every page within DEPTH_LIMIT is fetched and recorded at its shortest link
distance from the seeds, under politeness and with hosts running ahead (the default
FRONTIER_BFS_LOOKAHEAD=-1), where a page is often found first by a longer path.

The truth comes from the site's own link graph (tests/site.py bfs_depths), never
from the crawler.
"""

from __future__ import annotations

import argparse
import io
from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest
from scrapy import signals
from scrapy.settings import Settings
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler
from twisted.internet import reactor

from crawler.commands.runtimesettings import set_setting
from crawler.crawlstate import controls
from crawler.crawlstate.keys import CrawlKeys
from crawler.spiders.bfs import BfsSpider
from tests.integration.test_records import rows_of
from tests.servers import running_site
from tests.site import bfs_depths, url_of

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    import redis as redis_py
    from scrapy.crawler import Crawler

    from tests.servers import RunningSite

pytestmark = pytest.mark.integration

LIMIT = 4
SITE = {"hosts": 8, "pages": 60, "links": 2, "cross": 0.5, "seed": 3}
# Pages within LIMIT of a root: enough that some are first found by a longer path.


async def recorded_depths(
    values: dict[str, Any],
    site: RunningSite,
    on_open: Callable[[Crawler], None] | None = None,
) -> dict[str, int]:
    """Crawl from every host's root, confined to the site's hosts; the depth of
    each page's row in the records database, by URL (depth repair lowers it). The
    crawl's feed must hold one record per URL, each with its row. *on_open* is
    called with the crawler once its spider is open."""
    crawler = get_crawler(BfsSpider, values)
    fed: Counter[str] = Counter()

    def scraped(item: Any) -> None:
        fed[item.url] += 1

    crawler.signals.connect(scraped, signal=signals.item_scraped)
    if on_open is not None:
        crawler.signals.connect(
            lambda: on_open(crawler), signal=signals.spider_opened, weak=False
        )
    await crawler.crawl_async(seeds=",".join(site.seeds), scope="seed-hosts")
    rows = rows_of(values["RECORDS_DATABASE_URL"])
    assert [url for url, count in fed.items() if count > 1] == []
    assert set(fed) == set(rows)
    return {url: row["depth"] for url, row in rows.items()}


def within_limit(site: RunningSite) -> dict[str, int]:
    """The true depth of every page within LIMIT links of a root."""
    roots = [(host, 0) for host in range(site.spec.hosts)]
    depths = bfs_depths(site.spec, roots)
    return {url_of(site.spec, *page): d for page, d in depths.items() if d <= LIMIT}


def polite(settings: Any, tmp_path: Path, **overrides: Any) -> dict[str, Any]:
    return settings(
        RECORDS_DATABASE_URL=f"sqlite:///{tmp_path}/pages.db",
        DEPTH_LIMIT=LIMIT,
        POLITENESS_DAY_DELAY=0.3,
        POLITENESS_NIGHT_DELAY=0.3,
        **overrides,
    )


@deferred_f_from_coro_f
async def test_every_page_within_the_limit_is_recorded_at_its_distance(
    settings, tmp_path
):
    """With the page store on (the default), a page fetched too deep has its links
    followed again from its stored copy: no page is fetched twice, and none is
    fed or recorded twice."""
    with running_site(**SITE) as site:
        values = polite(settings, tmp_path, PAGESTORE_URL=str(tmp_path / "pages"))
        depths = await recorded_depths(values, site)
        expected = within_limit(site)
        fetches = Counter((row["host"], row["path"]) for row in site.pages())

    wrong = {
        url: (d, depths.get(url)) for url, d in expected.items() if depths.get(url) != d
    }
    assert not wrong, (
        f"{len(wrong)} of {len(expected)} pages missed or misplaced: {wrong}"
    )
    assert set(depths) == set(expected)  # nothing beyond the limit
    assert max(fetches.values()) == 1


@deferred_f_from_coro_f
async def test_without_a_page_store_no_page_is_fetched_twice(settings, tmp_path):
    """Without a stored copy to reparse, a page fetched too deep is not fetched a
    second time: only requests still queued move up."""
    with running_site(**SITE) as site:
        await recorded_depths(polite(settings, tmp_path), site)
        fetches = Counter((row["host"], row["path"]) for row in site.pages())

    assert max(fetches.values()) == 1


@deferred_f_from_coro_f
async def test_without_repair_pages_found_by_a_longer_path_keep_its_depth(
    settings, tmp_path
):
    """The control: the same crawl without depth repair misplaces pages."""
    with running_site(**SITE) as site:
        depths = await recorded_depths(
            polite(settings, tmp_path, FRONTIER_DEPTH_REPAIR=False), site
        )
        expected = within_limit(site)

    wrong = [url for url, d in expected.items() if depths.get(url) != d]
    assert wrong


@deferred_f_from_coro_f
async def test_a_depth_limit_raised_while_the_crawl_runs_is_repaired_to(
    settings, redis: redis_py.Redis, tmp_path
):
    """A node started with DEPTH_LIMIT=1, paused; `scrapy frontier set DEPTH_LIMIT`
    raises it to LIMIT, then the crawl resumes: depth repair looks for shorter paths
    down to the limit in force, not the one the node started with, so every page
    within LIMIT is recorded at its distance, none fetched twice."""
    keys = CrawlKeys("bfs")
    values = {
        **polite(settings, tmp_path, PAGESTORE_URL=str(tmp_path / "pages")),
        "DEPTH_LIMIT": 1,
        "FRONTIER_MAINTENANCE_INTERVAL": 0.2,
        "CLOSESPIDER_TIMEOUT": 120,  # bounded, should the crawl never resume
    }
    raised: list[bool] = []

    def raise_limit() -> None:
        try:
            opts = argparse.Namespace(
                words=["DEPTH_LIMIT", str(LIMIT)],
                node=None,
                unset=False,
                settings=Settings(values),
            )
            raised.append(set_setting(redis, keys, opts, io.StringIO()) == 0)
        finally:
            controls.resume(redis, keys)

    def opened(crawler: Crawler) -> None:
        raised.append(crawler.crawling)  # the node runs at DEPTH_LIMIT=1, paused
        reactor.callLater(0.5, raise_limit)  # type: ignore[attr-defined]

    controls.pause(redis, keys)
    with running_site(**SITE) as site:
        depths = await recorded_depths(values, site, on_open=opened)
        expected = within_limit(site)
        fetches = Counter((row["host"], row["path"]) for row in site.pages())

    assert raised == [True, True]
    assert redis.hget(keys.control, "set:DEPTH_LIMIT") == str(LIMIT).encode()
    wrong = {
        url: (d, depths.get(url)) for url, d in expected.items() if depths.get(url) != d
    }
    assert not wrong, (
        f"{len(wrong)} of {len(expected)} pages missed or misplaced: {wrong}"
    )
    assert set(depths) == set(expected)  # nothing beyond the new limit
    assert max(fetches.values()) == 1
