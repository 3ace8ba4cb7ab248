"""The depth bookkeeping of a leased request's links, which the frontier needs.

``FrontierDepthMiddleware`` gives each link its depth, which BFS levels, depth repair
and ``DEPTH_LIMIT`` rest on, and, unlike Scrapy's ``DepthMiddleware`` it replaces,
drops nothing itself: the frontier drops and counts what is too deep. A
``-s SPIDER_MIDDLEWARES=...`` that replaces the project's dict loses it without a
word (links without depths, or deep links dropped silently by Scrapy's own), so
``missing_essentials`` stops start-up instead. (``crawler.frontier.ackgate`` tells
when a leased request is done.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.spidermiddlewares.depth import DepthMiddleware
from scrapy.utils.python import global_object_name

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler


class FrontierDepthMiddleware(DepthMiddleware):
    """Scrapy's depth bookkeeping without its silent limit: the frontier drops and
    counts requests deeper than ``DEPTH_LIMIT`` itself."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        # Not Scrapy's from_crawler: DEPTH_LIMIT is read from the run-time settings
        # only (crawler.context.runsettings), which check it at start in one line.
        assert crawler.stats is not None
        settings = crawler.settings
        middleware = cls(
            0,  # no limit here
            crawler.stats,
            settings.getbool("DEPTH_STATS_VERBOSE"),
            settings.getint("DEPTH_PRIORITY"),
        )
        middleware.crawler = crawler
        return middleware


def missing_essentials(crawler: Crawler) -> str | None:
    """Why the frontier cannot run with the crawl's spider middlewares (one line
    naming the component and the fix), or None. Call once the engine exists."""
    if crawler.get_spider_middleware(FrontierDepthMiddleware) is not None:
        return None
    name = global_object_name(FrontierDepthMiddleware)
    return (
        f"{name} is not enabled, and the frontier cannot run without it (it gives "
        "each link the depth BFS order and DEPTH_LIMIT rest on): add "
        f'"{name}": 900 to SPIDER_MIDDLEWARES (with '
        '"scrapy.spidermiddlewares.depth.DepthMiddleware": None)'
    )
