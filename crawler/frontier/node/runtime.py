"""The node's runtime around the scheduler: opening the crawl, its heartbeat and
maintenance, seeds pushed to Redis, run-time control, progress, the end of the
crawl, and riding out Redis outages.

``FrontierScheduler`` keeps Scrapy's interface and the push/ack/pop round trip; it
asks this runtime whether Redis may be used, whether the crawl is over, and to wake
the engine later. The runtime asks the scheduler (``FrontierWork``) for the leases
it still holds and to enqueue the seeds it reads.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Protocol

from scrapy.utils.asyncio import call_later, create_looping_call

from crawler.context.crawl import CrawlContext
from crawler.context.enginehooks import wake_engine
from crawler.context.hostdelays import machine_zone
from crawler.context.outage import REDIS_ERRORS, is_outage, use_reactor_retry
from crawler.crawlstate.connection import check_reachable
from crawler.crawlstate.damage import retyped
from crawler.frontier.node.drain import DrainWatch
from crawler.frontier.node.membership import Membership
from crawler.frontier.node.progress import Progress
from crawler.frontier.node.runcontrol import ControlFollower
from crawler.frontier.node.seedintake import SeedIntake
from crawler.frontier.store.store import FrontierStore

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.utils.asyncio import AsyncioLoopingCall, CallLaterResult
    from twisted.internet.task import LoopingCall

    from crawler.context.outage import RedisGate, RedisOutage
    from crawler.context.runsettings import RunSettingsHolder
    from crawler.frontier.frontierconfig import FrontierConfig
    from crawler.frontier.store.roundtrip import Lease

logger = logging.getLogger(__name__)


class FrontierWork(Protocol):
    """What the runtime asks of the scheduler's writes (``pushbuffer``)."""

    def leases_in_hand(self) -> list[Lease]:
        """Leases this node still holds, acknowledged or not."""

    def write_pending(self, now: float) -> None:
        """Push what is buffered now (raises if Redis fails)."""

    def count_damage(self) -> None: ...


class NodeRuntime:
    def __init__(
        self,
        crawler: Crawler,
        config: FrontierConfig,
        run: RunSettingsHolder,
        outage: RedisOutage,
    ) -> None:
        assert crawler.stats is not None
        self._crawler = crawler
        self._stats = crawler.stats
        self._config = config
        self._run = run  # replaced whole when `scrapy frontier set` changes it
        self._outage = outage
        self.redis_gate: RedisGate = outage.gate("the scheduler")
        self.progress = Progress(crawler, config.log_interval)
        self.control = ControlFollower(crawler.settings, machine_zone())
        self.store: FrontierStore | None = None
        self.membership: Membership | None = None
        self._drain: DrainWatch | None = None
        self._work: FrontierWork | None = None
        self._seeds = SeedIntake(crawler, lambda request: False)  # until started
        self._maintenance: AsyncioLoopingCall | LoopingCall | None = None
        self._wake: CallLaterResult | None = None
        self._catch_up: CallLaterResult | None = None  # a heartbeat after an outage
        self._maintenance_failed = False

    # --- opening and closing -----------------------------------------------------------

    def open(self, now: float) -> FrontierStore:
        """Connect, prepare the crawl, join it and take back this node's leases."""
        client = CrawlContext.of(self._crawler).redis.sync_client()
        use_reactor_retry(client)  # a longer wait is the gate's, off the reactor
        try:
            check_reachable(client, CrawlContext.of(self._crawler).redis.url)
            times = CrawlContext.of(self._crawler).round_trip_times
            store = FrontierStore(client, self._config, times, self._run)
            store.prepare(now)
            self.membership = Membership(
                client, store.crawl_keys, self._config, on_damage=store.damaged
            )
            self.membership.beat(now, pages=0)
            resumed = self.membership.resume(store, now)  # before the first pop
            self._stats.inc_value("frontier/leases_resumed", resumed)
            self._drain = DrainWatch(store, self.membership, opened_at=now)
        except Exception:
            client.close()
            raise
        self.store = store
        return store

    def start(self, work: FrontierWork, enqueue: Callable[[Request], bool]) -> None:
        """Start the heartbeat, which serves *work* and *enqueue*s seeds."""
        self._work = work
        self._seeds = SeedIntake(self._crawler, enqueue)
        self._maintenance = create_looping_call(self.maintain)
        self._maintenance.start(self._config.maintenance_interval, now=True)

    def stop(self) -> None:
        """No more heartbeats or wake-ups."""
        if self._maintenance is not None and self._maintenance.running:
            self._maintenance.stop()
        for timer in (self._wake, self._catch_up):
            if timer is not None:
                timer.cancel()

    def leave(self) -> None:
        """Give back this node's shards; with FRONTIER_PERSIST=False, delete the
        crawl unless other nodes still work."""
        assert self.store is not None
        if self.membership is not None:
            self.membership.leave()
            # The pages done since the last heartbeat count in the crawl's pace.
            self.progress.record_pace(self.store, self.membership.node_id, time.time())
        if self._config.persist:
            return
        settled = self.store.settled_totals()  # None: other nodes are at work
        if settled != (0, 0):
            queued, leased = settled or self.store.totals()
            logger.warning(
                "Kept frontier %(prefix)r despite FRONTIER_PERSIST=False: "
                "%(queued)d requests queued, %(leased)d in flight on other nodes",
                {"prefix": self._config.prefix, "queued": queued, "leased": leased},
                extra={"spider": self._crawler.spider},
            )
            return
        self.store.delete_all()

    # --- the heartbeat -----------------------------------------------------------------

    def maintain(self) -> None:
        """One heartbeat. Nothing it meets stops the loop (a stopped heartbeat would
        leave this node's shards without an owner): Redis away is waited out, any
        other error is logged and the next round runs as usual."""
        now = time.time()
        try:
            self._maintenance_round(now)
        except REDIS_ERRORS as exc:
            if is_outage(exc):
                self.redis_failed(exc, now)
                return
            self._log_maintenance_error(exc)
        except Exception as exc:  # noqa: BLE001 (logged with its traceback, then counted)
            self._log_maintenance_error(exc)
        else:
            self.redis_answered(maintained=True)

    def _log_maintenance_error(self, error: Exception) -> None:
        self._stats.inc_value("frontier/maintenance_errors")
        if not self._maintenance_failed:
            self._maintenance_failed = True
            logger.error(
                "A maintenance round failed; the next runs as usual (further "
                "failures are counted in frontier/maintenance_errors)",
                exc_info=error,
                extra={"spider": self._crawler.spider},
            )

    def _maintenance_round(self, now: float) -> None:
        assert self.store is not None
        assert self.membership is not None
        assert self._work is not None
        owned = self.membership.owned
        pages = self._stats.get_value("response_received_count", 0)
        if self.membership.beat(now, pages) - owned:
            self.wake_engine()  # shards gained: there may be work in them
        # Leases done but not yet acknowledged (Redis was away) are still this node's.
        self.store.renew(self._work.leases_in_hand(), now)
        self._follow_control()
        if recovered := self.store.requeue(now):
            self._stats.inc_value("frontier/leases_recovered", recovered)
            logger.info(
                "Put %(count)d expired leases back in their queues",
                {"count": recovered},
                extra={"spider": self._crawler.spider},
            )
            self.wake_engine()
        self._take_seeds()
        if stranded := self.store.repair_stuck(self.membership.owned, now):
            self._stats.inc_value("frontier/stranded_hosts", stranded)
            self.wake_engine()  # stranded hosts are ready again
        self._work.count_damage()
        self.progress.maybe_log(self.store, now)
        self.progress.record_pace(self.store, self.membership.node_id, now)

    def _follow_control(self) -> None:
        """Apply `scrapy frontier pause|resume|set`, read once a heartbeat."""
        assert self.store is not None
        store = self.store
        key = store.crawl_keys.control
        fields = retyped(
            store.client, key, "hash", lambda: store.client.hgetall(key), store.damaged
        )
        resumed, configs = self.control.follow(fields)  # type: ignore[arg-type]
        if resumed:
            self.wake_engine()
        if configs is not None:
            self._run.replace(configs)

    def _take_seeds(self) -> None:
        """Enqueue what any client pushed to the crawl's seed list in Redis."""
        assert self.store is not None
        assert self._work is not None
        if self._seeds.take(self.store):
            self._work.write_pending(time.time())
            self.wake_engine()

    # --- the end of the crawl ----------------------------------------------------------

    def drained(self, own_leases: int) -> bool:
        """Whether nothing is queued, nor leased but for this node's *own_leases*;
        before it says so, every shard is scanned once for hosts that damaged
        state left out of the ready and waiting sets."""
        assert self._drain is not None
        assert self.store is not None
        now = time.time()
        if not self._drain.drained(now, own_leases):
            return False
        if stranded := self.store.rescue(now):
            self._stats.inc_value("frontier/stranded_hosts", stranded)
            if self._work is not None:
                self._work.count_damage()
            self._drain.forget()
            self.wake_engine()
            return False
        return True

    # --- waking the engine; Redis away and back ----------------------------------------

    def wake_at(self, wake: float, now: float) -> None:
        """Wake the engine at *wake* (epoch seconds), replacing any earlier plan."""
        if self._wake is not None:
            self._wake.cancel()
        self._wake = call_later(max(0.0, wake - now), self.wake_engine)

    def wake_engine(self) -> None:
        wake_engine(self._crawler)

    def redis_usable(self, now: float) -> bool:
        """Whether to go to Redis at *now*: yes while it answers; after a failure,
        once the gate's wait is over and Redis answers a PING. (A call that found
        nothing to send would prove nothing, and end no outage.)"""
        if not self.redis_gate.ready(now):
            return False
        if not self.redis_gate.failing:
            return True
        assert self.store is not None
        try:
            self.store.client.ping()
        except REDIS_ERRORS as exc:
            self.redis_failed(exc, now)
            return False
        self.redis_answered()
        return True

    def redis_failed(self, error: Exception, now: float) -> None:
        """Wait out *error* if it says Redis is away (else raise it): no request
        until the gate's delay is over, then the engine is woken to try again."""
        if not is_outage(error):
            raise error
        self.wake_at(self.redis_gate.failed(error, now), now)

    def redis_answered(self, *, maintained: bool = False) -> None:
        """Redis answered a round trip: after an outage, the heartbeat runs at once
        (unless it just did), so this node re-claims its shards and requeues
        expired leases."""
        if self.redis_gate.succeeded() and not maintained:
            self._catch_up = call_later(0, self.maintain)
