"""A crawler whose scheduler can be opened without an engine that fetches: the
spider built, the spider middlewares loaded (some need the spider), and a stand-in
engine with just what the frontier reads. Shared by the seeding tests and
``bench.seeding``."""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING

from scrapy.core.spidermw import SpiderMiddlewareManager

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


def standin_engine(crawler: Crawler) -> Crawler:
    """*crawler*, its spider made and a stand-in engine set (nothing is fetched)."""
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
    return crawler
