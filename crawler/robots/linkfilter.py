"""RobotsLinkFilter: links robots.txt forbids are dropped before they are queued.

The robots middleware drops a forbidden request when it is about to be downloaded,
but by then the frontier has handed it out and its host has spent a politeness delay
on it. Most links of a page point to hosts whose rules this node already holds (the
page's own host, first of all), so this spider middleware drops those at once, and
only links of origins not yet known reach the download-time check. The filter finds
the robots middleware with Scrapy's ``crawler.get_downloader_middleware`` once the
engine is built (at ``spider_opened``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Self

from scrapy import Request, signals
from scrapy.exceptions import NotConfigured

from crawler.meta import DONT_OBEY_ROBOTSTXT
from crawler.robots.middleware import RobotsMiddleware

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable, Iterator

    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)


class RobotsLinkFilter:
    def __init__(self, crawler: Crawler) -> None:
        assert crawler.stats is not None
        self._crawler = crawler
        self._stats = crawler.stats
        self._robots: RobotsMiddleware | None = None
        crawler.signals.connect(self._spider_opened, signal=signals.spider_opened)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not crawler.settings.getbool("ROBOTSTXT_OBEY"):
            raise NotConfigured  # switched off: no message (a message warns)
        return cls(crawler)

    def _spider_opened(self) -> None:
        """Find the robots middleware: None if it is not enabled, or stands in for a
        bad setting (the crawl is stopping then)."""
        self._robots = self._crawler.get_downloader_middleware(RobotsMiddleware)

    def process_spider_output(
        self, response: Response, result: Iterable[Any]
    ) -> Iterator[Any]:
        robots = self._robots
        for output in result:
            if robots is None or not self._forbidden(robots, output):
                yield output

    async def process_spider_output_async(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        robots = self._robots
        async for output in result:
            if robots is None or not self._forbidden(robots, output):
                yield output

    def _forbidden(self, robots: RobotsMiddleware, output: Any) -> bool:
        if not isinstance(output, Request) or output.meta.get(DONT_OBEY_ROBOTSTXT):
            return False
        if robots.known_verdict(output.url) is not False:
            return False
        self._stats.inc_value("robots/disallowed_links")
        logger.debug(
            "Link forbidden by robots.txt, not queued: %(url)s",
            {"url": output.url},
            extra={"spider": self._crawler.spider},
        )
        return True
