"""The node's runtime around the scheduler: joining the crawl, its heartbeat and
maintenance, seeds pushed to Redis, run-time control, progress, and the end of the
crawl.

``join`` reaches Redis and returns what every later step needs (``Joined``); the
runtime is built whole from it. It serves the round trip's owner
(``crawler.frontier.exchange``) only through ``FrontierWork`` and reaches Redis
through the node's ``RedisLink``: it holds no reference to the scheduler, and the
round trip none to it.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from scrapy.utils.asyncio import call_later, create_looping_call
from scrapy.utils.defer import deferred_from_coro

from crawler.context.crawl import CrawlContext
from crawler.context.hostdelays import machine_zone
from crawler.context.outage import REDIS_ERRORS, is_outage, use_reactor_retry
from crawler.crawlstate.connection import check_reachable
from crawler.crawlstate.controls import clear_drain
from crawler.crawlstate.damage import retyped
from crawler.frontier import backoffs
from crawler.frontier.node.drain import DrainWatch
from crawler.frontier.node.identity import SettledCrawl, declared_identity, settle
from crawler.frontier.node.membership import Membership, NodeReport
from crawler.frontier.node.runcontrol import ControlFollower
from crawler.frontier.node.seedintake import SeedIntake
from crawler.frontier.spill.table import SpillDatabaseError, prepare_table
from crawler.frontier.spill.worker import SpillWorker
from crawler.frontier.store.store import FrontierStore

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector
    from scrapy.utils.asyncio import AsyncioLoopingCall, CallLaterResult
    from twisted.internet.task import LoopingCall

    from crawler.context.runsettings import RunSettingsHolder
    from crawler.frontier.frontierconfig import FrontierConfig
    from crawler.frontier.node.progress import Progress
    from crawler.frontier.node.redislink import RedisLink
    from crawler.frontier.spill.spill import SpillCounts
    from crawler.frontier.store.crawlshards import CrawlShards
    from crawler.frontier.store.roundtrip import Lease

logger = logging.getLogger(__name__)

# Seconds the engine gets between two seed rounds while a seed backlog is left.
SEEDS_AGAIN_AFTER = 0.1


@dataclass(frozen=True, slots=True)
class Joined:
    """The crawl as this node joined it: its store, what the crawl is (its
    identity, new or resumed), this node's membership (shards claimed, leases of a
    previous run taken back) and the end-of-crawl watch."""

    store: FrontierStore
    crawl: SettledCrawl
    membership: Membership
    drain: DrainWatch


def join(crawler: Crawler, config: FrontierConfig, now: float) -> Joined:
    """Connect, prepare the crawl, join it and take back this node's leases (before
    the first pop). Raises if Redis cannot be reached or the crawl cannot be used
    (``CrawlConflictError``: new seeds over another unfinished crawl); the client is
    closed then."""
    context = CrawlContext.of(crawler)
    client = context.redis.sync_client()
    use_reactor_retry(client)  # a longer wait is the gate's, off the reactor
    try:
        check_reachable(client, context.redis.url)
        run = context.delays.run_settings  # DEPTH_LIMIT in force, for depth repair
        store = FrontierStore.on(client, config, context.round_trip_times, run)
        store.prepare(now)
        if config.spill_head:
            prepare_table(config.spill_database_url, config.prefix, reset=config.reset)
        assert crawler.spider is not None  # Scrapy builds the spider first
        crawl = settle(
            client,
            store.shards.crawl_keys,
            config.shards,
            declared_identity(crawler.spider, now),
            context.redis.url,
        )
        membership = Membership(
            client, store.shards.crawl_keys, config, on_damage=store.shards.damaged
        )
        # A drain is for one run: this node, started again, takes part.
        _clear_drain(store.shards, membership.node_id)
        membership.beat(now, node_report(crawler, config.node_weight))
        resumed = membership.resume(store, now)
        _stats(crawler).inc_value("frontier/leases_resumed", resumed)
    except Exception:
        client.close()
        raise
    drain = DrainWatch(store.shards, membership, opened_at=now)
    return Joined(store, crawl, membership, drain)


def _on_reactor(function: Callable[..., object], *args: object) -> None:
    """Call *function* on the reactor's thread (from the spill worker's)."""
    from twisted.internet import reactor  # noqa: PLC0415 (Scrapy installs the reactor)

    reactor.callFromThread(function, *args)


def node_report(
    crawler: Crawler, weight_setting: float, *, draining: bool = False
) -> NodeReport:
    """What this node's engine says for its heartbeat: pages fetched, its
    concurrency in force (changed at run time on its downloader), requests in
    flight."""
    engine = crawler.engine
    downloader = engine.downloader if engine is not None else None
    concurrency = (
        downloader.total_concurrency
        if downloader is not None
        else crawler.settings.getint("CONCURRENT_REQUESTS")
    )
    return NodeReport(
        pages=_stats(crawler).get_value("response_received_count", 0),
        concurrency=max(1, concurrency),
        in_flight=len(downloader.active) if downloader is not None else 0,
        weight_setting=weight_setting,
        draining=draining,
    )


def _clear_drain(shards: CrawlShards, node_id: str) -> None:
    """Forget a drain asked of this node's id: a drain is for one run."""
    key = shards.crawl_keys.control
    retyped(
        shards.client,
        key,
        "hash",
        lambda: clear_drain(shards.client, shards.crawl_keys, node_id),
        shards.damaged,
    )


def _stats(crawler: Crawler) -> StatsCollector:
    assert crawler.stats is not None  # Scrapy's type: set once the crawler is built
    return crawler.stats


class FrontierWork(Protocol):
    """What the heartbeat asks of the round trip's owner (``exchange``), and nothing
    more: the runtime needs no other part of it."""

    def leases_in_hand(self) -> list[Lease]:
        """This node's own leases, acknowledgement written or not."""

    def write_pending(self, now: float) -> None:
        """Push what is buffered now (raises if Redis fails)."""

    def write_behind(self, now: float) -> None:
        """Start pushing what is buffered, finished by the next write (raises if
        the write before it failed)."""

    def count_damage(self) -> None:
        """Count in the stats what the store found damaged since the last count."""

    @property
    def buffered(self) -> int:
        """Requests pushed to this node and not yet written to Redis."""

    @property
    def trips(self) -> int:
        """Round trips written so far (each may have queued or acked work)."""


class NodeRuntime:
    """The heartbeat of a node that joined the crawl, and what it decides."""

    def __init__(  # noqa: PLR0913 (keyword-only: built whole, each is needed)
        self,
        crawler: Crawler,
        config: FrontierConfig,
        *,
        joined: Joined,
        link: RedisLink,
        progress: Progress,
        work: FrontierWork,
        enqueue: Callable[[Request], bool],
        enqueue_urls: Callable[[list[str]], object] | None = None,
    ) -> None:
        self._crawler = crawler
        self._stats = _stats(crawler)
        self._config = config
        # Replaced whole when `scrapy frontier set` changes it.
        self._delays = CrawlContext.of(crawler).delays
        self._run: RunSettingsHolder = self._delays.run_settings
        self.store = joined.store
        self._shards = joined.store.shards
        self.membership = joined.membership
        self._drain = joined.drain
        self._link = link
        self.progress = progress
        self._work = work
        self.control = ControlFollower(
            crawler.settings, machine_zone(), node_id=self.membership.node_id
        )
        # CONCURRENT_REQUESTS the node started with, given back by `set --unset`.
        self._started_concurrency = crawler.settings.getint("CONCURRENT_REQUESTS")
        self._seeds = SeedIntake(
            crawler,
            enqueue,
            flush=lambda: work.write_behind(time.time()),
            enqueue_urls=enqueue_urls,
        )
        self._spill = (
            SpillWorker(
                CrawlContext.of(crawler).redis.sync_client(),
                config,
                owned=lambda: self.membership.owned,
                report=lambda counts: _on_reactor(self._count_spill, counts),
                refilled=lambda shard, summary: _on_reactor(
                    self._refilled, shard, summary
                ),
            )
            if config.spill_head
            else None
        )
        self._maintenance: AsyncioLoopingCall | LoopingCall | None = None
        self._maintenance_failed = False
        self._closing = False  # a drained node's close is under way
        self._more_seeds: CallLaterResult | None = None  # a seed round between beats

    def start(self) -> None:
        """Start the heartbeat, knowing what the hosts of this node's shards taught."""
        self._adopt_backoffs(self.membership.owned)
        self._maintenance = create_looping_call(self.maintain)
        self._maintenance.start(self._config.maintenance_interval, now=True)
        if self._spill is not None:
            self._spill.start()

    def stop(self) -> None:
        """No more heartbeats, no more spill rounds."""
        if self._maintenance is not None and self._maintenance.running:
            self._maintenance.stop()
        if self._spill is not None:
            self._spill.stop()
        if self._more_seeds is not None:
            self._more_seeds.cancel()
            self._more_seeds = None

    def leave(self) -> None:
        """Give back this node's shards; with FRONTIER_PERSIST=False, delete the
        crawl unless other nodes still work."""
        self._share_backoffs()  # before the shards go: their next owner reads them
        self.membership.leave()
        # A drain is for one run: the node started again under this id joins.
        _clear_drain(self._shards, self.membership.node_id)
        # The pages done since the last heartbeat count in the crawl's pace.
        self.progress.record_pace(self._shards, self.membership.node_id, time.time())
        if self._config.persist:
            return
        settled = self._shards.settled_totals()  # None: other nodes are at work
        if settled != (0, 0):
            queued, leased = settled or self._shards.totals()
            logger.warning(
                "Kept frontier %(prefix)r despite FRONTIER_PERSIST=False: "
                "%(queued)d requests queued, %(leased)d in flight on other nodes",
                {"prefix": self._config.prefix, "queued": queued, "leased": leased},
                extra={"spider": self._crawler.spider},
            )
            return
        self._shards.delete_all()
        if self._config.spill_head:
            self._clear_spill()

    def _clear_spill(self) -> None:
        """Delete the deleted crawl's rows from the spill database; if it cannot be
        reached, say so (the rows are only garbage then: no crawl reads them)."""
        config = self._config
        try:
            prepare_table(config.spill_database_url, config.prefix, reset=True)
        except SpillDatabaseError as exc:
            logger.warning(
                "Kept the deleted crawl's spilled rows: %(error)s",
                {"error": exc},
                extra={"spider": self._crawler.spider},
            )

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
                self._link.failed(exc, now)
                return
            self._log_maintenance_error(exc)
        except Exception as exc:  # noqa: BLE001 (logged with its traceback, then counted)
            self._log_maintenance_error(exc)
        else:
            self._link.answered(maintained=True)

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
        self._follow_control()
        owned = self.membership.owned
        moves = dict(self.membership.moves)
        weight = self.control.weight
        report = node_report(
            self._crawler,
            self._config.node_weight if weight is None else weight,
            draining=self.control.draining,
        )
        held = self.membership.beat(now, report, self.control.state.draining)
        if gained := held - owned:
            self._link.wake_engine()  # shards gained: there may be work in them
            self._adopt_backoffs(gained)
        self._count_moves(moves)
        self._share_backoffs()
        # Leases done but not yet acknowledged (Redis was away) are still this node's.
        self._shards.renew(self._work.leases_in_hand(), now)
        if self.control.draining:
            self._close_when_drained()
        if recovered := self.store.requeue(now):
            self._stats.inc_value("frontier/leases_recovered", recovered)
            logger.info(
                "Put %(count)d expired leases back in their queues",
                {"count": recovered},
                extra={"spider": self._crawler.spider},
            )
            self._link.wake_engine()
        self._take_seeds()
        if stranded := self.store.repair_stuck(self.membership.owned, now):
            self._stats.inc_value("frontier/stranded_hosts", stranded)
            self._link.wake_engine()  # stranded hosts are ready again
        if forgotten := self.store.forget_idle(self.membership.owned, now):
            self._stats.inc_value("frontier/idle_hosts_forgotten", forgotten)
        self._work.count_damage()
        self.progress.maybe_log(self._shards, self.membership.owned, now)
        self.progress.record_pace(self._shards, self.membership.node_id, now)

    def _count_spill(self, counts: SpillCounts) -> None:
        """A spill round's work, in the node's stats."""
        self._stats.inc_value("spill/written", counts.written)
        self._stats.inc_value("spill/brought_back", counts.brought_back)
        self._stats.inc_value("spill/queues_forgotten", counts.forgotten)
        if counts.damaged:
            self._stats.inc_value("frontier/bad_entries", counts.damaged)

    def _refilled(self, shard: int, summary: Sequence[Any]) -> None:
        """Entries came back to *shard*: its summary is new, its hosts may be ready."""
        self._shards.remember(shard, summary)
        self._link.wake_engine()

    def _adopt_backoffs(self, shards: frozenset[int]) -> None:
        """Read what the hosts of *shards* taught (learnt delays)."""
        adopted = backoffs.adopt(
            self._shards.client, self._shards.crawl_keys, shards, self._delays,
            damaged=self._shards.damaged,
        )  # fmt: skip
        self._stats.inc_value("politeness/learnt_adopted", adopted)

    def _share_backoffs(self) -> None:
        """Write the learnt delays changed since the last heartbeat."""
        backoffs.share(
            self._shards.client, self._shards.crawl_keys, self._config, self._delays,
            damaged=self._shards.damaged,
        )  # fmt: skip

    def _count_moves(self, before: dict[str, int]) -> None:
        """Shards gained and lost, pulled and given, in the node's stats."""
        moves = self.membership.moves
        self._stats.inc_value("frontier/shards_gained", moves["in"] - before["in"])
        self._stats.inc_value("frontier/shards_lost", moves["out"] - before["out"])
        self._stats.inc_value("dispatch/pulled", moves["pulled"] - before["pulled"])
        self._stats.inc_value("dispatch/given", moves["given"] - before["given"])

    def _follow_control(self) -> None:
        """Apply `scrapy frontier pause|resume|set`, read once a heartbeat."""
        shards = self._shards
        key = shards.crawl_keys.control
        fields = retyped(
            shards.client,
            key,
            "hash",
            lambda: shards.client.hgetall(key),
            shards.damaged,
        )
        resumed, configs = self.control.follow(fields)  # type: ignore[arg-type]
        if resumed:
            self._link.wake_engine()
        if configs is not None:
            self._run.replace(configs)
        self._apply_concurrency()

    def _apply_concurrency(self) -> None:
        """CONCURRENT_REQUESTS set at run time (or given back) on the downloader,
        which reads it at every request it starts."""
        engine = self._crawler.engine
        if engine is None:
            return
        wanted = self.control.concurrency or self._started_concurrency
        downloader = engine.downloader
        if downloader.total_concurrency != wanted:
            logger.info(
                "Concurrency of node %(node)s now %(count)d requests (was %(was)d)",
                {
                    "node": self.membership.node_id,
                    "count": wanted,
                    "was": downloader.total_concurrency,
                },
            )
            downloader.total_concurrency = wanted
            self._link.wake_engine()

    @property
    def draining(self) -> bool:
        """Whether this node was told to drain: it takes no more requests."""
        return self.control.draining

    def _close_when_drained(self) -> None:
        """A draining node closes (exit status 0) once nothing of its own is in
        flight or unwritten: its shards are the other nodes' already."""
        if self._work.leases_in_hand() or self._work.buffered:
            return
        engine = self._crawler.engine
        if engine is None or self._closing:
            return
        self._closing = True
        logger.info(
            "Node %(node)s drained: its requests are done and its shards are the "
            "other nodes'; closing",
            {"node": self.membership.node_id},
            extra={"spider": self._crawler.spider},
        )
        deferred_from_coro(engine.close_spider_async(reason="drained"))

    def _take_seeds(self) -> None:
        """Enqueue what any client pushed to the crawl's seed list in Redis."""
        if self._seeds.take(self._shards):
            if not self._seeds.backlog:  # else the last batch's write runs behind
                self._work.write_pending(time.time())
            self._link.wake_engine()
        if self._seeds.backlog and self._more_seeds is None and not self._closing:
            self._more_seeds = call_later(SEEDS_AGAIN_AFTER, self._seed_round)

    def _seed_round(self) -> None:
        """More seeds between heartbeats while a backlog is left (issue 27: a large
        seed file queued at the intake's pace, not a budget a heartbeat), with a
        pause for the engine between rounds. A failure is the heartbeat's to meet:
        counted here, and the next heartbeat takes seeds as usual."""
        self._more_seeds = None
        if self._maintenance is None or not self._maintenance.running:
            return
        try:
            self._take_seeds()
        except REDIS_ERRORS as exc:
            if not is_outage(exc):
                self._log_maintenance_error(exc)
        except Exception as exc:  # noqa: BLE001 (logged with its traceback, then counted)
            self._log_maintenance_error(exc)

    # --- the end of the crawl ----------------------------------------------------------

    def drained(self, own_leases: int) -> bool:
        """Whether nothing is queued, nor leased but for this node's *own_leases*;
        before it says so, every shard is scanned once for hosts that damaged
        state left out of the ready and waiting sets."""
        now = time.time()
        if not self._drain.drained(now, own_leases, self._work.trips):
            return False
        if stranded := self.store.rescue(now):
            self._stats.inc_value("frontier/stranded_hosts", stranded)
            self._work.count_damage()
            self._drain.forget()
            self._link.wake_engine()
            return False
        # A damaged shard's queued count may be short until a scan sets it: asked
        # again at its next scan (repair.RECOUNT_RETRY), not before.
        return self.store.counts_trusted
