"""When a leased request is done, so the frontier can release its lease.

A request is done when its page's output (links and items) has been handed on, or
when it failed for good. Acknowledging only then means a node killed in between
loses nothing: the lease expires and the page is fetched again, its links with it.
Both middlewares send the ``lease_done`` signal; the scheduler listens to it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.spidermiddlewares.depth import DepthMiddleware

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

# Signal sent with ``request=`` when a request handed out by the frontier is done.
lease_done = object()

# The meta key holding the lease of a request handed out by the frontier.
LEASE_META_KEY = "frontier_lease"


class _LeaseAckMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self._crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def _done(self, request: Request | None) -> None:
        if request is not None and LEASE_META_KEY in request.meta:
            self._crawler.signals.send_catch_log(lease_done, request=request)


class LeaseAckSpiderMiddleware(_LeaseAckMiddleware):
    """Acknowledges a response's lease once the spider's output has been consumed."""

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        try:
            async for output in result:
                yield output
        finally:
            self._done(response.request)

    def process_spider_exception(
        self, response: Response, exception: Exception
    ) -> None:
        self._done(response.request)


class LeaseAckDownloaderMiddleware(_LeaseAckMiddleware):
    """Acknowledges the lease of a request whose download failed for good."""

    def process_exception(self, request: Request, exception: Exception) -> None:
        self._done(request)


class FrontierDepthMiddleware(DepthMiddleware):
    """Scrapy's depth bookkeeping without its silent limit: the frontier drops and
    counts requests deeper than ``DEPTH_LIMIT`` itself."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        middleware = super().from_crawler(crawler)
        middleware.maxdepth = 0
        return middleware
