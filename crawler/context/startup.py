"""A crawl that cannot start stops with one line that says what to fix.

Scrapy prints tracebacks for exceptions raised while the engine opens; a bad setting
or an unreachable Redis is not a bug, so the failure is logged once at ERROR and the
spider is closed cleanly with ``finish_reason = "startup_failed"`` as soon as
it is open. Scrapy's own ``scrapy crawl`` (in any project) then exits with status 1:
a crawler that ends without a spider is, to Scrapy's crawler process, one whose
bootstrap failed, so once the spider is closed the crawler lets go of it.

Scrapy logs its closing lines (the stats dump, "Spider closed") after the spider
is closed, so a line logged at the failure sits mid-output. Our ``scrapy crawl``
(``crawler.commands.crawl``) therefore asks for the line last (``report_last``): the
failure is kept, and logged by ``log_kept_failure`` once the crawl is over.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary, WeakSet

from scrapy import signals
from scrapy.core.scheduler import BaseScheduler
from scrapy.exceptions import CloseSpider

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

STARTUP_FAILED = "startup_failed"


# Crawlers whose start-up failed already, with the line that says why: a bad
# setting read by several components is reported once.
_FAILED: WeakKeyDictionary[Crawler, str] = WeakKeyDictionary()
# Crawlers whose runner logs the failure itself once the crawl is over.
_REPORTED_LAST: WeakSet[Crawler] = WeakSet()


def failed_at_startup(crawler: Crawler) -> bool:
    """Whether a component of *crawler* reported a start-up failure (the spider is
    then closed as soon as it opens: nothing more should start)."""
    return crawler in _FAILED


def report_last(crawler: Crawler) -> None:
    """Keep *crawler*'s start-up failure, if any, for ``log_kept_failure``: called
    by a runner that logs it after Scrapy's closing lines, as the last line."""
    _REPORTED_LAST.add(crawler)


def log_kept_failure(crawler: Crawler) -> None:
    """Log the start-up failure kept for *crawler* (``report_last``), if any."""
    if crawler in _REPORTED_LAST and crawler in _FAILED:
        _REPORTED_LAST.discard(crawler)
        logger.error("%(message)s", {"message": _FAILED[crawler]})


class StartupFailure:
    """Logs why the crawl cannot run, then closes the spider once it is open.

    Any component may stand one in for itself (a scheduler, a middleware); only the
    first failure of a crawler is logged, so the operator reads one line.
    """

    def __init__(self, crawler: Crawler, message: str) -> None:
        self._crawler = crawler
        if crawler in _FAILED:
            return
        _FAILED[crawler] = message
        if crawler not in _REPORTED_LAST:
            logger.error("%(message)s", {"message": message})
        # Held by the signal (not weakly): a component that stood this in and then
        # went (NotConfigured) still has the spider closed.
        crawler.signals.connect(
            self._spider_opened, signal=signals.spider_opened, weak=False
        )

    def _spider_opened(self) -> None:
        # Connected now, after every component's own handler, so it runs last.
        self._crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)
        raise CloseSpider(STARTUP_FAILED)

    def _spider_closed(self) -> None:
        """Mark the crawl as failed at bootstrap (``bootstrap_failed`` of Scrapy's
        crawler process, which ``scrapy crawl`` turns into exit status 1)."""
        self._crawler.spider = None


class FailedScheduler(BaseScheduler):
    """Stands in for a scheduler whose settings are wrong: holds no request."""

    def __init__(self, crawler: Crawler, message: str) -> None:
        self._failure = StartupFailure(crawler, message)

    def has_pending_requests(self) -> bool:
        return False

    def enqueue_request(self, request: Request) -> bool:
        return False

    def next_request(self) -> Request | None:
        return None
