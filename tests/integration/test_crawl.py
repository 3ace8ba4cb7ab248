"""Whole crawls of the local site through the frontier, asserted from the site's log."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import TYPE_CHECKING, Any

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from crawler.spiders.bfs import BfsSpider
from tests.servers import running_site
from tests.site import bfs_depths, page_index

if TYPE_CHECKING:
    from tests.servers import RunningSite

pytestmark = pytest.mark.integration


def fetched(site: RunningSite) -> list[tuple[int, int]]:
    """(host index, page index) of every page fetch, in arrival order."""
    hosts = {f"127.0.0.{2 + i}:{site.spec.port}": i for i in range(site.spec.hosts)}
    result = []
    for row in site.pages():
        page = page_index(row["path"], site.spec.pages)
        assert page is not None, row
        result.append((hosts[row["host"]], page))
    return result


async def crawl(settings: dict[str, Any], **kwargs: Any) -> Any:
    crawler = get_crawler(BfsSpider, settings)
    await crawler.crawl_async(**kwargs)
    return crawler


@deferred_f_from_coro_f
async def test_every_reachable_page_fetched_once(site, settings):
    crawler = await crawl(settings(), seeds=site.seeds[0])
    pages = fetched(site)
    expected = bfs_depths(site.spec, [(0, 0)])
    assert Counter(pages) == Counter(list(expected))  # each page exactly once
    assert crawler.stats.get_value("finish_reason") == "finished"
    assert crawler.stats.get_value("frontier/acked") == len(expected)


@deferred_f_from_coro_f
async def test_one_host_is_crawled_in_breadth_first_order(settings):
    """One host, one request at a time: every depth is done before the next starts
    (with several hosts, a host busy with a shallow page lets a ready host go deeper,
    as the invariant allows; the scripts' tests check the order among ready hosts)."""
    with running_site(hosts=1, pages=60, links=4) as site:
        await crawl(settings(), seeds=site.seeds[0])
        depths = bfs_depths(site.spec, [(0, 0)])
        order = [depths[page] for page in fetched(site)]
    assert len(order) == len(depths)
    assert order == sorted(order)
    assert order[-1] >= 3  # the site is deep enough for the order to mean something


@deferred_f_from_coro_f
async def test_nothing_deeper_than_the_depth_limit_is_fetched(site, settings):
    crawler = await crawl(settings(DEPTH_LIMIT=2), seeds=site.seeds[0])
    depths = bfs_depths(site.spec, [(0, 0)])
    pages = fetched(site)
    assert sorted(pages) == sorted(p for p, d in depths.items() if d <= 2)
    assert crawler.stats.get_value("frontier/depth_limited") > 0


@deferred_f_from_coro_f
async def test_per_host_delay_is_kept_between_fetches(site, settings):
    delay = 0.3
    await crawl(settings(DOWNLOAD_DELAY=delay, DEPTH_LIMIT=2), seeds=site.seeds[0])
    gaps = host_gaps(site)
    assert gaps, "the crawl fetched no host twice"
    assert min(min(g) for g in gaps.values()) >= delay


@deferred_f_from_coro_f
async def test_without_delay_hosts_are_fetched_back_to_back(site, settings):
    """Negative control for the delay test: the gap check can fail."""
    await crawl(settings(DOWNLOAD_DELAY=0, DEPTH_LIMIT=2), seeds=site.seeds[0])
    gaps = host_gaps(site)
    assert min(min(g) for g in gaps.values()) < 0.3


def host_gaps(site: RunningSite) -> dict[str, list[float]]:
    last: dict[str, float] = {}
    gaps: dict[str, list[float]] = defaultdict(list)
    for row in site.pages():
        if row["host"] in last:
            gaps[row["host"]].append(row["t"] - last[row["host"]])
        last[row["host"]] = row["t"]
    return gaps
