"""Nodes follow `scrapy frontier pause|resume|set` (the control hash) while crawling."""

from __future__ import annotations

import time

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler
from twisted.internet import reactor

from crawler.crawlstate.keys import CrawlKeys
from crawler.spiders.bfs import BfsSpider
from tests.integration.test_crawl import fetched as fetched_pages
from tests.site import bfs_depths

pytestmark = pytest.mark.integration

CONTROL = CrawlKeys("bfs").control


@deferred_f_from_coro_f
async def test_a_paused_crawl_fetches_nothing_until_resumed(site, settings, redis):
    redis.hset(CONTROL, "paused", "1")
    pause = 1.5
    reactor.callLater(pause, redis.hdel, CONTROL, "paused")  # type: ignore[attr-defined]
    started = time.time()
    crawler = get_crawler(BfsSpider, settings())
    await crawler.crawl_async(seeds=site.seeds[0])
    pages = site.pages()
    assert crawler.stats.get_value("finish_reason") == "finished"
    assert len(pages) == len(bfs_depths(site.spec, [(0, 0)]))
    assert pages[0]["t"] >= started + pause  # nothing before the resume


@deferred_f_from_coro_f
async def test_a_run_time_depth_limit_applies_to_links_found_after_it(
    site, settings, redis
):
    redis.hset(CONTROL, "set:DEPTH_LIMIT", "1")
    crawler = get_crawler(BfsSpider, settings(FRONTIER_MAINTENANCE_INTERVAL=0.2))
    await crawler.crawl_async(seeds=site.seeds[0])
    depths = bfs_depths(site.spec, [(0, 0)])
    fetched = [depths[page] for page in fetched_pages(site)]
    assert max(depths.values()) > 1  # the limit cuts something off
    assert max(fetched) == 1  # the first heartbeat reads the control hash at open
    assert len(fetched) == sum(depth <= 1 for depth in depths.values())
    assert crawler.stats.get_value("frontier/depth_limited") > 0


@deferred_f_from_coro_f
async def test_a_hand_written_bad_value_leaves_the_crawl_running(
    site, settings, redis, caplog
):
    redis.hset(CONTROL, "set:POLITENESS_DAY_DELAY", "soon")
    crawler = get_crawler(BfsSpider, settings(FRONTIER_MAINTENANCE_INTERVAL=0.2))
    await crawler.crawl_async(seeds=site.seeds[0])
    assert crawler.stats.get_value("finish_reason") == "finished"
    assert len(site.pages()) == len(bfs_depths(site.spec, [(0, 0)]))
    assert "Ignored run-time settings" in caplog.text
