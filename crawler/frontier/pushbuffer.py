"""The node's writes not yet in Redis, and the round trip that carries them.

Requests admitted and leases done wait here; ``flush`` writes them in one round trip
with the next pop: the links first (a page's links are queued before its lease is
released), then the acks, then the pop (which sees the hosts the acks made ready).
While Redis is away nothing is lost: what a failed trip took is put back.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from scrapy.utils.asyncio import call_later

from crawler.context.logonce import OnceLogger
from crawler.context.outage import REDIS_ERRORS
from crawler.frontier.ackgate import AckGate
from crawler.frontier.encoding import codec
from crawler.frontier.leases import Held, HeldLeases
from crawler.frontier.store.roundtrip import Ack
from crawler.meta import FATE, NODE, REPARSE, REPARSED
from crawler.policy.fates import FAILED_FATES, UNTOUCHED_FATES

if TYPE_CHECKING:
    from collections.abc import Sequence

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.utils.asyncio import CallLaterResult

    from crawler.context.hostdelays import HostDelays
    from crawler.context.outage import RedisOutage
    from crawler.frontier.admission import Admission
    from crawler.frontier.duplicates import DuplicateLog
    from crawler.frontier.node.runtime import NodeRuntime
    from crawler.frontier.store.roundtrip import Flushed, Lease, Pending, PopOrder
    from crawler.frontier.store.store import FrontierStore

logger = logging.getLogger(__name__)

# Longest an acknowledgement waits for a pop to carry it to Redis.
ACK_DELAY = 0.01


class PushBuffer:
    """Requests to push and leases to acknowledge, written together."""

    def __init__(
        self,
        crawler: Crawler,
        admission: Admission,
        delays: HostDelays,
        runtime: NodeRuntime,
        duplicates: DuplicateLog,
    ) -> None:
        assert crawler.stats is not None
        self._crawler = crawler
        self._stats = crawler.stats
        self._admission = admission
        self.held = HeldLeases()
        self.acks = AckGate(crawler, self.lease_done)
        self._once = OnceLogger(logger, crawler)
        self._delays = delays
        self._runtime = runtime
        self._duplicates = duplicates
        # The request enqueue_request is answering for, and whether Redis refused it.
        self._asking: Request | None = None
        self._asking_refused = False
        self.store: FrontierStore | None = None
        self.requests: list[Pending] = []
        self.done: list[Held] = []
        self._timer: CallLaterResult | None = None
        self._damage_counted = 0  # of the store's bad_entries, in the stats already

    def __bool__(self) -> bool:
        return bool(self.requests or self.done)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def flush(
        self, now: float, done: Sequence[Held] = (), pop: PopOrder | None = None
    ) -> tuple[Lease, bytes] | None:
        """Push the buffer, acknowledge the leases done, then *pop*: one round trip.

        Returns the popped lease and entry, if a pop was asked for and found one.
        """
        done = [*self.done, *done]
        if not self.requests and not done and pop is None:
            return None
        assert self.store is not None
        batch, self.requests, self.done = self.requests, [], []
        acks = [self._ack(held, now) for held in done]
        try:
            flushed = self.store.flush(batch, acks, now, pop)
        except Exception:
            self.requests, self.done = batch + self.requests, done + self.done
            raise
        self._count(flushed)
        self._drop_duplicates(batch, flushed.new)
        membership = self._runtime.membership
        if flushed.fenced and pop is not None and membership is not None:
            membership.lost(pop.shard)  # another node took it: stop asking
        return flushed.popped

    def write(
        self, now: float, done: Sequence[Held] = (), asking: Request | None = None
    ) -> bool:
        """``flush``, unless Redis is away: what is not written stays buffered, to
        go with the next round trip that succeeds. Whether Redis found *asking* (a
        request in this write) a duplicate: its caller answers for it, so no
        ``request_dropped`` is sent here for it."""
        if not self._runtime.redis_usable(now):
            self.done.extend(done)
            return False
        self._asking, self._asking_refused = asking, False
        try:
            self.flush(now, done)
        except REDIS_ERRORS as exc:
            self._runtime.redis_failed(exc, now)  # flush put back what it took
        finally:
            self._asking = None
        return self._asking_refused

    def _drop_duplicates(self, batch: Sequence[Pending], new: Sequence[bool]) -> None:
        """Requests Redis found already seen: dropped loudly (see ``duplicates``)."""
        for pending, is_new in zip(batch, new, strict=True):
            if is_new or pending.request is None:
                continue
            if pending.request is self._asking:
                self._asking_refused = True
                self._duplicates.found(pending.request)
            else:
                self._duplicates.dropped(pending.request)

    def lease_done(self, request: Request, at: float | None = None) -> None:
        """Queue the ack: the engine asks for the next request right after a request
        is done, and that pop carries the ack (its links were buffered before it).
        A timer writes it if no pop comes soon."""
        held = self.held.done(request, at)
        if held is None:
            return
        self.done.append(held)
        if self._timer is None:
            self._timer = call_later(ACK_DELAY, self._write_pending)

    def _write_pending(self) -> None:
        """The ack timer: writes what no engine loop has written since."""
        self._timer = None
        if self.store is not None:
            self.write(time.time())

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

    def _count(self, flushed: Flushed) -> None:
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
        self._runtime.progress.acked(flushed.acked)
        self.count_damage()

    def leased_request(self, lease: Lease, entry: bytes, now: float) -> Request | None:
        """The request of a popped entry, leased and tracked till the engine is
        through with it; None for an entry this crawler did not write."""
        assert self._crawler.spider is not None
        try:
            request = codec.decode(entry, self._crawler.spider)
        except codec.BadEntryError as exc:
            self._drop_bad_entry(lease, entry, exc, now)
            return None
        self.held.hold(lease, request)
        self.acks.track(request)
        if lease.reparse:
            request.meta[REPARSE] = True
        assert self._runtime.membership is not None
        request.meta[NODE] = self._runtime.membership.node_id
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
        self._once.event(
            "frontier/bad_entries",
            "Skipped a queue entry that is not a frontier request (%(error)s): "
            "%(entry)r; further ones are only counted in frontier/bad_entries",
            {"error": error, "entry": entry[:200]},
        )
        self.flush(now, [Held(lease, "")])

    def closed_without_redis(self, error: Exception, outage: RedisOutage) -> None:
        """Closing while Redis is away loses nothing: the leases of the pages whose
        links are unwritten are not acknowledged either, so they expire and those
        pages are fetched again (by another node, or the next run)."""
        outage.failed(error, "the scheduler")
        logger.warning(
            "Closed while Redis is unreachable: %(links)d requests unwritten; the "
            "%(leases)d pages in flight or not yet acknowledged will be fetched "
            "again when their leases expire",
            {
                "links": len(self.requests),
                "leases": len(self.held.leases()) + len(self.done),
            },
            extra={"spider": self._crawler.spider},
        )

    def leases_in_hand(self) -> list[Lease]:
        """Leases held, and those done but not yet acknowledged (Redis was away)."""
        return [*self.held.leases(), *(held.lease for held in self.done)]

    def write_pending(self, now: float) -> None:
        self.flush(now)

    def count_damage(self) -> None:
        """Add what the store found damaged (and set aside) to frontier/bad_entries."""
        assert self.store is not None
        if found := self.store.bad_entries - self._damage_counted:
            self._stats.inc_value("frontier/bad_entries", found)
            self._damage_counted = self.store.bad_entries
