"""One component's asyncio client of the crawl's Redis, made on first use and
closed when the spider closes.

Made on first use because the crawl's Redis may be a private server the scheduler
starts when it opens, after components are built; closed at ``spider_closed`` so
no connection outlives the crawl.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from scrapy import signals

from crawler.context.crawl import CrawlContext
from crawler.context.outage import REDIS_ERRORS, is_outage

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    import redis.asyncio
    from scrapy.crawler import Crawler

T = TypeVar("T")
# Tries of one call through connections the server may have closed.
STALE_TRIES = 3


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

    async def fresh(self, call: Callable[[], Awaitable[T]]) -> T:
        """*call*'s answer; when it fails as if Redis were away, the pool's idle
        connections are dropped and it is tried again, up to ``STALE_TRIES``
        times. A restarted Redis leaves every pooled connection closed by the
        server: without this each of them would fail once, a warning each. The
        last error is raised: the caller reports it (an outage through the
        crawl's gate)."""
        for attempt in range(STALE_TRIES):
            try:
                return await call()
            except REDIS_ERRORS as exc:
                if not is_outage(exc) or attempt + 1 == STALE_TRIES:
                    raise
                if self._client is not None:
                    await self._client.connection_pool.disconnect(
                        inuse_connections=False
                    )
        raise AssertionError("unreachable")  # the loop returns or raises

    async def _close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()
