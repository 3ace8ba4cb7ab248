"""The push/ack/pop round trip: its one owner, ``Exchange``.

Requests admitted and leases done wait here; a write carries them in one round trip
with the next pop: the links first (a page's links are queued before its lease is
released), then the acks, then the pop (which sees the hosts the acks made ready).
The popped entry comes back as a request under this node's own lease. While Redis
is away nothing is lost: what a failed trip took is put back.

Nothing outside changes its state: the scheduler calls ``enqueue``, ``pop``,
``sweep``, ``stop`` and ``close``, the heartbeat its ``FrontierWork`` methods; it
reaches Redis through the node's ``RedisLink``, and knows no heartbeat.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from scrapy import Request
from scrapy.utils.asyncio import call_later

from crawler.context.logonce import OnceLogger
from crawler.context.outage import REDIS_ERRORS
from crawler.frontier.ackgate import AckGate
from crawler.frontier.admission import Admission
from crawler.frontier.duplicates import DuplicateLog
from crawler.frontier.encoding import codec, plainurl
from crawler.frontier.leases import OwnLease, OwnLeases
from crawler.frontier.servergates import Release
from crawler.frontier.store.roundtrip import Ack
from crawler.meta import BACKLINKS, IMPORTANCE, INLINKS, NODE, REPARSE, REVIVE
from crawler.policy.fates import FAILED_FATES
from crawler.signals import trap_cut

if TYPE_CHECKING:
    from collections.abc import Sequence
    from concurrent.futures import Future

    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.utils.asyncio import CallLaterResult

    from crawler.context.hostdelays import HostDelays
    from crawler.context.linkcredits import LinkCredits
    from crawler.frontier.frontierconfig import FrontierConfig
    from crawler.frontier.node.membership import Membership
    from crawler.frontier.node.progress import Progress
    from crawler.frontier.node.redislink import RedisLink
    from crawler.frontier.servergates import GateReturns
    from crawler.frontier.store.roundtrip import Flushed, Lease, Pending, PopOrder
    from crawler.frontier.store.store import FrontierStore

logger = logging.getLogger(__name__)

# Longest an acknowledgement waits for a pop to carry it to Redis.
ACK_DELAY = 0.01


class Exchange:
    """Requests to push, leases to acknowledge and the pop, written together."""

    def __init__(  # noqa: PLR0913 (keyword-only: built whole, each is needed)
        self,
        crawler: Crawler,
        config: FrontierConfig,
        *,
        delays: HostDelays,
        store: FrontierStore,
        membership: Membership,
        link: RedisLink,
        progress: Progress,
        link_credits: LinkCredits | None = None,
        gate_returns: GateReturns | None = None,
    ) -> None:
        assert crawler.stats is not None  # Scrapy's type: set once the crawler is built
        assert crawler.spider is not None  # the scheduler is built for a spider
        self._crawler = crawler
        self._stats = crawler.stats
        self._spider: Spider = crawler.spider
        self._push_batch = config.push_batch
        self._duplicates = DuplicateLog(crawler)
        self._admission = Admission(
            crawler,
            crawler.spider,
            config,
            delays.run_settings,
            on_duplicate=self._duplicates.found,
        )
        self._delays = delays
        self._store = store
        self._membership = membership
        self._link = link
        self._progress = progress
        self._link_credits = link_credits
        self._gate_returns = gate_returns  # POLITENESS_KEY = ip | domain
        self._importance = config.importance is not None
        self._leases = OwnLeases()
        self._acks = AckGate(crawler, self._lease_done)
        self._requests: list[Pending] = []
        self._done: list[OwnLease] = []  # released by the engine, ack not written
        self.trips = 0  # round trips written (FrontierWork.trips)
        # The request enqueue is answering for, and whether Redis refused it.
        self._asking: Request | None = None
        self._asking_refused = False
        self._timer: CallLaterResult | None = None
        self._once = OnceLogger(logger, crawler)
        self._damage_counted = 0  # of the store's bad_entries, in the stats already
        # Plain seeds admitted without a Request each (enqueue_plain_seeds).
        self._plain_seeds = self._admission.takes_plain_seeds and plainurl.is_default(
            crawler.request_fingerprinter
        )
        self._seed_entry = codec.plain_get_entries(self._spider, {REVIVE: True})
        # Bulk seeding's write under way on its own thread (write_behind), and the
        # batch it writes.
        self._writer: ThreadPoolExecutor | None = None
        self._behind: tuple[Future[Flushed], list[Pending]] | None = None

    def __bool__(self) -> bool:
        return bool(self._requests or self._done or self._behind)  # anything to write

    @property
    def buffered(self) -> int:
        """Requests admitted and not written yet (a write under way included)."""
        behind = len(self._behind[1]) if self._behind is not None else 0
        return len(self._requests) + behind

    def own_leases(self) -> int:
        return len(self._leases.leases())  # requests this node's engine works on

    # --- what the scheduler calls --------------------------------------------------------

    def enqueue(self, request: Request) -> bool:
        """Admit *request*; write the buffer now if it holds a push batch or
        *request* replaces a lease (a retry or redirect: its lease goes with it).
        Whether *request* was queued: not if refused here (in importance order a
        link pushed before still counts as an in-link), or found a duplicate by a
        write within this call."""
        replaced = self._leases.replaced(request)
        pending = self._admission.admit(request)
        if pending is not None:
            self._requests.append(pending)
        refused = False
        if replaced is not None:
            refused = self._write(time.time(), [replaced], asking=request)
        elif len(self._requests) >= self._push_batch:
            refused = self._write(time.time(), asking=request)
        return pending is not None and not refused

    def enqueue_plain_seeds(self, urls: Sequence[str]) -> int:
        """Admit plain-URL seeds (each as ``Request`` keeps it: ``request_url``),
        each as ``enqueue`` would ``Request(url, meta={REVIVE: True})``, buffered
        for the next write (the seed intake's, one push call a shard for its whole
        batch); how many were admitted.

        Issue 27: with Scrapy's own fingerprinter and not in importance order no
        Request is built; otherwise each seed takes the Request path."""
        if not self._plain_seeds:
            return sum(self.enqueue(Request(url, meta={REVIVE: True})) for url in urls)
        admitted = 0
        for url in urls:
            pending = self._admission.admit_plain_seed(
                url, plainurl.get_fingerprint(url), self._seed_entry
            )
            if pending is not None:
                self._requests.append(pending)
                admitted += 1
        return admitted

    def pop(self, now: float, order: PopOrder | None) -> Request | None:
        """Write what is pending, then pop as *order* says (if any): the request
        popped, under this node's own lease; None if none, or a bad entry."""
        popped = self._flush(now, pop=order)
        return None if popped is None else self._leased_request(*popped, now)

    def sweep(self) -> None:
        """Acks for the requests the engine is through with, to go with the next trip."""
        self._acks.sweep()

    def stop(self) -> None:
        """The engine is through: the requests it finished are acked, not requeued."""
        self._acks.stop()
        if self._timer is not None:
            self._timer.cancel()

    def close(self, now: float) -> None:
        """Write what is pending and give back this node's own leases (raises if
        Redis fails: see ``closed_without_redis``)."""
        try:
            self._flush(now)
        finally:
            if self._writer is not None:
                self._writer.shutdown()
                self._writer = None
        self._admission.count_duplicates(0)  # the last ones found locally
        if leases := self._leases.leases():
            released = self._store.requeue(now, leases)
            self._stats.inc_value("frontier/leases_released", released)
            self._leases.clear()

    # --- what the heartbeat calls (FrontierWork) -----------------------------------------

    def leases_in_hand(self) -> list[Lease]:
        """Own leases, and those done but not yet acknowledged (Redis was away)."""
        return [*self._leases.leases(), *(own.lease for own in self._done)]

    def write_pending(self, now: float) -> None:
        """Write what is buffered (raises if Redis fails)."""
        self._flush(now)

    def write_behind(self, now: float) -> None:
        """Start writing the requests buffered on a thread of its own, and return:
        bulk seeding (issue 27) admits its next batch while Redis runs this one.

        The write started before is finished first, so one is under way at most, and
        every other write finishes it before its own (``_flush``): the round trip's
        order stays as it was. What a failed write took is put back (raises as
        ``write_pending`` does)."""
        self._finish_behind()
        if not self._requests:
            return
        if self._writer is None:
            self._writer = ThreadPoolExecutor(1, thread_name_prefix="frontier-seeds")
        batch, self._requests = self._requests, []
        future = self._writer.submit(self._store.flush, batch, [], now)
        self._behind = (future, batch)

    def _finish_behind(self) -> None:
        """Wait for the write ``write_behind`` started, and count what it did."""
        if self._behind is None:
            return
        future, batch = self._behind
        self._behind = None
        try:
            flushed = future.result()
        except Exception:
            self._requests = batch + self._requests
            raise
        self._written(batch, flushed)

    def count_damage(self) -> None:
        """Add what the store found damaged (and set aside) to frontier/bad_entries."""
        if found := self._store.shards.bad_entries - self._damage_counted:
            self._stats.inc_value("frontier/bad_entries", found)
            self._damage_counted = self._store.shards.bad_entries

    # --- the round trip ------------------------------------------------------------------

    def _flush(
        self, now: float, done: Sequence[OwnLease] = (), pop: PopOrder | None = None
    ) -> tuple[Lease, bytes] | None:
        """Push the buffer, acknowledge the leases done, then *pop*: one round trip.

        Returns the popped lease and entry, if a pop was asked for and found one.
        """
        self._finish_behind()
        done = [*self._done, *done]
        in_links = self._take_in_links(now)
        if not self._requests and not done and pop is None and not in_links:
            return None
        batch, self._requests, self._done = self._requests, [], []
        acks = [self._ack(own, now) for own in done]
        try:
            flushed = self._store.flush(batch, acks, now, pop, in_links)
        except Exception:
            self._requests, self._done = batch + self._requests, done + self._done
            if in_links and self._admission.in_links is not None:
                self._admission.in_links.put_back(in_links)
            raise
        if self._gate_returns is not None:
            self._gate_returns.send()
        self._written(batch, flushed)
        if flushed.fenced and pop is not None:
            self._membership.lost(pop.shard)  # another node took it: stop asking
        return flushed.popped

    def _write(
        self, now: float, done: Sequence[OwnLease] = (), asking: Request | None = None
    ) -> bool:
        """``_flush``, unless Redis is away: what is not written stays buffered, to
        go with the next round trip that succeeds. Whether Redis found *asking* (a
        request in this write) a duplicate: its caller answers for it, so no
        ``request_dropped`` is sent here for it."""
        if not self._link.usable(now):
            self._done.extend(done)
            return False
        self._asking, self._asking_refused = asking, False
        try:
            self._flush(now, done)
        except REDIS_ERRORS as exc:
            self._link.failed(exc, now)  # _flush put back what it took
        finally:
            self._asking = None
        return self._asking_refused

    def _written(self, batch: Sequence[Pending], flushed: Flushed) -> None:
        """Count what a write did, and drop loudly what Redis refused of *batch*."""
        self.trips += 1
        self._count(flushed)
        self._drop_duplicates(batch, flushed.new, flushed.over_budget)

    def _drop_duplicates(
        self,
        batch: Sequence[Pending],
        new: Sequence[bool],
        over_budget: Sequence[bool] = (),
    ) -> None:
        """Requests Redis found already seen: dropped loudly (see ``duplicates``);
        new ones over their host's budget: counted as that trap."""
        over = iter(over_budget)
        for pending, is_new in zip(batch, new, strict=True):
            cut = next(over, False)
            if is_new or pending.request is None:
                continue
            if cut:
                self._over_budget(pending.request)
            elif pending.request is self._asking:
                self._asking_refused = True
                self._duplicates.found(pending.request)
            else:
                self._duplicates.dropped(pending.request)

    def _over_budget(self, request: Request) -> None:
        """A new link of a host whose budget is spent (FRONTIER_HOST_MAX_PAGES)."""
        if request is self._asking:
            self._asking_refused = True
        self._stats.inc_value("traps/host_budget")
        self._crawler.signals.send_catch_log(
            trap_cut, url=request.url, rule="host_budget"
        )

    def _lease_done(self, request: Request, at: float | None = None) -> None:
        """Queue the ack: the engine asks for the next request right after a request
        is done, and that pop carries the ack (its links were buffered before it).
        A timer writes it if no pop comes soon."""
        own = self._leases.done(request, at)
        if own is None:
            return
        self._done.append(own)
        if self._timer is None:
            self._timer = call_later(ACK_DELAY, self._write_pending)

    def _write_pending(self) -> None:
        """The ack timer: writes what no engine loop has written since."""
        self._timer = None
        self._write(time.time())

    def _ack(self, own: OwnLease, now: float) -> Ack:
        """How *own*'s lease is released: the host's delay, its fate and whether the
        host was left untouched (``OwnLease``), and its fingerprint if it failed
        for good (kept for ``scrapy frontier retry``)."""
        fingerprint = ""
        if own.fate in FAILED_FATES and own.request is not None:
            fingerprinter = self._crawler.request_fingerprinter
            fingerprint = fingerprinter.fingerprint(own.request).hex()
        delay = self._delays.delay_for(own.host, now=now)
        if self._gate_returns is not None and (gate := own.server_gate):
            done_at = own.lease.done_at or now
            self._gate_returns.add(Release(*gate, until=done_at + delay))
        return Ack(
            own.lease, delay, own.fate, fingerprint, own.untouched, own.not_before
        )

    def _take_in_links(self, now: float) -> dict[int, list[dict[str, str]]]:
        """Importance order: the in-links to send with this trip, if they are due
        (those the spider did not yield again included), by shard."""
        in_links = self._admission.in_links
        if in_links is None:
            return {}
        if self._link_credits is not None:
            for url, credit in self._link_credits.take():
                self._admission.in_link(url, credit)
        if not in_links.due(now):
            return {}
        self._stats.inc_value("frontier/in_links", len(in_links))
        return in_links.take(now)

    def _count(self, flushed: Flushed) -> None:
        accepted = sum(flushed.new)
        for key in (
            "scheduler/enqueued",
            "scheduler/enqueued/redis",
            "frontier/enqueued",
        ):
            self._stats.inc_value(key, accepted)
        over_budget = sum(flushed.over_budget)
        self._admission.count_duplicates(len(flushed.new) - accepted - over_budget)
        if flushed.shortened:
            self._stats.inc_value("frontier/depth_shortened", flushed.shortened)
        self._stats.inc_value("frontier/acked", flushed.acked)
        self._progress.acked(flushed.acked)
        self.count_damage()

    def _leased_request(self, lease: Lease, entry: bytes, now: float) -> Request | None:
        """The request of a popped entry, under an own lease and tracked till the
        engine is through with it; None for an entry this crawler did not write."""
        try:
            request = codec.decode(entry, self._spider, lease.host)
        except codec.BadEntryError as exc:
            self._drop_bad_entry(lease, entry, exc, now)
            return None
        self._leases.take(lease, request)
        self._acks.track(request)
        if lease.reparse:
            request.meta[REPARSE] = True
        if self._importance:
            _ranked(request, lease)
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
        """Count and skip an entry this crawler did not write; it is never executed.
        Its shard counted it as queued when it was popped: its counts are set
        again before the crawl may end."""
        self._store.suspect(lease.shard)
        self._once.event(
            "frontier/bad_entries",
            "Skipped a queue entry that is not a frontier request (%(error)s): "
            "%(entry)r; further ones are only counted in frontier/bad_entries",
            {"error": error, "entry": entry[:200]},
        )
        self._flush(now, [OwnLease(lease, "")])


def _ranked(request: Request, lease: Lease) -> None:
    """A request popped in importance order: its importance, backlink importance
    and in-links."""
    if lease.importance is not None:
        request.meta[IMPORTANCE] = lease.importance
        request.meta[BACKLINKS] = lease.backlinks
        request.meta[INLINKS] = lease.inlinks
