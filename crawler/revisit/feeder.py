"""RevisitFeeder: moves the URLs that are due from the URL library into the frontier.

An extension on every node (``REVISIT_POLICY`` other than ``off``). Every
``REVISIT_FEED_INTERVAL`` seconds it claims due URLs, earliest due first, while
fewer than ``REVISIT_FEED_BATCH`` claimed ones wait crawl-wide, and hands each to
the engine as a request that bypasses the seen filter (``dont_filter``) but nothing
else: the frontier queues it under its host at its depth, so politeness, robots.txt
and BFS order among what is due apply as to any request; within a depth, a page
with a shorter interval goes first (``urgency``). The request carries the
stored validators (``If-None-Match``, ``If-Modified-Since``) and accepts a 304.

With revisits on the crawl does not end when the frontier drains: while the library
holds a URL with a next visit, the feeder keeps the spider open (``spider_idle``).
A database that cannot be read is logged once and tried again the next round.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from typing import TYPE_CHECKING

from scrapy import Request, signals
from scrapy.exceptions import DontCloseSpider, NotConfigured
from scrapy.utils.asyncio import create_looping_call

from crawler.context.startup import StartupFailure
from crawler.meta import REVISIT
from crawler.policy.revisitconfig import RevisitConfig, revisits_on
from crawler.records.database import RecordsDatabase, RecordsDatabaseError
from crawler.records.library import URLLibrary
from crawler.records.visits import NOT_MODIFIED

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Self

    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.utils.asyncio import AsyncioLoopingCall
    from twisted.internet.task import LoopingCall
    from twisted.python.failure import Failure

    from crawler.records.library import Due

logger = logging.getLogger(__name__)


# Most priority a revisit gets either way (Request.priority; the frontier's bands
# span -512..511, a spider's own priorities stay well inside).
MAX_URGENCY = 64


def urgency(interval: float, typical: float) -> int:
    """The ``Request.priority`` of a revisit: one step per halving of its interval
    below the typical one, so within a depth and a host, pages that change fast go
    before lazy ones due at the same time (waiting behind them would stretch a
    short interval most)."""
    if not interval > 0 or not typical > 0:
        return 0
    steps = round(math.log2(typical / interval))
    return max(-MAX_URGENCY, min(MAX_URGENCY, steps))


class RevisitFeeder:
    def __init__(self, crawler: Crawler, config: RevisitConfig, url: str) -> None:
        self._crawler = crawler
        self._config = config
        self._url = url
        self._library: URLLibrary | None = None
        self._database: RecordsDatabase | None = None
        self._loop: AsyncioLoopingCall | LoopingCall | None = None
        self._round: asyncio.Future[None] | None = None
        # Whether the library had a URL with a next visit, at the start of the last
        # round; and when the engine first found the spider idle (None: busy).
        self._scheduled = (True, float("-inf"))
        self._idle_since: float | None = None
        self._failing = False
        self._failure: StartupFailure | None = None
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(self.spider_idle, signal=signals.spider_idle)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not revisits_on(crawler.settings):
            raise NotConfigured  # no message: Scrapy would warn on every crawl
        try:
            config = RevisitConfig.from_settings(crawler.settings)
        except ValueError as exc:
            StartupFailure(crawler, f"Bad setting: {exc}")
            raise NotConfigured from None  # said once, by StartupFailure
        url = crawler.settings.get("RECORDS_DATABASE_URL") or ""
        if not url:
            message = (
                f"Bad setting: REVISIT_POLICY={config.policy} needs the URL "
                "library, in the page-record database: set RECORDS_DATABASE_URL"
            )
            StartupFailure(crawler, message)
            raise NotConfigured  # said once, by StartupFailure
        return cls(crawler, config, url)

    async def spider_opened(self, spider: Spider) -> None:
        database = RecordsDatabase(self._url)
        try:
            await asyncio.to_thread(database.open)
            library = URLLibrary(database, self._config)
            await asyncio.to_thread(library.create)
        except RecordsDatabaseError as exc:
            database.close()
            self._failure = StartupFailure(self._crawler, str(exc))  # kept: weak
            return
        self._database, self._library = database, library
        self._loop = create_looping_call(self.feed)
        self._loop.start(self._config.feed_interval, now=True)

    async def spider_closed(self) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        if self._round is not None:
            await asyncio.wait([self._round])
        if self._database is not None:
            await asyncio.to_thread(self._database.close)
            self._database = None

    def spider_idle(self) -> None:
        """Keep the crawl open while any URL has a next visit, as a feeder round
        that started once the spider was idle (every record written) says."""
        if self._idle_since is None:
            self._idle_since = time.time()
        scheduled, looked_at = self._scheduled
        if scheduled or looked_at < self._idle_since:
            raise DontCloseSpider

    def feed(self) -> None:
        """One round, unless the last is still at the database: claim what is due
        (in a thread), then queue it in the frontier."""
        if self._round is None and self._library is not None:
            self._round = asyncio.ensure_future(self._feed(self._library))

    async def _feed(self, library: URLLibrary) -> None:
        try:
            due = await asyncio.to_thread(self._claim, library, time.time())
        except RecordsDatabaseError as exc:
            self._failed(exc)
            return
        finally:
            self._round = None
        self._answered()
        self._queue(due)

    def _claim(self, library: URLLibrary, now: float) -> list[Due]:
        room = self._config.feed_batch - library.outstanding(now)
        due = library.claim(now, room)
        self._scheduled = (bool(due) or library.has_scheduled(), now)
        return due

    def _queue(self, due: list[Due]) -> None:
        engine, spider = self._crawler.engine, self._crawler.spider
        if not due or engine is None or spider is None:
            return
        stats = self._crawler.stats
        assert stats is not None
        stats.inc_value("revisit/due", len(due))
        self._idle_since = None
        errback = getattr(spider, "failed", None)  # the bfs spider's: every fate
        if not callable(errback):
            errback = None
        for entry in due:
            engine.crawl(self._request(entry, errback))

    def _request(self, due: Due, errback: Callable[[Failure], Any] | None) -> Request:
        headers = {}
        if self._config.conditional:
            if due.etag:
                headers["If-None-Match"] = due.etag
            if due.last_modified:
                headers["If-Modified-Since"] = due.last_modified
        return Request(
            due.url,
            headers=headers,
            priority=urgency(due.revisit_interval, self._config.bounds.interval),
            errback=errback,
            dont_filter=True,
            meta={
                "depth": due.depth,
                REVISIT: {"hash": due.content_hash, "due": due.next_visit},
                "handle_httpstatus_list": [NOT_MODIFIED],
            },
        )

    def _failed(self, error: RecordsDatabaseError) -> None:
        stats = self._crawler.stats
        assert stats is not None
        stats.inc_value("revisit/feed_errors")
        if not self._failing:
            self._failing = True
            logger.error(
                "%(error)s; no revisits are queued until it answers (tried again "
                "every REVISIT_FEED_INTERVAL, further failures counted in "
                "revisit/feed_errors)",
                {"error": error},
                extra={"spider": self._crawler.spider},
            )

    def _answered(self) -> None:
        if self._failing:
            self._failing = False
            logger.info(
                "The URL library answers again: revisits are queued",
                extra={"spider": self._crawler.spider},
            )
