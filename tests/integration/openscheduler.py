"""A FrontierScheduler opened as Scrapy's engine opens one, for the ported tests of
Scrapy's scheduler contract (tests/integration/test_scheduler_*.py)."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from scrapy.utils.test import get_crawler

from crawler.frontier.scheduler import FrontierScheduler

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from scrapy import Spider


@asynccontextmanager
async def opened(
    spidercls: type[Spider], settings: dict[str, Any]
) -> AsyncIterator[FrontierScheduler]:
    """A FrontierScheduler of a crawl of *spidercls*, built and opened as Scrapy's
    engine does (with a real engine, never started), closed after."""
    crawler = get_crawler(spidercls, settings)
    crawler.spider = spidercls.from_crawler(crawler)
    crawler.engine = crawler._create_engine()
    scheduler = FrontierScheduler.from_crawler(crawler)
    assert isinstance(scheduler, FrontierScheduler)
    scheduler.open(crawler.spider)
    try:
        yield scheduler
    finally:
        scheduler.close("finished")
