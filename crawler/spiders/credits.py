"""The ``bfs`` spider's links as in-links, for ``FRONTIER_ORDER = importance``.

The spider yields a request only for a link it has not yielded before
(``crawler.spiders.follow``); every other link in scope is an in-link all the same,
so it goes to the crawl's ``LinkCredits`` with the credit it passes, and the
frontier adds that to the URL's importance while it waits. Each link's credit is
its share of the page's importance (``crawler.policy.importance.link_credits``),
given here because the spider knows the page's links in scope, which the generic
``LinkCreditMiddleware`` would only count from the requests yielded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crawler.context.crawl import AddonMissingError, CrawlContext
from crawler.meta import IMPORTANCE, LINK_CREDIT
from crawler.policy.importance import link_credits

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from crawler.context.linkcredits import LinkCredits


class SpiderCredits:
    """The credits of one spider's links, in importance order."""

    def __init__(self, crawler: Crawler, mode: str) -> None:
        self._crawler = crawler
        self._mode = mode
        self._link_credits: LinkCredits | None = None

    @classmethod
    def of(cls, crawler: Crawler) -> Self | None:
        """The spider's credits if the crawl is in importance order, else None."""
        settings = crawler.settings
        if settings.get("FRONTIER_ORDER") != "importance":
            return None
        return cls(crawler, settings.get("IMPORTANCE_BACKLINKS", "weighted"))

    def _credits(self) -> LinkCredits | None:
        """The crawl's LinkCredits (its context exists once the add-ons are loaded,
        after the spider is made)."""
        if self._link_credits is None:
            try:
                self._link_credits = CrawlContext.of(self._crawler).link_credits
            except AddonMissingError:
                return None  # the scheduler says so at start, in one line
        return self._link_credits

    def give(
        self, response: Response, requests: Sequence[Request], known: Sequence[str]
    ) -> None:
        """Credit *requests* (links yielded) and *known* (links not yielded again)
        with their shares of *response*'s importance."""
        origin = _origin(response.url)
        urls = [request.url for request in requests]
        external = sum(1 for url in (*urls, *known) if _origin(url) != origin)
        importance = response.meta.get(IMPORTANCE)
        if not isinstance(importance, int | float):
            importance = 0.0
        internal, outside = link_credits(
            self._mode, float(importance), len(urls) + len(known), external
        )
        for request in requests:
            credit = internal if _origin(request.url) == origin else outside
            request.meta[LINK_CREDIT] = credit
        if (inbox := self._credits()) is None:
            return
        for url in known:
            inbox.add(url, internal if _origin(url) == origin else outside)


def _origin(url: str) -> str:
    """``scheme://host[:port]`` of an absolute URL (no parsing: links are joined)."""
    scheme_end = url.find("://")
    if scheme_end < 0:
        return ""
    path = url.find("/", scheme_end + 3)
    return url if path < 0 else url[:path]
