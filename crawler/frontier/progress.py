"""The frontier's progress line: queue size, hosts ready, in flight, pages/min."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from crawler.frontier.store import FrontierStore

logger = logging.getLogger(__name__)


class Progress:
    """Counts pages done by this node and logs the crawl's state every *interval*."""

    def __init__(self, crawler: Crawler, interval: float) -> None:
        self._crawler = crawler
        self._interval = interval
        self._pages = 0
        self._pages_at_last_log = 0
        self._last_log: float | None = None

    def acked(self, count: int) -> None:
        self._pages += count

    def maybe_log(self, store: FrontierStore, now: float) -> None:
        if self._last_log is None:
            self._last_log = now
            return
        elapsed = now - self._last_log
        if elapsed < self._interval:
            return
        queued, leased = store.totals()
        rate = (self._pages - self._pages_at_last_log) * 60 / elapsed
        logger.info(
            "Frontier: %(queued)d queued, %(ready)d hosts ready, %(leased)d in flight, "
            "%(rate).0f pages/min on this node",
            {
                "queued": queued,
                "ready": store.hosts_ready(),
                "leased": leased,
                "rate": rate,
            },
            extra={"spider": self._crawler.spider},
        )
        self._last_log = now
        self._pages_at_last_log = self._pages
