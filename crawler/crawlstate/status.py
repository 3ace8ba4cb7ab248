"""The state of a crawl as ``scrapy frontier status`` shows it, read from Redis.

Reading takes two pipelined round trips of single-key commands (so it works on a
Redis Cluster): the crawl's meta hash and its start, the registry, the control hash,
the seeds list and each shard's counters with its next waiting host and next held
request, then one ``EXISTS`` per node heartbeat. Each shard's figures are kept
(``ShardFigures``) so a node's idle reason (``crawler.policy.progress``) is told from
the shards it owns. The state is
``no such crawl`` (no meta hash: no node ever opened it), ``finished`` (nothing
queued, in flight, held or seeded, whether nodes are still alive, idle, or not),
``paused`` (work left, paused), ``running`` (work left and a node alive, or a node
that has done nothing yet: it is starting) or ``stopped`` (work left, no node alive:
a rerun resumes it). ``scrapy frontier status`` and the dashboard both read it here,
with its ``totals()``. Nothing Redis holds makes it raise: a value that is not what
this crawler writes counts as absent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from crawler.crawlstate.controls import Control, read_control
from crawler.crawlstate.nodetable import NodeStatus, node_status
from crawler.crawlstate.readers import (
    alive,
    decoded,
    finite_number,
    mapping,
    whole_count,
)
from crawler.policy.fates import FAILED_FATES, FATES
from crawler.policy.order import TIERS_PER_DEPTH
from crawler.policy.progress import CrawlWork, NodeWork, idle_reason

if TYPE_CHECKING:
    from collections.abc import Sequence

    import redis

    from crawler.crawlstate.keys import CrawlKeys

# Commands per shard in the first pipeline, in the order _add_shard reads them.
_SHARD_COMMANDS = 8
# Commands before the shards' in the first pipeline.
_GLOBAL_COMMANDS = 5
# Fields of a shard's counters hash: one per final fate (``fate:<fate>``, counted
# when a lease is acknowledged with it) and URLs held for a later try (a gauge).
FATE_FIELD = "fate:"
HELD_FIELD = "held"
# Field of the meta hash: when (epoch seconds) the crawl's first node opened it.
STARTED_FIELD = "started"


@dataclass(frozen=True, slots=True)
class ShardFigures:
    """One shard: hosts ready and waiting, requests in flight and held, when (epoch
    seconds) its next waiting host is ready and its next held request is due, and
    its owner's id (None: no owner key)."""

    ready: int = 0
    waiting: int = 0
    in_flight: int = 0
    held: int = 0
    next_ready: float | None = None
    next_held: float | None = None
    owner: str | None = None


@dataclass(slots=True)
class CrawlStatus:
    """Totals over every shard, the nodes, and the controls in force."""

    prefix: str
    shards: int
    nodes: list[NodeStatus] = field(default_factory=list)
    control: Control = field(default_factory=Control)
    seeds: int = 0
    queued: int = 0
    in_flight: int = 0
    ready: int = 0
    waiting: int = 0
    by_depth: dict[int, int] = field(default_factory=dict)
    orphans: list[int] = field(default_factory=list)
    exists: bool = True
    acked: int = 0
    held: int = 0
    fates: dict[str, int] = field(default_factory=dict)
    started: float | None = None
    by_shard: list[ShardFigures] = field(default_factory=list)

    @property
    def state(self) -> str:
        """``no such crawl``, ``paused``, ``running``, ``finished`` or ``stopped``.

        A live node does not make a crawl with nothing left to do ``running``: a
        node kept alive (FRONTIER_CLOSE_WHEN_DRAINED=False, revisits) idles, and the
        crawl is ``finished`` until new work comes. Only a node that has done
        nothing yet keeps it ``running`` (starting: its seeds may not be queued).
        """
        if not self.exists:
            return "no such crawl"
        starting = self.alive > 0 and not self.acked
        if not (self.work_left or starting):
            return "finished"
        if self.control.paused:
            return "paused"
        return "running" if self.alive else "stopped"

    @property
    def work_left(self) -> bool:
        """Whether anything is queued, in flight, held for a later try or seeded."""
        return bool(self.queued or self.in_flight or self.held or self.seeds)

    @property
    def next_held(self) -> float | None:
        """When (epoch seconds) the crawl's next held request is due, if any."""
        return min((s.next_held for s in self.by_shard if s.next_held), default=None)

    def node_work(self, shards: Sequence[int]) -> NodeWork:
        """What *shards* (one node's) hold, summed."""
        mine = [self.by_shard[s] for s in shards if 0 <= s < len(self.by_shard)]
        return NodeWork(
            shards=len(mine),
            ready=sum(s.ready for s in mine),
            waiting=sum(s.waiting for s in mine),
            in_flight=sum(s.in_flight for s in mine),
            held=sum(s.held for s in mine),
            next_ready=min((s.next_ready for s in mine if s.next_ready), default=None),
            next_held=min((s.next_held for s in mine if s.next_held), default=None),
        )

    def idle_reason(self, shards: Sequence[int], *, now: float) -> str | None:
        """Why the node owning *shards* fetches nothing now (None: it has work)."""
        crawl = CrawlWork(
            hosts=self.ready + self.waiting,
            held=self.held,
            work_left=self.work_left,
            paused=self.control.paused,
        )
        return idle_reason(self.node_work(shards), crawl, now=now)

    @property
    def alive(self) -> int:
        """How many registered nodes are alive."""
        return sum(node.alive for node in self.nodes)

    def totals(self) -> Totals:
        """URLs done (by fate), failed, held, queued, in flight and seeded: what
        ``scrapy frontier status`` and the dashboard both show."""
        failed: dict[str, int] = {
            fate: self.fates[fate]
            for fate in FATES
            if fate in FAILED_FATES and self.fates.get(fate)
        }
        # URLs with a final fate; a lease released to hold its request for a later
        # try counts in ``acked`` but is not done. Without fate counters (an earlier
        # version's crawl), the acks are all there is.
        recorded = sum(self.fates.values())
        return Totals(
            done=recorded if recorded else self.acked,
            fetched=self.fates.get("fetched", 0),
            redirected=self.fates.get("redirected", 0),
            failed=sum(failed.values()),
            failed_by_fate=failed,
            by_fate=not self.acked or any(self.fates.values()),
            held=self.held,
            queued=self.queued,
            in_flight=self.in_flight,
            seeds=self.seeds,
        )


@dataclass(frozen=True, slots=True)
class Totals:
    """The crawl's totals over every shard. *by_fate* is False when the nodes kept
    no fate counters (a crawl written by an earlier version): then only *done*
    counts."""

    done: int
    fetched: int
    redirected: int
    failed: int
    failed_by_fate: dict[str, int]
    by_fate: bool
    held: int
    queued: int
    in_flight: int
    seeds: int


def read_status(client: redis.Redis, keys: CrawlKeys, shards: int) -> CrawlStatus:
    """The crawl's state: two round trips."""
    pipe = client.pipeline(transaction=False)
    pipe.exists(keys.meta)
    pipe.hget(keys.meta, STARTED_FIELD)
    pipe.hgetall(keys.nodes)
    pipe.hgetall(keys.control)
    pipe.llen(keys.seeds)
    for shard in range(shards):
        shard_keys = keys.shard(shard)
        pipe.hgetall(shard_keys.counters)
        pipe.hgetall(shard_keys.outstanding)
        pipe.zcard(shard_keys.ready)
        pipe.zcard(shard_keys.waiting)
        pipe.zcard(shard_keys.leases)
        pipe.get(shard_keys.owner)
        pipe.zrange(shard_keys.waiting, 0, 0, withscores=True)
        pipe.zrange(shard_keys.held, 0, 0, withscores=True)
    replies = pipe.execute(raise_on_error=False)
    registry = mapping(replies[2])
    status = CrawlStatus(keys.prefix, shards, control=read_control(mapping(replies[3])))
    status.exists = replies[0] == 1
    status.started = _seconds(replies[1])
    status.seeds = whole_count(replies[4])
    for shard in range(shards):
        start = _GLOBAL_COMMANDS + shard * _SHARD_COMMANDS
        status.by_shard.append(
            _add_shard(status, replies[start : start + _SHARD_COMMANDS])
        )
    owners = [figures.owner for figures in status.by_shard]
    entries = {decoded(node): raw for node, raw in registry.items()}
    living = alive(client, keys, {*entries, *(o for o in owners if o is not None)})
    status.nodes = [
        node_status(node, entries[node], living[node]) for node in sorted(entries)
    ]
    status.orphans = [s for s, o in enumerate(owners) if o is None or not living[o]]
    return status


def _add_shard(status: CrawlStatus, replies: Sequence[Any]) -> ShardFigures:
    """Add one shard's counters to *status*; the shard's own figures."""
    counters, outstanding, ready, waiting, leases, owner, first, held = replies
    held_before = status.held
    _add_counters(status, mapping(counters))
    status.ready += whole_count(ready)
    status.waiting += whole_count(waiting)
    status.in_flight += whole_count(leases)
    for level, count in mapping(outstanding).items():
        if level.isdigit():
            depth = int(level) // TIERS_PER_DEPTH
            status.by_depth[depth] = status.by_depth.get(depth, 0) + whole_count(count)
    return ShardFigures(
        ready=whole_count(ready),
        waiting=whole_count(waiting),
        in_flight=whole_count(leases),
        held=status.held - held_before,
        next_ready=_first_score(first),
        next_held=_first_score(held),
        owner=decoded(owner) if isinstance(owner, bytes) else None,
    )


def _first_score(reply: object) -> float | None:
    """The score (ms) of a ``ZRANGE 0 0 WITHSCORES`` reply in seconds; None for an
    empty set or anything this crawler did not write."""
    if not isinstance(reply, list) or not reply:
        return None
    entry = reply[0]
    if not isinstance(entry, tuple | list) or len(entry) != 2:
        return None
    score = finite_number(entry[1])
    return None if score is None else score / 1000


def _seconds(reply: object) -> float | None:
    """A time Redis holds as text (epoch seconds); None if absent or not one."""
    try:
        value = float(reply) if isinstance(reply, bytes) else None
    except ValueError:
        return None
    return finite_number(value)


def _add_counters(status: CrawlStatus, counters: dict[bytes, bytes]) -> None:
    """Add one shard's ``counters`` hash: queued, acked, held and the fates."""
    for raw_name, value in counters.items():
        name = decoded(raw_name)
        if name == "queued":
            status.queued += whole_count(value)
        elif name == "acked":
            status.acked += whole_count(value)
        elif name == HELD_FIELD:
            status.held += whole_count(value)
        elif name.startswith(FATE_FIELD) and name[len(FATE_FIELD) :] in FATES:
            fate = name[len(FATE_FIELD) :]
            status.fates[fate] = status.fates.get(fate, 0) + whole_count(value)
