"""The frontier once Redis is reached: every collaborator built whole, in one place.

``OpenFrontier.join`` reaches Redis and builds the round trip's owner
(``exchange``), the node's heartbeat (``node.runtime``) and their shared way to
Redis (``node.redislink``) at once, so none has a field filled in later. The
scheduler holds one of these once open, none before (or after a failed start).
Here is also where the next request comes from: the best shard under the BFS
barrier, and when to look again if none has work.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from crawler.context.crawl import CrawlContext
from crawler.context.outage import REDIS_ERRORS, is_outage
from crawler.crawlstate.running import unregister
from crawler.frontier.exchange import Exchange
from crawler.frontier.node.progress import Progress
from crawler.frontier.node.redislink import RedisLink
from crawler.frontier.node.runtime import Joined, NodeRuntime, join
from crawler.frontier.node.startreport import register_running, start_facts
from crawler.frontier.servergates import GateReturns, ServerGates
from crawler.frontier.store.roundtrip import PopOrder, ms
from crawler.policy.crawlsummary import start_lines
from crawler.policy.order import deepest_level_allowed

if TYPE_CHECKING:
    from pathlib import Path
    from typing import Self

    from scrapy import Request, Spider
    from scrapy.crawler import Crawler

    from crawler.context.hostdelays import HostDelays
    from crawler.context.outage import RedisOutage
    from crawler.frontier.frontierconfig import FrontierConfig

logger = logging.getLogger(__name__)

# How often a node that finds nothing to do re-reads every shard's summary: at first,
# then twice as long after each fruitless look, up to the most (idle nodes back off).
REFRESH_INTERVAL = 0.25
MAX_REFRESH_INTERVAL = 2.0


class OpenFrontier:
    """The scheduler's work while the crawl is open on this node."""

    def __init__(
        self,
        crawler: Crawler,
        config: FrontierConfig,
        delays: HostDelays,
        outage: RedisOutage,
        joined: Joined,
    ) -> None:
        self._crawler = crawler
        self._config = config
        self._delays = delays
        self._outage = outage
        self._store = joined.store
        self._shards = joined.store.shards
        self._joined = joined
        self._registered: Path | None = None  # this crawl's entry, running
        self._membership = joined.membership
        progress = Progress(crawler, config.log_interval)
        gate = outage.gate("the scheduler")
        # After an outage, the heartbeat runs at once: _caught_up calls it.
        self._link = RedisLink(crawler, gate, self._shards.client, self._caught_up)
        self._exchange = Exchange(
            crawler,
            config,
            delays=delays,
            store=self._store,
            membership=self._membership,
            link=self._link,
            progress=progress,
            link_credits=CrawlContext.of(crawler).link_credits,
            gate_returns=(
                None
                if config.politeness_key == "host"
                else GateReturns(
                    ServerGates(self._shards.crawl_keys), self._shards.client
                )
            ),
        )
        self._runtime = NodeRuntime(
            crawler,
            config,
            joined=joined,
            link=self._link,
            progress=progress,
            work=self._exchange,
            enqueue=self.enqueue,
            enqueue_urls=self._exchange.enqueue_plain_seeds,
        )
        self._queued_known = 0  # the crawl's queue size Redis last gave
        self._refreshed_at = 0.0
        self._refresh_every = REFRESH_INTERVAL

    @classmethod
    def join(
        cls,
        crawler: Crawler,
        config: FrontierConfig,
        delays: HostDelays,
        outage: RedisOutage,
    ) -> Self:
        """Reach Redis, join the crawl and build everything that works on it
        (raises as ``node.runtime.join`` does)."""
        return cls(crawler, config, delays, outage, join(crawler, config, time.time()))

    def _caught_up(self) -> None:
        self._runtime.maintain()

    def start(self, spider: Spider) -> None:
        """Say what this crawl is, register it in its directory, count what the
        start-up repair found, and start the heartbeat."""
        context = CrawlContext.of(self._crawler)
        facts = start_facts(
            self._crawler.settings,
            self._delays.run_settings.current,
            prefix=self._config.prefix,
            redis=context.redis,
            crawl=self._joined.crawl,
        )
        logger.info(
            "Frontier %(prefix)r opened:\n  %(lines)s",
            {"prefix": self._config.prefix, "lines": "\n  ".join(start_lines(facts))},
            extra={"spider": spider},
        )
        self._registered = register_running(
            self._crawler.settings, self._config.prefix, context.redis.url, time.time()
        )
        self._exchange.count_damage()
        self._runtime.start()

    def close(self) -> None:
        """Write what is pending, give back this node's leases and shards; while
        Redis is away, leave them to expire (nothing is lost)."""
        self._exchange.stop()  # requests the engine is through with are acked
        self._runtime.stop()
        self._link.stop()
        try:
            self._exchange.close(time.time())
            self._runtime.leave()
        except REDIS_ERRORS as exc:
            if not is_outage(exc):
                raise
            self._closed_without_redis(exc)
        finally:
            self._shards.client.close()
            if self._registered is not None:
                unregister(self._registered)

    def _closed_without_redis(self, error: Exception) -> None:
        """Closing while Redis is away loses nothing: the leases of the pages whose
        links are unwritten are not acknowledged either, so they expire and those
        pages are fetched again (by another node, or the next run)."""
        self._outage.failed(error, "the scheduler")
        logger.warning(
            "Closed while Redis is unreachable: %(links)d requests unwritten; the "
            "%(leases)d pages in flight or not yet acknowledged will be fetched "
            "again when their leases expire",
            {
                "links": self._exchange.buffered,
                "leases": len(self._exchange.leases_in_hand()),
            },
            extra={"spider": self._crawler.spider},
        )

    # --- Scrapy's scheduler interface, open ------------------------------------------

    def has_pending_requests(self) -> bool:
        """See ``FrontierScheduler.has_pending_requests``."""
        self._exchange.sweep()  # a request the engine is through with: an ack to write
        if self._exchange or self._runtime.control.paused:
            return True
        if self._runtime.draining:
            return True  # the heartbeat closes it, once its own requests are done
        if self._shards.summaries.has_work():
            return True
        now = time.time()
        if not self._link.usable(now):
            return True  # Redis is away: the crawl is over only when it says so
        try:
            return not self._runtime.drained(self._exchange.own_leases())
        except REDIS_ERRORS as exc:
            self._link.failed(exc, now)
            return True

    def hosts_due(self, within: float, limit: int) -> list[str]:
        """See ``FrontierScheduler.hosts_due``."""
        now = time.time()
        if not self._link.usable(now):
            return []
        pipe = self._shards.client.pipeline(transaction=False)
        for shard in sorted(self._membership.owned):
            keys = self._shards.keys[shard]
            pipe.zrange(keys.ready, 0, limit - 1)
            pipe.zrangebyscore(keys.waiting, "-inf", ms(now + within), 0, limit)
        try:
            answers = pipe.execute()
        except REDIS_ERRORS as exc:
            self._link.failed(exc, now)
            return []
        hosts = dict.fromkeys(
            host.decode("utf-8", "replace") for found in answers for host in found
        )
        return list(hosts)[:limit]

    def enqueue(self, request: Request) -> bool:
        """See ``FrontierScheduler.enqueue_request``."""
        return self._exchange.enqueue(request)

    def __len__(self) -> int:
        """See ``FrontierScheduler.__len__``."""
        now = time.time()
        if self._link.answering(now):
            try:
                self._queued_known, _leased = self._shards.totals()
            except REDIS_ERRORS as exc:
                self._link.failed(exc, now)
        return self._queued_known + self._exchange.buffered

    def next_request(self) -> Request | None:
        """See ``FrontierScheduler.next_request``."""
        if self._runtime.control.paused or self._runtime.draining:
            self._exchange.sweep()  # acks of requests done still go out
            return None
        self._exchange.sweep()  # acks of requests done since the last ask ride along
        now = time.time()
        if not self._link.usable(now):
            self._link.wake_at(self._link.retry_at, now)
            return None
        try:
            return self._next_request(now)
        except REDIS_ERRORS as exc:
            self._link.failed(exc, now)
            return None

    # --- where the next request comes from -------------------------------------------

    def _next_request(self, now: float) -> Request | None:
        if due := self._shards.summaries.due_shards(now):
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
            if order is None and not self._exchange:
                return None
            if (request := self._exchange.pop(now, order)) is not None:
                return request
        return None

    def _pop_order(self) -> PopOrder | None:
        """Where the next request comes from: the best shard under the barrier."""
        summaries = self._shards.summaries
        deepest = deepest_level_allowed(
            summaries.lowest_level(), self._config.bfs_lookahead
        )
        shard = summaries.best_shard(self._membership.owned, deepest)
        if shard is None:
            return None
        node_id = self._membership.node_id
        return PopOrder(shard, node_id, self._delays.shortest(), deepest)

    def _refresh(self, now: float) -> bool:
        """Re-read every shard's summary, at most every ``_refresh_every`` s; whether
        it did. Other nodes change shards too: they may have queued work, or finished
        the shallow work the BFS barrier waits for."""
        if now < self._refreshed_at + self._refresh_every:
            return False
        self._refreshed_at = now
        self._store.promote(range(self._config.shards), now)
        return True

    def _schedule_wake(self, now: float) -> None:
        """Wake the engine when the first waiting host becomes ready, or, while
        other nodes still hold work, when it is time to look again."""
        wake = self._shards.summaries.next_wake()
        if wake is None:
            if self._runtime.drained(self._exchange.own_leases()):
                return
            wake = self._refreshed_at + self._refresh_every
        self._link.wake_at(wake, now)
