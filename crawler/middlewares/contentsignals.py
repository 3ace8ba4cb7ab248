"""ContentSignalsMiddleware: each page's content signals, from robots.txt and its own
headers, on its meta for its page record.

Wiring only: what the signals are and how they are read is
``crawler.policy.contentsignals``. robots.txt's come from ``RobotsMiddleware``
(meta ``ROBOTS_SIGNALS``, when it obeys robots.txt); the response's
``Content-Usage`` and ``Content-Signal`` headers are read here. Both go, each under
its source, to meta ``CONTENT_SIGNALS``, which the page record takes
(``crawler.spiders.pagerecords``). The middleware sits below Scrapy's retry and
redirect middlewares, so it sees only the answers a page is recorded with: a retried
or redirected answer never reaches it. A response answered from the page store (depth
repair) was recorded when it was fetched, and robots.txt fetches are no pages.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from crawler.context.logonce import OnceLogger
from crawler.meta import CONTENT_SIGNALS, REPARSED, ROBOTS_FETCH, ROBOTS_SIGNALS
from crawler.policy.contentsignals import Signals, checked, header_signals

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)


class ContentSignalsMiddleware:
    """Downloader middleware: a response's content signals to its meta."""

    def __init__(self, crawler: Crawler) -> None:
        assert crawler.stats is not None
        self._stats = crawler.stats
        self._once = OnceLogger(logger, crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_response(self, request: Request, response: Response) -> Response:
        """Set meta ``CONTENT_SIGNALS`` to the signals that apply to *response* (or
        remove it when none does), counting pages with any in ``signals/pages``."""
        meta = request.meta
        if meta.get(ROBOTS_FETCH) or meta.get(REPARSED):
            return response
        signals = robots_part(meta, request.url)
        found, skipped = header_signals(
            response.headers.getlist("Content-Usage"),
            response.headers.getlist("Content-Signal"),
        )
        if skipped:
            self._once.event(
                "signals/skipped",
                "Skipped %(count)d unreadable content signal(s) in the headers of "
                "%(url)s; further ones are only counted in signals/skipped",
                {"count": skipped, "url": response.url},
                count=skipped,
            )
        signals.update(found)
        if signals:
            meta[CONTENT_SIGNALS] = signals
            self._stats.inc_value("signals/pages")
        else:
            meta.pop(CONTENT_SIGNALS, None)
        return response


def robots_part(meta: Mapping[str, Any], url: str) -> Signals:
    """The signals robots.txt states for *url*, as RobotsMiddleware left them in
    *meta* (``[url, signals]``); none if they were set for another URL."""
    entry = meta.get(ROBOTS_SIGNALS)
    if not isinstance(entry, list | tuple) or len(entry) != 2 or entry[0] != url:
        return {}
    return dict(checked(entry[1]) or {})
