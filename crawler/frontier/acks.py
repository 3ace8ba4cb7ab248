"""The depth bookkeeping of a leased request's links.

(``crawler.frontier.ackgate`` tells when a leased request is done.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.spidermiddlewares.depth import DepthMiddleware

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler


class FrontierDepthMiddleware(DepthMiddleware):
    """Scrapy's depth bookkeeping without its silent limit: the frontier drops and
    counts requests deeper than ``DEPTH_LIMIT`` itself."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        middleware = super().from_crawler(crawler)
        middleware.maxdepth = 0
        return middleware
