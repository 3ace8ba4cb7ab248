"""Bulk seeding (issue 27): `scrapy frontier seed --file` pushes a large file, and a
running node's intake queues far more than 1000 seeds in one maintenance round,
each URL once, duplicates refused, bad entries counted
(crawler/frontier/node/seedintake.py)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING

import pytest
from scrapy.core.spidermw import SpiderMiddlewareManager
from scrapy.utils.test import get_crawler

from crawler.crawlstate.keys import CrawlKeys
from crawler.frontier.scheduler import FrontierScheduler
from crawler.spiders.bfs import BfsSpider
from tests.integration.test_frontier_commands import frontier

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.integration

KEYS = CrawlKeys("bfs")
URLS = 6000  # six of the old 1000-a-round batches
HOSTS = 300


def queued(redis) -> int:
    """Requests queued over the crawl's shards, read from their counters."""
    return sum(
        int(redis.hget(key, "queued") or 0)
        for key in redis.scan_iter(match="bfs:{s*}:counters", count=1000)
    )


def opened_scheduler(settings) -> tuple[FrontierScheduler, object]:
    """The real scheduler opened without an engine that fetches (nothing is)."""
    crawler = get_crawler(
        BfsSpider,
        settings(
            FRONTIER_MAINTENANCE_INTERVAL=5.0,
            FRONTIER_LEASE_TIMEOUT=60.0,
            BFS_SCOPE="any",
        ),
    )
    crawler.spider = crawler._create_spider()
    spidermw = SpiderMiddlewareManager.from_crawler(crawler)
    crawler.engine = SimpleNamespace(  # type: ignore[assignment]
        scraper=SimpleNamespace(spidermw=spidermw),
        _slot=None,
        downloader=SimpleNamespace(
            total_concurrency=crawler.settings.getint("CONCURRENT_REQUESTS"),
            active=(),
        ),
    )
    scheduler = FrontierScheduler.from_crawler(crawler)
    scheduler.open(crawler.spider)
    return scheduler, crawler


def test_one_round_takes_a_large_seed_file_each_url_once(
    redis, redis_url, settings, tmp_path: Path
):
    urls = [f"http://h{i % HOSTS}.test/p/{i // HOSTS}" for i in range(URLS)]
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("\n".join(urls + urls[:500]) + "\n", encoding="utf-8")
    result = frontier(redis_url, "seed", "--file", str(seeds))
    assert result.returncode == 0, result.stderr
    assert redis.llen(KEYS.seeds) == URLS + 500
    redis.rpush(KEYS.seeds, b"\xff\xfe", "{not json")
    scheduler, crawler = opened_scheduler(settings)
    try:
        # Opening ran the first heartbeat's round (1000 at most before issue 27);
        # one more must find nothing left of the 6502.
        scheduler._open._runtime._take_seeds()  # type: ignore[union-attr]
        assert redis.llen(KEYS.seeds) == 0
    finally:
        scheduler.close("finished")
    assert queued(redis) == URLS
    assert crawler.stats.get_value("frontier/bad_seeds") == 2
