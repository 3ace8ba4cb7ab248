"""One component's asyncio client of the crawl's Redis, made on first use and
closed when the spider closes.

Made on first use because the crawl's Redis may be a private server the scheduler
starts when it opens, after components are built; closed at ``spider_closed`` so
no connection outlives the crawl.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy import signals

from crawler.context.crawl import CrawlContext

if TYPE_CHECKING:
    import redis.asyncio
    from scrapy.crawler import Crawler


class LazyAsyncClient:
    """Call it for the client: ``await self._redis().get(key)``."""

    def __init__(self, crawler: Crawler) -> None:
        self._crawler = crawler
        self._client: redis.asyncio.Redis | None = None
        crawler.signals.connect(self._close, signal=signals.spider_closed)

    def __call__(self) -> redis.asyncio.Redis:
        if self._client is None:
            self._client = CrawlContext.of(self._crawler).redis.async_client()
        return self._client

    async def _close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()
