"""FrontierScheduler: Scrapy's scheduler interface over the Redis frontier.

Wiring only: decisions come from ``crawler.policy``, Redis work from ``store``.
Requests enqueued by the spider are checked locally (depth, URL, a cache of
fingerprints already seen), buffered, and pushed in one round trip when the buffer
fills, when the page that produced them is done, or when the engine asks for work.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scrapy import Request, signals
from scrapy.core.scheduler import BaseScheduler
from scrapy.exceptions import DontCloseSpider
from scrapy.utils.asyncio import call_later, create_looping_call

from crawler.connection import (
    RedisUnreachableError,
    check_reachable,
    redis_url,
    sync_client,
)
from crawler.frontier import codec
from crawler.frontier.acks import LEASE_META_KEY, lease_done
from crawler.frontier.config import FrontierConfig
from crawler.frontier.dedup import bloom_hashes
from crawler.frontier.embedded import EmbeddedRedisError
from crawler.frontier.progress import Progress
from crawler.frontier.seencache import SeenCache
from crawler.frontier.startup import FailedScheduler, StartupFailure
from crawler.frontier.store import FrontierStore, Lease, Pending, SchemaMismatchError
from crawler.policy.hosts import BadURLError, host_of, shard_key
from crawler.policy.order import depth_allowed, level_of
from crawler.policy.politeness import DelayPolicy, FixedDelayPolicy
from crawler.policy.sharding import shard_of

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


@dataclass(frozen=True, slots=True)
class _Held:
    """A request this node holds a lease for, and how to tell its retries apart."""

    lease: Lease
    host: str
    retry_times: int
    redirect_times: int


class FrontierScheduler(BaseScheduler):
    def __init__(
        self, crawler: Crawler, config: FrontierConfig, delays: DelayPolicy
    ) -> None:
        assert crawler.spider is not None
        self._crawler = crawler
        self._spider: Spider = crawler.spider
        self._config = config
        self._delays = delays
        self._stats = crawler.stats
        self._store: FrontierStore | None = None
        self._buffer: list[Pending] = []
        self._seen = SeenCache(config.local_seen_cache)
        self._held: dict[str, _Held] = {}
        self._progress = Progress(crawler, config.log_interval)
        self._maintenance: AsyncioLoopingCall | LoopingCall | None = None
        self._wake: CallLaterResult | None = None
        self._drained_checked_at = 0.0
        self._last_drained = False
        self._bad_entry_logged = False
        self._failure: StartupFailure | None = None
        crawler.signals.connect(self._lease_done, signal=lease_done)
        crawler.signals.connect(self._spider_idle, signal=signals.spider_idle)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self | FailedScheduler:  # type: ignore[override]
        assert crawler.spider is not None
        try:
            config = FrontierConfig.from_settings(crawler.settings, crawler.spider.name)
            delays = FixedDelayPolicy.from_settings(crawler.settings)
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
        # The frontier owns the per-host delay; Scrapy's AutoThrottle sets the same
        # attribute. Left alone, DOWNLOAD_DELAY would be applied twice.
        self._crawler.engine.downloader._delay = 0.0
        queued, leased = self._store.totals()
        logger.info(
            "Frontier %(prefix)r opened: %(queued)d queued, %(leased)d leased",
            {"prefix": self._config.prefix, "queued": queued, "leased": leased},
            extra={"spider": spider},
        )
        self._maintenance = create_looping_call(self._maintain)
        self._maintenance.start(self._config.maintenance_interval, now=True)

    def _open_store(self, now: float) -> FrontierStore:
        client = sync_client(self._crawler)
        try:
            check_reachable(client, redis_url(self._crawler))
            store = FrontierStore(client, self._config)
            store.prepare(now)
        except Exception:
            client.close()
            raise
        return store

    def close(self, reason: str) -> None:
        if self._maintenance is not None and self._maintenance.running:
            self._maintenance.stop()
        if self._wake is not None:
            self._wake.cancel()
        if self._store is None:
            return
        now = time.time()
        self._flush(now)
        released = self._store.requeue(
            now, [held.lease for held in self._held.values()]
        )
        self._stats.inc_value("frontier/leases_released", released)
        self._held.clear()
        if not self._config.persist:
            self._store.delete_all()
        self._store.client.close()

    # --- Scrapy's scheduler interface ----------------------------------------------

    def has_pending_requests(self) -> bool:
        if self._buffer or self._store is None:
            return bool(self._buffer)
        summaries = self._store.summaries
        if any(s.best is not None or s.wake is not None for s in summaries):
            return True
        return not self._drained()

    def enqueue_request(self, request: Request) -> bool:
        if self._store is None:
            return False
        replaced = self._replaced_lease(request)
        pending = self._pending(request)
        if pending is not None:
            self._buffer.append(pending)
        if replaced is not None:
            self._flush(time.time(), [replaced])
        elif len(self._buffer) >= self._config.push_batch:
            self._flush(time.time())
        return pending is not None

    def next_request(self) -> Request | None:
        if self._store is None:
            return None
        now = time.time()
        self._flush(now)
        summaries = self._store.summaries
        due = [
            s
            for s, sm in enumerate(summaries)
            if sm.wake is not None and sm.wake <= now
        ]
        if due:
            self._store.promote(due, now)
        for _attempt in range(self._config.shards + 1):
            shard = self._best_shard()
            if shard is None:
                break
            popped = self._store.pop(shard, now, self._delays.delay_for("", now=now))
            if popped is None:
                continue
            request = self._leased_request(*popped, now=now)
            if request is not None:
                return request
        self._schedule_wake(now)
        return None

    # --- enqueue -----------------------------------------------------------------

    def _pending(self, request: Request) -> Pending | None:
        """The request ready to push, or None (counted) if it must not be queued."""
        depth = request.meta.get("depth", 0)
        if not depth_allowed(depth, self._config.depth_limit):
            self._stats.inc_value("frontier/depth_limited")
            return None
        try:
            host = host_of(request.url)
        except BadURLError:
            self._stats.inc_value("frontier/bad_urls")
            return None
        dedup: str | bytes = ""
        if not request.dont_filter:
            fingerprint = self._crawler.request_fingerprinter.fingerprint(request)
            if not self._seen.add(fingerprint):
                self._count_duplicates(1)
                return None
            dedup = fingerprint
            if self._config.dedup.mode == "bloom":
                first, second = bloom_hashes(fingerprint)
                dedup = f"{first} {second}"
        shard = shard_of(shard_key(host, self._config.shard_by), self._config.shards)
        entry = codec.encode(request, self._spider)
        return Pending(shard, host, level_of(depth), dedup, entry)

    def _replaced_lease(self, request: Request) -> _Held | None:
        """The lease of the request this one retries or redirects, if any.

        A retry or redirect copies the meta of the leased request; its lease is
        released once the new request is queued. A request that merely copied a
        response's meta (a child) leaves the parent's lease alone.
        """
        key = request.meta.pop(LEASE_META_KEY, None)
        held = self._held.get(key) if key else None
        if held is None:
            return None
        if (
            request.meta.get("retry_times", 0) > held.retry_times
            or request.meta.get("redirect_times", 0) > held.redirect_times
        ):
            del self._held[key]
            return held
        return None

    def _flush(self, now: float, done: Sequence[_Held] = ()) -> None:
        """Push the buffer, then acknowledge the leases of *done*, in one round trip."""
        if not self._buffer and not done:
            return
        assert self._store is not None
        batch, self._buffer = self._buffer, []
        acks = [
            (held.lease, self._delays.delay_for(held.host, now=now)) for held in done
        ]
        try:
            new, held = self._store.flush(batch, acks, now)
        except Exception:
            self._buffer = batch + self._buffer
            raise
        accepted = sum(new)
        for key in (
            "scheduler/enqueued",
            "scheduler/enqueued/redis",
            "frontier/enqueued",
        ):
            self._stats.inc_value(key, accepted)
        self._count_duplicates(len(new) - accepted)
        self._stats.inc_value("frontier/acked", held)
        self._progress.acked(held)

    def _count_duplicates(self, count: int) -> None:
        if count:
            self._stats.inc_value("dupefilter/filtered", count)
            self._stats.inc_value("frontier/duplicates", count)

    # --- dequeue -----------------------------------------------------------------

    def _best_shard(self) -> int | None:
        assert self._store is not None
        scored = [
            (s.best, i)
            for i, s in enumerate(self._store.summaries)
            if s.best is not None
        ]
        return min(scored)[1] if scored else None

    def _leased_request(self, lease: Lease, entry: bytes, now: float) -> Request | None:
        try:
            request = codec.decode(entry, self._spider)
        except codec.BadEntryError as exc:
            self._drop_bad_entry(lease, entry, exc, now)
            return None
        request.meta[LEASE_META_KEY] = str(lease)
        self._held[str(lease)] = _Held(
            lease,
            host_of(request.url),
            request.meta.get("retry_times", 0),
            request.meta.get("redirect_times", 0),
        )
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
                extra={"spider": self._crawler.spider},
            )
            self._bad_entry_logged = True
        self._flush(now, [_Held(lease, "", 0, 0)])

    def _schedule_wake(self, now: float) -> None:
        """Wake the engine when the first waiting host becomes ready."""
        assert self._store is not None
        wakes = [s.wake for s in self._store.summaries if s.wake is not None]
        if not wakes:
            return
        if self._wake is not None:
            self._wake.cancel()
        self._wake = call_later(max(0.0, min(wakes) - now), self._wake_engine)

    def _wake_engine(self) -> None:
        engine = self._crawler.engine
        if engine is not None and engine._slot is not None:
            engine._slot.nextcall.schedule()

    # --- acknowledgements, maintenance, end of crawl ----------------------------------

    def _lease_done(self, request: Request) -> None:
        held = self._held.pop(request.meta.get(LEASE_META_KEY, ""), None)
        if held is not None:
            self._flush(time.time(), [held])

    def _maintain(self) -> None:
        assert self._store is not None
        now = time.time()
        self._store.renew([held.lease for held in self._held.values()], now)
        recovered = self._store.requeue(now)
        if recovered:
            self._stats.inc_value("frontier/leases_recovered", recovered)
            logger.info(
                "Put %(count)d expired leases back in their queues",
                {"count": recovered},
                extra={"spider": self._crawler.spider},
            )
            self._wake_engine()
        self._take_seeds()
        self._progress.maybe_log(self._store, now)

    def _take_seeds(self) -> None:
        assert self._store is not None
        urls: list[bytes] | None = self._store.client.lpop(  # type: ignore[assignment]
            self._store.crawl_keys.seeds, SEEDS_PER_ROUND
        )
        for url in urls or ():
            try:
                self.enqueue_request(Request(url.decode("utf-8", "replace")))
            except ValueError:
                self._stats.inc_value("frontier/bad_urls")
        if urls:
            self._flush(time.time())
            self._wake_engine()

    def _drained(self) -> bool:
        """Whether no request is queued or leased anywhere in the crawl (checked at
        most once a second: the engine asks often)."""
        assert self._store is not None
        now = time.time()
        if now - self._drained_checked_at < 1.0:
            return self._last_drained
        self._drained_checked_at = now
        queued, leased = self._store.totals()
        self._last_drained = queued <= 0 and leased == 0
        return self._last_drained

    def _spider_idle(self) -> None:
        if not self._config.close_when_drained:
            raise DontCloseSpider
