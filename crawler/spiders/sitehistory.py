"""SiteHistoryMiddleware: what each host's pages show, for its crawl strategy.

Per parsed page (a response under 300 the spider handled, once: a page reparsed
from the page store was counted when fetched) it counts, per host: the page, its
link depth, the links on it and those that leave the site. The links are those the
spider says it read (``meta[SITE_LINKS]``: the bfs spider reads every link of a page
and yields only new ones in scope), else the requests it yields. Counts wait in
memory and go to Redis every ``FLUSH_INTERVAL`` seconds in one pipeline that also
reads each host's crawl-wide counts back (``crawler.crawlstate.sitecounters``):
never a round trip per page. What comes back tells the crawl's ``SiteStrategies``
(``auto`` hosts classified as their evidence grows) and, with page records on, is
saved to the records database's ``sites`` table every ``SAVE_INTERVAL`` seconds
and at the end (``crawler.records.sites``), whose history the next crawl starts
from. The strategy in force for each host, with why, is written beside its counts
for ``scrapy frontier hosts`` and the dashboard. A host's counts expire
``TRAFFIC_IDLE_TTL`` after its last page, as its traffic counters do.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

import redis
import redis.asyncio
from redis.exceptions import RedisClusterException
from scrapy import Request, signals
from scrapy.utils.asyncio import create_looping_call

from crawler.context.components import records_on
from crawler.context.crawl import CrawlContext
from crawler.context.database import RecordsDatabaseError
from crawler.context.enginehooks import engine_closing
from crawler.context.logonce import OnceLogger
from crawler.context.outage import is_outage
from crawler.context.startup import StartupFailure, failed_at_startup
from crawler.crawlstate.embedded import EmbeddedRedisError
from crawler.crawlstate.keys import CrawlKeys
from crawler.crawlstate.readers import encoded, mapping
from crawler.crawlstate.sitecounters import (
    LEAVING,
    LINKS,
    PAGES,
    STRATEGY,
    depth_field,
    evidence_of,
)
from crawler.meta import REPARSED, SITE_LINKS
from crawler.policy.hosts import BadURLError, host_of
from crawler.policy.siteclass import leaving_links
from crawler.policy.trafficconfig import TrafficConfig
from crawler.spiders.sitesaves import SiteSaver, crawl_name

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.utils.asyncio import AsyncioLoopingCall
    from twisted.internet.task import LoopingCall

    from crawler.context.sitestrategies import SiteStrategies
    from crawler.policy.siteclass import SiteEvidence

logger = logging.getLogger(__name__)

# Seconds between two writes of the counts to Redis (and reads of the totals).
FLUSH_INTERVAL = 2.0
# Statuses from this one on are not pages of the site's content.
FIRST_NOT_A_PAGE = 300
# Errors a flush may meet: its counts are kept for the next one.
_UNREACHABLE = (
    redis.ConnectionError,
    redis.TimeoutError,
    RedisClusterException,  # a cluster none of whose nodes answers
    OSError,
    EmbeddedRedisError,
)


class SiteHistoryMiddleware:
    """Spider middleware: each host's pages, links and depths, to Redis in batches."""

    def __init__(
        self,
        crawler: Crawler,
        keys: CrawlKeys,
        sites: SiteStrategies,
        saver: SiteSaver | None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        assert crawler.stats is not None
        self._crawler = crawler
        self._stats = crawler.stats
        self._keys = keys
        self._sites = sites
        # Checked by from_crawler: a bad value has stopped the crawl.
        self._idle_ttl = TrafficConfig.from_settings(crawler.settings).idle_ttl
        self._saver = saver  # None: page records off, nothing carried over
        self._clock = clock
        self._buffer: dict[str, Counter[str]] = {}
        self._written: dict[str, str] = {}  # host -> strategy text in Redis
        self._client: redis.asyncio.Redis | None = None
        self._loop: AsyncioLoopingCall | LoopingCall | None = None
        self._flushing: asyncio.Task[None] | None = None
        self._once = OnceLogger(logger, crawler)
        self._gate = CrawlContext.of(crawler).outage.gate("the site histories")
        crawler.signals.connect(self._spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self | StartupFailure:
        try:
            sites = CrawlContext.of(crawler).sites
            TrafficConfig.from_settings(crawler.settings)
        except ValueError as exc:
            return StartupFailure(crawler, f"Bad setting: {exc}")
        keys = CrawlKeys.of(crawler.settings, crawler.spidercls.name)
        saver = None
        if records_on(crawler.settings):
            url = crawler.settings["RECORDS_DATABASE_URL"]
            # A URL of neither kind: the records pipeline says so, and stops.
            with contextlib.suppress(RecordsDatabaseError):
                saver = SiteSaver(crawler, url, sites)
        return cls(crawler, keys, sites, saver)

    # --- counting -------------------------------------------------------------------

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        """Pass the spider's output through; count the page once it is done (the
        links the spider read, told once its callback ran, else those it yielded)."""
        yielded: list[str] = []
        async for output in result:
            if isinstance(output, Request):
                yielded.append(output.url)
            yield output
        told = response.meta.get(SITE_LINKS)
        if isinstance(told, list | tuple) and len(told) == 2:
            links, leaving = (n if isinstance(n, int) else 0 for n in told)
        else:
            links, leaving = len(yielded), leaving_links(response.url, yielded)
        self.count(response, links, leaving)

    def count(self, response: Response, links: int, leaving: int) -> None:
        """Count *response* as a page of its host with *links*, *leaving* of them."""
        if response.status >= FIRST_NOT_A_PAGE or response.meta.get(REPARSED):
            return
        try:
            host = host_of(response.url)
        except BadURLError:
            return
        depth = response.meta.get("depth", 0)
        counts = self._buffer.setdefault(host, Counter())
        counts[PAGES] += 1
        counts[LINKS] += max(links, 0)
        counts[LEAVING] += min(max(leaving, 0), max(links, 0))
        counts[depth_field(depth if isinstance(depth, int) else 0)] += 1

    # --- writing --------------------------------------------------------------------

    async def _spider_opened(self) -> None:
        if failed_at_startup(self._crawler):
            return
        if self._saver is not None:
            crawl = crawl_name(self._keys, await self._identity())
            await self._saver.open(crawl)
        self._loop = create_looping_call(self._tick)
        self._loop.start(FLUSH_INTERVAL, now=False)

    async def _identity(self) -> bytes | None:
        """The crawl's identity as stored (None if Redis does not answer)."""
        try:
            raw = await self._redis().get(self._keys.identity)
        except _UNREACHABLE as exc:  # the crawl is then named by its prefix alone
            self._failed(exc)
            return None
        return raw if isinstance(raw, bytes) else None

    def _tick(self) -> None:
        """Start a flush unless one runs, nothing is counted or the spider closes."""
        if self._flushing is not None or engine_closing(self._crawler):
            return
        if self._saver is not None:
            self._saver.tick(self._clock())
        if not self._buffer or not self._gate.ready(self._clock()):
            return
        self._flushing = asyncio.ensure_future(self.flush())
        self._flushing.add_done_callback(self._flushed)

    def _flushed(self, task: asyncio.Task[None]) -> None:
        self._flushing = None
        if not task.cancelled() and (error := task.exception()) is not None:
            self._failed(error)

    async def flush(self) -> None:
        """Add the counts to Redis and read each host's totals back (one round
        trip); if Redis cannot be reached they are kept for the next flush."""
        taken, self._buffer = self._buffer, {}
        if not taken:
            return
        pipe = self._redis().pipeline(transaction=False)
        for host, counts in taken.items():
            key = encoded(self._keys.site(host))
            for field, count in counts.items():
                pipe.hincrby(key, field, count)
            pipe.expire(key, self._idle_ttl)
            pipe.hgetall(key)
        try:
            replies = await pipe.execute(raise_on_error=False)
        except _UNREACHABLE as exc:
            self._put_back(taken)
            self._failed(exc)
            return
        self._gate.succeeded()
        await self._learn(taken, replies)

    async def _learn(self, taken: dict[str, Counter[str]], replies: list[Any]) -> None:
        """Tell the crawl's strategies each host's totals; write the strategies
        that changed (a second trip, only then)."""
        position = 0
        for host, counts in taken.items():
            position += len(counts) + 2
            fields = mapping(replies[position - 1])
            evidence = evidence_of(fields)
            if STRATEGY.encode() not in fields:  # new, or expired while idle
                self._written.pop(host, None)
            self._sites.learn(host, evidence)
            self._saved_later(host, evidence)
        changed = {
            host: text
            for host in taken
            if (text := self._sites.decision_of(host).text()) != self._written.get(host)
        }
        if changed:
            pipe = self._redis().pipeline(transaction=False)
            for host, text in changed.items():
                pipe.hset(encoded(self._keys.site(host)), STRATEGY, text)
            await pipe.execute(raise_on_error=False)
            self._written.update(changed)

    def _saved_later(self, host: str, evidence: SiteEvidence) -> None:
        if self._saver is not None:
            self._saver.note(host, evidence)

    def _put_back(self, taken: dict[str, Counter[str]]) -> None:
        for host, counts in taken.items():
            self._buffer.setdefault(host, Counter()).update(counts)

    def _redis(self) -> redis.asyncio.Redis:
        """The client, made on first use (the crawl's Redis may be a private server
        the scheduler starts when it opens)."""
        if self._client is None:
            self._client = CrawlContext.of(self._crawler).redis.async_client()
        return self._client

    def _failed(self, error: BaseException) -> None:
        """Count a flush that failed; an outage is the crawl's to report (one line
        for every component), anything else is logged here once."""
        self._stats.inc_value("sites/flush_errors")
        if is_outage(error):
            self._gate.failed(error, self._clock())
            return
        self._once.once(
            "failure",
            "Could not write site histories to Redis (%(error)s); further failures "
            "are only counted in sites/flush_errors",
            {"error": error},
        )

    async def _spider_closed(self) -> None:
        """The last flush and save (unless the crawl was deleted), then close."""
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        if self._flushing is not None:
            await asyncio.wait([self._flushing])
        try:
            if self._buffer and await self._crawl_exists():
                await self.flush()
            if self._saver is not None:
                await self._saver.close()
        finally:
            if self._client is not None:
                await self._client.aclose()
                self._client = None

    async def _crawl_exists(self) -> bool:
        """Whether the crawl's keys are there (a crawl not persisted is deleted as
        it closes: its counts would come back alone)."""
        try:
            return bool(await self._redis().exists(self._keys.meta))
        except _UNREACHABLE as exc:  # Redis gone: nothing more to write
            self._failed(exc)
            return False


def page_links(page_url: str, urls: list[str]) -> list[int]:
    """``meta[SITE_LINKS]`` for a page at *page_url* whose links are *urls*."""
    return [len(urls), leaving_links(page_url, urls)]
