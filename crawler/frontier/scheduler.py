"""FrontierScheduler: Scrapy's scheduler interface over the Redis frontier.

Wiring only: what may enter comes from ``admission``, decisions from
``crawler.policy``, Redis work from ``store``. Admitted requests are buffered and
pushed in one round trip when the buffer fills, when the page that produced them is
done (before its lease is released), or when the engine asks for work.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from scrapy import Request, signals
from scrapy.core.scheduler import BaseScheduler
from scrapy.exceptions import DontCloseSpider
from scrapy.utils.asyncio import call_later, create_looping_call

from crawler.crawlstate.connection import (
    RedisUnreachableError,
    check_reachable,
    redis_url,
    sync_client,
)
from crawler.crawlstate.embedded import EmbeddedRedisError
from crawler.frontier import codec
from crawler.frontier.ackgate import AckGate
from crawler.frontier.acks import lease_done
from crawler.frontier.admission import Admission
from crawler.frontier.damage import retyped
from crawler.frontier.drain import DrainWatch
from crawler.frontier.frontierconfig import FrontierConfig
from crawler.frontier.hostdelays import HostDelays, machine_zone
from crawler.frontier.leases import Held, HeldLeases
from crawler.frontier.nodes import Membership
from crawler.frontier.outage import (
    REDIS_ERRORS,
    RedisOutage,
    is_outage,
    use_reactor_retry,
)
from crawler.frontier.progress import Progress
from crawler.frontier.runcontrol import ControlFollower
from crawler.frontier.store import (
    Ack,
    Flushed,
    FrontierStore,
    Lease,
    Pending,
    PopOrder,
    SchemaMismatchError,
)
from crawler.meta import FATE, NODE, REPARSE, REPARSED, REVIVE
from crawler.policy.fates import FAILED_FATES, UNTOUCHED_FATES
from crawler.policy.order import deepest_level_allowed
from crawler.policy.scope import parse_seed
from crawler.startup import FailedScheduler, StartupFailure

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Self

    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.utils.asyncio import AsyncioLoopingCall, CallLaterResult
    from twisted.internet.task import LoopingCall

logger = logging.getLogger(__name__)

# Seeds taken from the crawl's Redis seed list per maintenance round.
SEEDS_PER_ROUND = 1000
# Longest an acknowledgement waits for a pop to carry it to Redis.
ACK_DELAY = 0.01
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
        self._admission = Admission(crawler, crawler.spider, config)
        self._held = HeldLeases()
        self._acks = AckGate(crawler, self._lease_done)
        self._progress = Progress(crawler, config.log_interval)
        self._store: FrontierStore | None = None
        self._membership: Membership | None = None
        self._buffer: list[Pending] = []
        self._done: list[Held] = []
        self._flush_timer: CallLaterResult | None = None
        self._maintenance: AsyncioLoopingCall | LoopingCall | None = None
        self._wake: CallLaterResult | None = None
        self._catch_up: CallLaterResult | None = None  # a heartbeat after an outage
        self._drain: DrainWatch | None = None
        self._refreshed_at = 0.0
        self._refresh_every = REFRESH_INTERVAL
        self._bad_entry_logged = False
        self._damage_counted = 0  # of the store's bad_entries, in the stats already
        self._failure: StartupFailure | None = None
        self._outage = RedisOutage.of(crawler)
        self._redis_gate = self._outage.gate("the scheduler")
        self._maintenance_failed = False
        self._control = ControlFollower(crawler.settings, machine_zone())
        crawler.signals.connect(self._lease_done, signal=lease_done)
        crawler.signals.connect(self._spider_idle, signal=signals.spider_idle)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self | FailedScheduler:  # type: ignore[override]
        assert crawler.spider is not None
        try:
            config = FrontierConfig.from_settings(crawler.settings, crawler.spider.name)
            delays = HostDelays.of(crawler)
        except ValueError as exc:
            return FailedScheduler(crawler, f"Bad setting: {exc}")
        return cls(crawler, config, delays)

    # --- lifecycle ---------------------------------------------------------------

    def open(self, spider: Spider) -> None:
        now = time.time()
        try:
            self._store = self._open_store(now)
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
        # The frontier owns the per-host delay; Scrapy's AutoThrottle sets the same
        # attribute. Left alone, DOWNLOAD_DELAY would be applied twice.
        self._crawler.engine.downloader._delay = 0.0
        queued, leased = self._store.totals()
        logger.info(
            "Frontier %(prefix)r opened: %(queued)d queued, %(leased)d leased",
            {"prefix": self._config.prefix, "queued": queued, "leased": leased},
            extra={"spider": spider},
        )
        self._count_damage()  # what the start-up repair found
        self._maintenance = create_looping_call(self._maintain)
        self._maintenance.start(self._config.maintenance_interval, now=True)

    def _open_store(self, now: float) -> FrontierStore:
        client = sync_client(self._crawler)
        use_reactor_retry(
            client
        )  # a longer wait is self._redis_gate's, off the reactor
        try:
            check_reachable(client, redis_url(self._crawler))
            store = FrontierStore(client, self._config)
            store.prepare(now)
            self._membership = Membership(
                client, store.crawl_keys, self._config, on_damage=store.damaged
            )
            self._membership.beat(now, pages=0)
            resumed = self._membership.resume(store, now)  # before the first pop
            self._stats.inc_value("frontier/leases_resumed", resumed)
            self._drain = DrainWatch(store, self._membership, opened_at=now)
        except Exception:
            client.close()
            raise
        return store

    def close(self, reason: str) -> None:
        self._acks.stop()  # requests the engine is through with are acked, not requeued
        if self._maintenance is not None and self._maintenance.running:
            self._maintenance.stop()
        for timer in (self._wake, self._flush_timer, self._catch_up):
            if timer is not None:
                timer.cancel()
        if self._store is None:
            return
        try:
            self._close_store(time.time())
        except REDIS_ERRORS as exc:
            if not is_outage(exc):
                raise
            self._closed_without_redis(exc)
        finally:
            self._store.client.close()

    def _close_store(self, now: float) -> None:
        """Write what is pending, give back this node's leases and shards."""
        assert self._store is not None
        self._flush(now)
        self._admission.count_duplicates(0)  # the last ones found locally
        if leases := self._held.leases():
            released = self._store.requeue(now, leases)
            self._stats.inc_value("frontier/leases_released", released)
            self._held.clear()
        if self._membership is not None:
            self._membership.leave()
        if not self._config.persist:
            self._forget_crawl()

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
                "links": len(self._buffer),
                "leases": len(self._held.leases()) + len(self._done),
            },
            extra={"spider": self._spider},
        )

    def _forget_crawl(self) -> None:
        """FRONTIER_PERSIST=False: delete the crawl, unless other nodes still work."""
        assert self._store is not None
        queued, leased = self._store.totals()
        if queued > 0 or leased > 0:
            logger.warning(
                "Kept frontier %(prefix)r despite FRONTIER_PERSIST=False: "
                "%(queued)d requests queued, %(leased)d in flight on other nodes",
                {"prefix": self._config.prefix, "queued": queued, "leased": leased},
                extra={"spider": self._spider},
            )
            return
        self._store.delete_all()

    # --- Scrapy's scheduler interface ----------------------------------------------

    def has_pending_requests(self) -> bool:
        if self._buffer or self._done or self._control.paused:
            return True
        if self._store is None:
            return False
        if self._store.has_work():
            return True
        now = time.time()
        if not self._redis_usable(now):
            return True  # Redis is away: the crawl is over only when it says so
        try:
            return not self._drained()
        except REDIS_ERRORS as exc:
            self._redis_failed(exc, now)
            return True

    def enqueue_request(self, request: Request) -> bool:
        if self._store is None:
            return False
        replaced = self._held.replaced(request)
        pending = self._admission.admit(request)
        if pending is not None:
            self._buffer.append(pending)
        if replaced is not None:
            self._write(time.time(), [replaced])
        elif len(self._buffer) >= self._config.push_batch:
            self._write(time.time())
        return pending is not None

    def next_request(self) -> Request | None:
        if self._store is None or self._control.paused:
            return None
        self._acks.sweep()  # acks of requests done since the last ask ride on this pop
        now = time.time()
        if not self._redis_usable(now):
            self._wake_at(self._redis_gate.retry_at, now)
            return None
        try:
            return self._next_request(now)
        except REDIS_ERRORS as exc:
            self._redis_failed(exc, now)
            return None

    def _next_request(self, now: float) -> Request | None:
        assert self._store is not None
        if due := self._store.due_shards(now):
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
        assert self._store is not None
        # Each round either writes what was pending or corrects a shard's summary.
        for _attempt in range(self._config.shards + 2):
            order = self._pop_order(now)
            if order is None and not (self._buffer or self._done):
                return None
            popped = self._flush(now, pop=order)
            if popped is not None and (request := self._leased_request(*popped, now)):
                return request
        return None

    def _pop_order(self, now: float) -> PopOrder | None:
        """Where the next request comes from: the best shard under the barrier."""
        assert self._store is not None
        deepest = deepest_level_allowed(
            self._store.lowest_level(), self._config.bfs_lookahead
        )
        assert self._membership is not None
        shard = self._store.best_shard(self._membership.owned, deepest)
        if shard is None:
            return None
        return PopOrder(
            shard, self._membership.node_id, self._delays.shortest(), deepest
        )

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

    # --- Redis round trips -----------------------------------------------------------

    def _flush(
        self, now: float, done: Sequence[Held] = (), pop: PopOrder | None = None
    ) -> tuple[Lease, bytes] | None:
        """Push the buffer, acknowledge the leases done, then *pop*: one round trip.

        Returns the popped lease and entry, if a pop was asked for and found one.
        """
        done = [*self._done, *done]
        if not self._buffer and not done and pop is None:
            return None
        assert self._store is not None
        batch, self._buffer, self._done = self._buffer, [], []
        acks = [self._ack(held, now) for held in done]
        try:
            flushed = self._store.flush(batch, acks, now, pop)
        except Exception:
            self._buffer, self._done = batch + self._buffer, done + self._done
            raise
        self._count_flush(flushed)
        if flushed.fenced and pop is not None and self._membership is not None:
            self._membership.lost(pop.shard)  # another node took it: stop asking
        return flushed.popped

    def _ack(self, held: Held, now: float) -> Ack:
        """How *held*'s lease is released: the host's delay, the request's fate (none
        for a retry's lease, which the retry takes on), its fingerprint if it failed
        for good (kept for ``scrapy frontier retry``), and whether the host was
        left untouched (robots.txt forbade the URL: no delay spent)."""
        marked = held.meta.get(FATE, "")
        fate = marked or "fetched"
        if held.replaced_by:
            fate = "redirected" if held.replaced_by == "redirect" else ""
        fingerprint = ""
        if fate in FAILED_FATES and held.request is not None:
            fingerprint = self._crawler.request_fingerprinter.fingerprint(
                held.request
            ).hex()
        delay = self._delays.delay_for(held.host, now=now)
        untouched = (
            marked in UNTOUCHED_FATES
            or bool(held.meta.get(REPARSED))
            or held.replaced_by == "requeue"
        )
        return Ack(held.lease, delay, fate, fingerprint, untouched)

    def _count_flush(self, flushed: Flushed) -> None:
        accepted = sum(flushed.new)
        for key in (
            "scheduler/enqueued",
            "scheduler/enqueued/redis",
            "frontier/enqueued",
        ):
            self._stats.inc_value(key, accepted)
        self._admission.count_duplicates(len(flushed.new) - accepted)
        if flushed.shortened:
            self._stats.inc_value("frontier/depth_shortened", flushed.shortened)
        self._stats.inc_value("frontier/acked", flushed.acked)
        self._progress.acked(flushed.acked)
        self._count_damage()

    def _count_damage(self) -> None:
        """Add what the store found damaged (and set aside) to frontier/bad_entries."""
        assert self._store is not None
        if found := self._store.bad_entries - self._damage_counted:
            self._stats.inc_value("frontier/bad_entries", found)
            self._damage_counted = self._store.bad_entries

    def _flush_pending(self) -> None:
        """The ack timer: writes what no engine loop has written since."""
        self._flush_timer = None
        if self._store is not None:
            self._write(time.time())

    def _write(self, now: float, done: Sequence[Held] = ()) -> None:
        """``_flush``, unless Redis is away: what is not written stays buffered, to
        go with the next round trip that succeeds."""
        if not self._redis_usable(now):
            self._done.extend(done)
            return
        try:
            self._flush(now, done)
        except REDIS_ERRORS as exc:
            self._redis_failed(exc, now)  # _flush put back what it took

    def _leased_request(self, lease: Lease, entry: bytes, now: float) -> Request | None:
        try:
            request = codec.decode(entry, self._spider)
        except codec.BadEntryError as exc:
            self._drop_bad_entry(lease, entry, exc, now)
            return None
        self._held.hold(lease, request)
        self._acks.track(request)
        if lease.reparse:
            request.meta[REPARSE] = True
        assert self._membership is not None
        request.meta[NODE] = self._membership.node_id
        for key in (
            "scheduler/dequeued",
            "scheduler/dequeued/redis",
            "frontier/dequeued",
        ):
            self._stats.inc_value(key)
        return request

    def _drop_bad_entry(
        self, lease: Lease, entry: bytes, error: Exception, now: float
    ) -> None:
        """Count and skip an entry this crawler did not write; it is never executed."""
        self._stats.inc_value("frontier/bad_entries")
        if not self._bad_entry_logged:
            logger.warning(
                "Skipped a queue entry that is not a frontier request (%(error)s): "
                "%(entry)r; further ones are only counted in frontier/bad_entries",
                {"error": error, "entry": entry[:200]},
                extra={"spider": self._spider},
            )
            self._bad_entry_logged = True
        self._flush(now, [Held(lease, "")])

    # --- waking the engine, acknowledgements, maintenance ------------------------------

    def _schedule_wake(self, now: float) -> None:
        """Wake the engine when the first waiting host becomes ready, or, while
        other nodes still hold work, when it is time to look again."""
        assert self._store is not None
        wake = self._store.next_wake()
        if wake is None:
            if self._drained():
                return
            wake = self._refreshed_at + self._refresh_every
        self._wake_at(wake, now)

    def _wake_at(self, wake: float, now: float) -> None:
        if self._wake is not None:
            self._wake.cancel()
        self._wake = call_later(max(0.0, wake - now), self._wake_engine)

    def _wake_engine(self) -> None:
        engine = self._crawler.engine
        if engine is not None and engine._slot is not None:
            engine._slot.nextcall.schedule()  # no public way to ask for a new loop

    def _lease_done(self, request: Request, at: float | None = None) -> None:
        """Queue the ack: the engine asks for the next request right after a request
        is done, and that pop carries the ack (its links were buffered before it).
        A timer writes it if no pop comes soon."""
        held = self._held.done(request, at)
        if held is None:
            return
        self._done.append(held)
        if self._flush_timer is None:
            self._flush_timer = call_later(ACK_DELAY, self._flush_pending)

    def _maintain(self) -> None:
        """One heartbeat. Nothing it meets stops the loop (a stopped heartbeat would
        leave this node's shards without an owner): Redis away is waited out, any
        other error is logged and the next round runs as usual."""
        now = time.time()
        try:
            self._maintenance_round(now)
        except REDIS_ERRORS as exc:
            if is_outage(exc):
                self._redis_failed(exc, now)
                return
            self._log_maintenance_error(exc)
        except Exception as exc:  # noqa: BLE001 (logged with its traceback, then counted)
            self._log_maintenance_error(exc)
        else:
            self._redis_answered(maintained=True)

    def _log_maintenance_error(self, error: Exception) -> None:
        self._stats.inc_value("frontier/maintenance_errors")
        if not self._maintenance_failed:
            self._maintenance_failed = True
            logger.error(
                "A maintenance round failed; the next runs as usual (further "
                "failures are counted in frontier/maintenance_errors)",
                exc_info=error,
                extra={"spider": self._spider},
            )

    def _maintenance_round(self, now: float) -> None:
        assert self._store is not None
        assert self._membership is not None
        owned = self._membership.owned
        pages = self._stats.get_value("response_received_count", 0)
        if self._membership.beat(now, pages) - owned:
            self._wake_engine()  # shards gained: there may be work in them
        # Leases done but not yet acknowledged (Redis was away) are still this node's.
        unacked = [held.lease for held in self._done]
        self._store.renew([*self._held.leases(), *unacked], now)
        self._follow_control()
        if recovered := self._store.requeue(now):
            self._stats.inc_value("frontier/leases_recovered", recovered)
            logger.info(
                "Put %(count)d expired leases back in their queues",
                {"count": recovered},
                extra={"spider": self._spider},
            )
            self._wake_engine()
        self._take_seeds()
        if stranded := self._store.repair_stuck(self._membership.owned, now):
            self._stats.inc_value("frontier/stranded_hosts", stranded)
            self._wake_engine()  # stranded hosts are ready again
        self._count_damage()
        self._progress.maybe_log(self._store, now)

    def _follow_control(self) -> None:
        """Apply `scrapy frontier pause|resume|set`, read once a heartbeat."""
        assert self._store is not None
        key = self._store.crawl_keys.control
        fields = retyped(
            self._store.client,
            key,
            "hash",
            lambda: self._store.client.hgetall(key),  # type: ignore[union-attr]
            self._store.damaged,
        )
        resumed, configs = self._control.follow(fields)  # type: ignore[arg-type]
        if resumed:
            self._wake_engine()
        if configs is not None:
            self._delays.config = configs.politeness
            self._config = replace(self._config, depth_limit=configs.depth_limit)
            self._admission.config = self._config

    def _take_seeds(self) -> None:
        """Enqueue URLs any client pushed to the crawl's seed list in Redis."""
        assert self._store is not None
        key, client = self._store.crawl_keys.seeds, self._store.client
        urls: list[bytes] | None = retyped(  # type: ignore[assignment]
            client,
            key,
            "list",
            lambda: client.lpop(key, SEEDS_PER_ROUND),
            self._store.damaged,
        )
        for url in urls or ():
            try:  # only http(s) URLs with a usable host, as seeds given at start
                seed = parse_seed(url.decode("utf-8", "replace"))
                if seed is not None:
                    self.enqueue_request(Request(seed, meta={REVIVE: True}))
            except ValueError:
                self._stats.inc_value("frontier/bad_urls")
        if urls:
            self._flush(time.time())
            self._wake_engine()

    def _drained(self) -> bool:
        """Whether the crawl is over; before it says so, every shard is scanned
        once for hosts that damaged state left out of the ready and waiting sets."""
        assert self._drain is not None
        assert self._store is not None
        now = time.time()
        if not self._drain.drained(now):
            return False
        if stranded := self._store.rescue(now):
            self._stats.inc_value("frontier/stranded_hosts", stranded)
            self._count_damage()
            self._drain.forget()
            self._wake_engine()
            return False
        return True

    # --- Redis away and back -----------------------------------------------------------

    def _redis_usable(self, now: float) -> bool:
        """Whether to go to Redis at *now*: yes while it answers; after a failure,
        once the gate's wait is over and Redis answers a PING. (A call that found
        nothing to send would prove nothing, and end no outage.)"""
        if not self._redis_gate.ready(now):
            return False
        if not self._redis_gate.failing:
            return True
        assert self._store is not None
        try:
            self._store.client.ping()
        except REDIS_ERRORS as exc:
            self._redis_failed(exc, now)
            return False
        self._redis_answered()
        return True

    def _redis_failed(self, error: Exception, now: float) -> None:
        """Wait out *error* if it says Redis is away (else raise it): no request
        until the gate's delay is over, then the engine is woken to try again."""
        if not is_outage(error):
            raise error
        self._wake_at(self._redis_gate.failed(error, now), now)

    def _redis_answered(self, *, maintained: bool = False) -> None:
        """Redis answered a round trip: after an outage, the heartbeat runs at once
        (unless it just did), so this node re-claims its shards and requeues
        expired leases."""
        if self._redis_gate.succeeded() and not maintained:
            self._catch_up = call_later(0, self._maintain)

    def _spider_idle(self) -> None:
        if not self._config.close_when_drained:
            raise DontCloseSpider
