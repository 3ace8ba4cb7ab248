"""FrontierScheduler: Scrapy's scheduler interface over the Redis frontier.

Wiring only: what may enter comes from ``admission``, Redis work from ``store``
through ``pushbuffer`` (one round trip: pushes, acks, pop), the node's heartbeat,
seeds, control and outages from ``noderuntime``.

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

import logging
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from scrapy import Request, signals
from scrapy.core.scheduler import BaseScheduler
from scrapy.exceptions import DontCloseSpider

from crawler.context.crawl import CrawlContext
from crawler.context.outage import REDIS_ERRORS, is_outage
from crawler.context.startup import FailedScheduler, StartupFailure
from crawler.crawlstate.connection import RedisUnreachableError
from crawler.crawlstate.embedded import EmbeddedRedisError
from crawler.frontier.acks import missing_essentials
from crawler.frontier.admission import Admission
from crawler.frontier.duplicates import DuplicateLog
from crawler.frontier.frontierconfig import FrontierConfig
from crawler.frontier.node.runtime import NodeRuntime
from crawler.frontier.pushbuffer import PushBuffer
from crawler.frontier.store.roundtrip import PopOrder
from crawler.frontier.store.store import FrontierStore, SchemaMismatchError
from crawler.policy.order import deepest_level_allowed

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Spider
    from scrapy.crawler import Crawler

    from crawler.context.hostdelays import HostDelays

logger = logging.getLogger(__name__)

# How often a node that finds nothing to do re-reads every shard's summary: at first,
# then twice as long after each fruitless look, up to the most (idle nodes back off).
REFRESH_INTERVAL = 0.25
MAX_REFRESH_INTERVAL = 2.0


class FrontierScheduler(BaseScheduler):
    def __init__(
        self, crawler: Crawler, config: FrontierConfig, delays: HostDelays
    ) -> None:
        assert crawler.spider is not None
        assert crawler.stats is not None
        self._crawler = crawler
        self._spider: Spider = crawler.spider
        self._stats = crawler.stats
        self._config = config
        self._delays = delays
        self._duplicates = DuplicateLog(crawler)
        self._admission = Admission(
            crawler,
            crawler.spider,
            config,
            delays.run_settings,
            on_duplicate=self._duplicates.found,
        )
        self._outage = CrawlContext.of(crawler).outage
        self._runtime = NodeRuntime(crawler, config, delays.run_settings, self._outage)
        self._pushes = PushBuffer(
            crawler, self._admission, delays, self._runtime, self._duplicates
        )
        self._own = self._pushes.leases
        self._acks = self._pushes.acks
        self._queued_known = 0  # the crawl's queue size Redis last gave
        self._store: FrontierStore | None = None
        self._refreshed_at = 0.0
        self._refresh_every = REFRESH_INTERVAL
        self._failure: StartupFailure | None = None
        crawler.signals.connect(self._spider_idle, signal=signals.spider_idle)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self | FailedScheduler:  # type: ignore[override]
        assert crawler.spider is not None
        try:
            config = FrontierConfig.from_settings(crawler.settings, crawler.spider.name)
            if not getattr(crawler.spider, "reparses_from_page_store", False):
                config = replace(config, reparse_from_store=False)  # callbacks: once
            delays = CrawlContext.of(crawler).delays
        except ValueError as exc:
            return FailedScheduler(crawler, f"Bad setting: {exc}")
        return cls(crawler, config, delays)

    # --- lifecycle ---------------------------------------------------------------

    def open(self, spider: Spider) -> None:
        if problem := missing_essentials(self._crawler):
            self._failure = StartupFailure(self._crawler, problem)
            return
        now = time.time()
        try:
            self._store = self._pushes.store = self._runtime.open(now)
        except (RedisUnreachableError, EmbeddedRedisError, SchemaMismatchError) as exc:
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
        queued, leased = self._store.totals()
        logger.info(
            "Frontier %(prefix)r opened: %(queued)d queued, %(leased)d leased",
            {"prefix": self._config.prefix, "queued": queued, "leased": leased},
            extra={"spider": spider},
        )
        self._pushes.count_damage()  # what the start-up repair found
        self._runtime.start(self._pushes, self.enqueue_request)

    def close(self, reason: str) -> None:
        self._acks.stop()  # requests the engine is through with are acked, not requeued
        self._runtime.stop()
        self._pushes.stop()
        if self._store is None:
            return
        try:
            self._close_store(time.time())
        except REDIS_ERRORS as exc:
            if not is_outage(exc):
                raise
            self._pushes.closed_without_redis(exc, self._outage)
        finally:
            self._store.client.close()

    def _close_store(self, now: float) -> None:
        """Write what is pending, give back this node's leases and shards."""
        assert self._store is not None
        self._pushes.flush(now)
        self._admission.count_duplicates(0)  # the last ones found locally
        if leases := self._own.leases():
            released = self._store.requeue(now, leases)
            self._stats.inc_value("frontier/leases_released", released)
            self._own.clear()
        self._runtime.leave()

    # --- Scrapy's scheduler interface ----------------------------------------------

    def has_pending_requests(self) -> bool:
        """Whether any request is queued in the crawl, or in flight on another node
        (its links may follow); the requests this node handed to its engine are the
        engine's to wait for, as with Scrapy's own scheduler."""
        self._acks.sweep()  # a request the engine is through with is an ack to write
        if self._pushes or self._runtime.control.paused:
            return True
        if self._store is None:
            return False
        if self._store.summaries.has_work():
            return True
        now = time.time()
        if not self._runtime.redis_usable(now):
            return True  # Redis is away: the crawl is over only when it says so
        try:
            return not self._runtime.drained(len(self._own.leases()))
        except REDIS_ERRORS as exc:
            self._runtime.redis_failed(exc, now)
            return True

    def enqueue_request(self, request: Request) -> bool:
        """Whether *request* was queued. False for a request refused here (depth
        limit, no usable host, cannot be stored, a duplicate in the local seen
        cache) and, when the push buffer is written within this call (it is full,
        or *request* replaces a lease), for a duplicate Redis found; a duplicate
        Redis finds in a later write gets ``request_dropped`` then."""
        if self._store is None:
            return False
        replaced = self._own.replaced(request)
        pending = self._admission.admit(request)
        if pending is not None:
            self._pushes.requests.append(pending)
        refused = False
        if replaced is not None:
            refused = self._pushes.write(time.time(), [replaced], asking=request)
        elif len(self._pushes.requests) >= self._config.push_batch:
            refused = self._pushes.write(time.time(), asking=request)
        return pending is not None and not refused

    def __len__(self) -> int:
        """Requests queued in the whole crawl (held ones included), plus those this
        node has not written yet: one round trip; while Redis is away, the figure
        it last gave."""
        buffered = len(self._pushes.requests)
        if self._store is None:
            return buffered
        now = time.time()
        if self._runtime.redis_gate.ready(now) and not self._runtime.redis_gate.failing:
            try:
                self._queued_known, _leased = self._store.totals()
            except REDIS_ERRORS as exc:
                self._runtime.redis_failed(exc, now)
        return self._queued_known + buffered

    def next_request(self) -> Request | None:
        if self._store is None or self._runtime.control.paused:
            return None
        self._acks.sweep()  # acks of requests done since the last ask ride on this pop
        now = time.time()
        if not self._runtime.redis_usable(now):
            self._runtime.wake_at(self._runtime.redis_gate.retry_at, now)
            return None
        try:
            return self._next_request(now)
        except REDIS_ERRORS as exc:
            self._runtime.redis_failed(exc, now)
            return None

    def _next_request(self, now: float) -> Request | None:
        assert self._store is not None
        if due := self._store.summaries.due_shards(now):
            self._store.promote(due, now)
        request = self._pop(now)
        if request is None and self._refresh(now):
            request = self._pop(now)
            if request is None:  # nothing anywhere yet: look less often
                self._refresh_every = min(2 * self._refresh_every, MAX_REFRESH_INTERVAL)
        if request is None:
            self._schedule_wake(now)
        else:
            self._refresh_every = REFRESH_INTERVAL
        return request

    def _pop(self, now: float) -> Request | None:
        """Write what is pending and lease the best request the BFS barrier allows,
        in one round trip while the shards' summaries are right."""
        # Each round either writes what was pending or corrects a shard's summary.
        for _attempt in range(self._config.shards + 2):
            order = self._pop_order()
            if order is None and not self._pushes:
                return None
            popped = self._pushes.flush(now, pop=order)
            if popped is not None and (
                request := self._pushes.leased_request(*popped, now)
            ):
                return request
        return None

    def _pop_order(self) -> PopOrder | None:
        """Where the next request comes from: the best shard under the barrier."""
        assert self._store is not None
        membership = self._runtime.membership
        assert membership is not None
        summaries = self._store.summaries
        deepest = deepest_level_allowed(
            summaries.lowest_level(), self._config.bfs_lookahead
        )
        shard = summaries.best_shard(membership.owned, deepest)
        if shard is None:
            return None
        return PopOrder(shard, membership.node_id, self._delays.shortest(), deepest)

    def _refresh(self, now: float) -> bool:
        """Re-read every shard's summary, at most every ``_refresh_every`` s; whether
        it did. Other nodes change shards too: they may have queued work, or finished
        the shallow work the BFS barrier waits for."""
        assert self._store is not None
        if now < self._refreshed_at + self._refresh_every:
            return False
        self._refreshed_at = now
        self._store.promote(range(self._config.shards), now)
        return True

    def _schedule_wake(self, now: float) -> None:
        """Wake the engine when the first waiting host becomes ready, or, while
        other nodes still hold work, when it is time to look again."""
        assert self._store is not None
        wake = self._store.summaries.next_wake()
        if wake is None:
            if self._runtime.drained(len(self._own.leases())):
                return
            wake = self._refreshed_at + self._refresh_every
        self._runtime.wake_at(wake, now)

    def _spider_idle(self) -> None:
        if not self._config.close_when_drained:
            raise DontCloseSpider
