"""FrontierScheduler: Scrapy's scheduler interface over the Redis frontier.

Scrapy's interface only: until the scheduler is open (or when its start failed) it
holds nothing and answers as an empty scheduler; once Redis is reached, everything
that works on the crawl is built whole in ``opened.OpenFrontier`` (the round trip
in ``exchange``, the node's heartbeat in ``node.runtime``) and answers for it.

Scrapy's scheduler contract: ``len()`` is the requests queued in the whole crawl
plus this node's unwritten ones (one round trip; the last figure while Redis is
away). ``enqueue_request`` returns False for a request it drops (depth limit, no
usable host, cannot be stored, a duplicate in the local seen cache), so the engine
sends ``request_dropped``; a duplicate Redis finds when the buffer is written later
gets ``request_dropped`` from here (``duplicates``), or False when written within
the call (the buffer full; always with ``FRONTIER_PUSH_BATCH=1``). Duplicates are
logged as ``RFPDupeFilter`` logs them (``DUPEFILTER_DEBUG``) and counted in
``dupefilter/filtered``. ``has_pending_requests`` leaves the requests this node's
engine holds to the engine, as Scrapy's own scheduler does.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.core.scheduler import BaseScheduler
from scrapy.exceptions import DontCloseSpider

from crawler.context.crawl import CrawlContext
from crawler.context.outage import REDIS_ERRORS, is_outage
from crawler.context.startup import (
    FailedScheduler,
    StartupFailure,
    failed_at_startup,
)
from crawler.crawlstate.connection import RedisUnreachableError
from crawler.crawlstate.embedded import EmbeddedRedisError
from crawler.frontier.acks import missing_essentials
from crawler.frontier.frontierconfig import FrontierConfig
from crawler.frontier.node.identity import CrawlConflictError
from crawler.frontier.opened import OpenFrontier
from crawler.frontier.spill.table import SpillDatabaseError
from crawler.frontier.store.store import SchemaMismatchError

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request, Spider
    from scrapy.crawler import Crawler

    from crawler.context.hostdelays import HostDelays


class FrontierScheduler(BaseScheduler):
    def __init__(
        self, crawler: Crawler, config: FrontierConfig, delays: HostDelays
    ) -> None:
        self._crawler = crawler
        self._config = config
        self._delays = delays
        self._outage = CrawlContext.of(crawler).outage
        self._open: OpenFrontier | None = None  # built whole once Redis is reached
        self._failure: StartupFailure | None = None
        crawler.signals.connect(self._spider_idle, signal=signals.spider_idle)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self | FailedScheduler:  # type: ignore[override]
        assert crawler.spider is not None  # Scrapy builds the spider first
        try:
            config = FrontierConfig.from_settings(crawler.settings, crawler.spider.name)
            if not getattr(crawler.spider, "reparses_from_page_store", False):
                config = replace(config, reparse_from_store=False)  # callbacks: once
            delays = CrawlContext.of(crawler).delays
            _ = CrawlContext.of(crawler).sites  # FRONTIER_SITE_STRATEGY, checked
            _ = CrawlContext.of(crawler).seen  # FRONTIER_LOCAL_SEEN_MB, checked
        except ValueError as exc:
            return FailedScheduler(crawler, f"Bad setting: {exc}")
        return cls(crawler, config, delays)

    # --- lifecycle ---------------------------------------------------------------

    def open(self, spider: Spider) -> None:
        if failed_at_startup(self._crawler):  # another component's: open nothing
            return
        if problem := missing_essentials(self._crawler):
            self._failure = StartupFailure(self._crawler, problem)
            return
        try:
            opened = OpenFrontier.join(
                self._crawler, self._config, self._delays, self._outage
            )
        except (
            RedisUnreachableError,
            EmbeddedRedisError,
            SchemaMismatchError,
            CrawlConflictError,
            SpillDatabaseError,
        ) as exc:
            self._failure = StartupFailure(self._crawler, str(exc))
            return
        except REDIS_ERRORS as exc:
            if not is_outage(exc):
                raise
            self._failure = StartupFailure(
                self._crawler,
                f"Redis stopped answering as the frontier opened ({exc}): run the "
                "crawl again once it is back",
            )
            return
        self._open = opened
        opened.start(spider)

    def close(self, reason: str) -> None:
        if self._open is not None:
            self._open.close()

    # --- Scrapy's scheduler interface ----------------------------------------------

    def has_pending_requests(self) -> bool:
        """Whether any request is queued in the crawl, or in flight on another node
        (its links may follow); the requests this node handed to its engine are the
        engine's to wait for, as with Scrapy's own scheduler."""
        return self._open is not None and self._open.has_pending_requests()

    def enqueue_request(self, request: Request) -> bool:
        """Whether *request* was queued. False for a request refused here (depth
        limit, no usable host, cannot be stored, a duplicate in the local seen
        cache) and, when the push buffer is written within this call (it is full,
        or *request* replaces a lease), for a duplicate Redis found; a duplicate
        Redis finds in a later write gets ``request_dropped`` then."""
        return self._open is not None and self._open.enqueue(request)

    def __len__(self) -> int:
        """Requests queued in the whole crawl (held ones included), plus those this
        node has not written yet: one round trip; while Redis is away, the figure
        it last gave."""
        return 0 if self._open is None else len(self._open)

    def hosts_due(self, within: float, limit: int) -> list[str]:
        """Up to *limit* hosts this node may be handed requests of within *within*
        seconds (the best ready ones first, then those whose delay ends by then):
        what is worth resolving ahead (``crawler.dns.ahead``). None while the
        frontier is not open, or Redis is away."""
        return [] if self._open is None else self._open.hosts_due(within, limit)

    def next_request(self) -> Request | None:
        return None if self._open is None else self._open.next_request()

    def _spider_idle(self) -> None:
        if not self._config.close_when_drained:
            raise DontCloseSpider
