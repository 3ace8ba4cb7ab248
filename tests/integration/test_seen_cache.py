"""The crawl's local seen cache (crawler/context/seencache.py), end to end: one
cache for the spider and the scheduler, and a crawl that loses nothing without it."""

from __future__ import annotations

from collections import Counter

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from crawler.context.crawl import CrawlContext
from tests.integration.test_crawl import crawl, fetched
from tests.site import bfs_depths

pytestmark = pytest.mark.integration


@deferred_f_from_coro_f
async def test_spider_and_scheduler_keep_one_entry_a_link(site, settings):
    """The spider's links are checked and added once: the scheduler does not add
    their fingerprints again (one slot a URL, not two)."""
    crawler = await crawl(settings(), seeds=site.seeds[0])
    expected = bfs_depths(site.spec, [(0, 0)])
    assert Counter(fetched(site)) == Counter(list(expected))
    seen = CrawlContext.of(crawler).seen
    # Every page's URL once (the links to it), plus the seed's fingerprint: the
    # seed goes to Redis whatever the cache says.
    assert len(expected) - 1 <= len(seen) <= len(expected) + 1
    # Repeated links stop at the spider: next to none reach the frontier.
    assert (crawler.stats.get_value("frontier/duplicates") or 0) < 10


@deferred_f_from_coro_f
async def test_without_the_cache_every_page_is_fetched_once(site, settings):
    """FRONTIER_LOCAL_SEEN_MB=0: every repeated link goes to Redis, which decides."""
    crawler = await crawl(settings(FRONTIER_LOCAL_SEEN_MB=0), seeds=site.seeds[0])
    expected = bfs_depths(site.spec, [(0, 0)])
    assert Counter(fetched(site)) == Counter(list(expected))
    assert len(CrawlContext.of(crawler).seen) == 0
    # About four repeated links a page (five links, one new) went to Redis.
    assert crawler.stats.get_value("frontier/duplicates") > 3 * len(expected)
