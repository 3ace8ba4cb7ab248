"""The ``bfs`` spider's links as in-links, for ``FRONTIER_ORDER = importance``.

The spider yields a request only for a link it has not yielded before
(``crawler.spiders.follow``); every other link in scope is an in-link all the same,
so it goes to the crawl's ``LinkCredits`` with the credit it passes, and the
frontier adds that to the URL's importance while it waits. Each link's credit
(``crawler.policy.importance.link_credit``) is given here because the spider knows
the page's links in scope, which the generic ``LinkCreditMiddleware`` would only
count from the requests yielded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crawler.context.crawl import AddonMissingError, CrawlContext
from crawler.meta import BACKLINKS, LINK_CREDIT
from crawler.policy.importance import link_credit

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
        """Credit *requests* (links yielded) and *known* (links not yielded again),
        the page's links in scope, each by ``link_credit``."""
        origin = _origin(response.url)
        backlinks = response.meta.get(BACKLINKS)
        if not isinstance(backlinks, int | float):
            backlinks = 0.0
        depth = response.meta.get("depth", 0)
        links = len(requests) + len(known)
        credits = {
            external: link_credit(
                self._mode,
                float(backlinks),
                depth if isinstance(depth, int) else 0,
                links,
                external,
            )
            for external in (False, True)
        }
        for request in requests:
            request.meta[LINK_CREDIT] = credits[_origin(request.url) != origin]
        if known and (inbox := self._credits()) is not None:
            for url in known:
                inbox.add(url, credits[_origin(url) != origin])


def _origin(url: str) -> str:
    """``scheme://host[:port]`` of an absolute URL (no parsing: links are joined)."""
    scheme_end = url.find("://")
    if scheme_end < 0:
        return ""
    path = url.find("/", scheme_end + 3)
    return url if path < 0 else url[:path]
