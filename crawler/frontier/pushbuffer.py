"""The node's writes not yet in Redis, and the round trip that carries them.

Requests admitted and leases done wait here; ``flush`` writes them in one round trip
with the next pop: the links first (a page's links are queued before its lease is
released), then the acks, then the pop (which sees the hosts the acks made ready).
While Redis is away nothing is lost: what a failed trip took is put back.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from scrapy.utils.asyncio import call_later

from crawler.frontier.outage import REDIS_ERRORS
from crawler.frontier.roundtrip import Ack
from crawler.meta import FATE, REPARSED
from crawler.policy.fates import FAILED_FATES, UNTOUCHED_FATES

if TYPE_CHECKING:
    from collections.abc import Sequence

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.utils.asyncio import CallLaterResult

    from crawler.frontier.admission import Admission
    from crawler.frontier.hostdelays import HostDelays
    from crawler.frontier.leases import Held, HeldLeases
    from crawler.frontier.noderuntime import NodeRuntime
    from crawler.frontier.roundtrip import Flushed, Lease, Pending, PopOrder
    from crawler.frontier.store import FrontierStore

# Longest an acknowledgement waits for a pop to carry it to Redis.
ACK_DELAY = 0.01


class PushBuffer:
    """Requests to push and leases to acknowledge, written together."""

    def __init__(
        self,
        crawler: Crawler,
        admission: Admission,
        held: HeldLeases,
        delays: HostDelays,
        runtime: NodeRuntime,
    ) -> None:
        assert crawler.stats is not None
        self._crawler = crawler
        self._stats = crawler.stats
        self._admission = admission
        self._held = held
        self._delays = delays
        self._runtime = runtime
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
        membership = self._runtime.membership
        if flushed.fenced and pop is not None and membership is not None:
            membership.lost(pop.shard)  # another node took it: stop asking
        return flushed.popped

    def write(self, now: float, done: Sequence[Held] = ()) -> None:
        """``flush``, unless Redis is away: what is not written stays buffered, to
        go with the next round trip that succeeds."""
        if not self._runtime.redis_usable(now):
            self.done.extend(done)
            return
        try:
            self.flush(now, done)
        except REDIS_ERRORS as exc:
            self._runtime.redis_failed(exc, now)  # flush put back what it took

    def lease_done(self, request: Request, at: float | None = None) -> None:
        """Queue the ack: the engine asks for the next request right after a request
        is done, and that pop carries the ack (its links were buffered before it).
        A timer writes it if no pop comes soon."""
        held = self._held.done(request, at)
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

    def count_damage(self) -> None:
        """Add what the store found damaged (and set aside) to frontier/bad_entries."""
        assert self.store is not None
        if found := self.store.bad_entries - self._damage_counted:
            self._stats.inc_value("frontier/bad_entries", found)
            self._damage_counted = self.store.bad_entries
