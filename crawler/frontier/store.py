"""The frontier's Redis side: every read and write of crawl state goes through here.

Each method is one round trip (a pipeline of script calls, one per shard touched).
Every script reply carries its shard's summary, kept in ``summaries`` so the
scheduler chooses a shard without asking Redis again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from crawler.frontier.dedup import shard_layouts
from crawler.frontier.keys import SCHEMA_VERSION, CrawlKeys
from crawler.frontier.scripts import Call, script_runner
from crawler.policy.order import LEVEL_WEIGHT

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Sequence

    from redis import Redis

    from crawler.frontier.config import FrontierConfig

logger = logging.getLogger(__name__)

# Waiting hosts one script call moves to ready at most (bounds a call's work).
PROMOTE_LIMIT = 100
REQUEUE_LIMIT = 500


class SchemaMismatchError(RuntimeError):
    """The crawl's keys were written by an incompatible version of the frontier."""


@dataclass(slots=True)
class Summary:
    """What a shard's last reply said: its best ready score, when a host wakes (ms)."""

    best: float | None = None
    wake: float | None = None
    lowest_level: int | None = None


@dataclass(frozen=True, slots=True)
class Pending:
    """A request accepted locally, waiting to be pushed to its shard."""

    shard: int
    host: str
    level: int
    dedup: str | bytes
    entry: str


@dataclass(frozen=True, slots=True)
class PopOrder:
    """Which shard to lease a request from, for which node, under which limits."""

    shard: int
    node_id: str
    default_delay: float
    deepest_level: int | None = None


@dataclass(frozen=True, slots=True)
class Flushed:
    """What a flush did: whether each pushed request was new, how many leases were
    still held when acked, the request popped, if one was asked for, and whether
    the pop was refused because another node owns the shard now (fencing)."""

    new: list[bool]
    acked: int
    popped: tuple[Lease, bytes] | None = None
    fenced: bool = False


@dataclass(frozen=True, slots=True)
class Lease:
    """A request handed out to this node: its shard and the lease id there, and,
    once done, when its download ended (the host's delay counts from then, not from
    the ack, which waits for the page's record)."""

    shard: int
    lease_id: str
    done_at: float | None = field(default=None, compare=False)

    def __str__(self) -> str:
        return f"{self.shard}:{self.lease_id}"


class FrontierStore:
    def __init__(self, client: Redis, config: FrontierConfig) -> None:
        self.client = client
        self.config = config
        self.crawl_keys = CrawlKeys(config.prefix)
        self.keys = [self.crawl_keys.shard(s) for s in range(config.shards)]
        self.summaries = [Summary() for _ in range(config.shards)]
        self._scripts = script_runner(client)

    def prepare(self, now: float) -> None:
        """Check the schema version, write Bloom layouts, load scripts and summaries."""
        if self.config.reset:
            self.delete_all()
        meta = self.crawl_keys.meta
        self.client.hsetnx(meta, "schema_version", SCHEMA_VERSION)
        found = self.client.hget(meta, "schema_version")
        if found != SCHEMA_VERSION.encode():
            raise SchemaMismatchError(
                f"crawl {self.config.prefix!r} in Redis has schema version {found!r}, "
                f"this crawler writes {SCHEMA_VERSION}: use another "
                "FRONTIER_KEY_PREFIX or start afresh with -s FRONTIER_RESET=1"
            )
        if self.config.dedup.mode == "bloom":
            self._write_bloom_layouts()
        self._scripts.load()
        self.promote(range(self.config.shards), now)

    def flush(
        self,
        batch: Sequence[Pending],
        leases: Sequence[tuple[Lease, float]],
        now: float,
        pop: PopOrder | None = None,
    ) -> Flushed:
        """Push *batch*, ack *leases* (each with its host's delay), then *pop*: one trip.

        Pushes go first, so the links of a page are queued before its lease is
        released; the pop goes last, so it sees the hosts the acks made ready.
        """
        by_shard: dict[int, list[Pending]] = {}
        for pending in batch:
            by_shard.setdefault(pending.shard, []).append(pending)
        calls = [self._push_call(s, items, now) for s, items in by_shard.items()]
        calls += [self._ack_call(lease, delay, now) for lease, delay in leases]
        pop_calls = [self._pop_call(pop, now)] if pop is not None else []
        replies = self._scripts.run(calls + pop_calls)
        popped, fenced = self._popped(pop, replies.pop()) if pop else (None, False)
        for call, reply in zip(calls, replies, strict=True):
            self._remember(call.keys.shard, reply[1:])
        pushes = len(by_shard)
        flags = {
            call.keys.shard: iter(reply[0])
            for call, reply in zip(calls[:pushes], replies[:pushes], strict=True)
        }
        new = [next(flags[pending.shard]) == ord("1") for pending in batch]
        acked = sum(reply[0] for reply in replies[pushes:])
        return Flushed(new, acked, popped, fenced)

    def pop(self, order: PopOrder, now: float) -> tuple[Lease, bytes] | None:
        """Lease the best ready request of a shard: its lease and entry, or None."""
        return self.flush([], [], now, order).popped

    def _push_call(self, shard: int, items: list[Pending], now: float) -> Call:
        args: list[str | int | float | bytes] = [
            LEVEL_WEIGHT,
            _ms(now),
            self.config.host_concurrency,
            self.config.dedup.mode,
        ]
        for item in items:
            args += [item.host, item.level, item.dedup, item.entry]
        return Call("push", self.keys[shard], args)

    def _ack_call(self, lease: Lease, delay: float, now: float) -> Call:
        since = now if lease.done_at is None else min(now, lease.done_at)
        args: list[str | int | float | bytes] = [
            LEVEL_WEIGHT,
            _ms(since),
            self.config.host_concurrency,
            _ms(delay),
            lease.lease_id,
        ]
        return Call("ack", self.keys[lease.shard], args)

    def _pop_call(self, order: PopOrder, now: float) -> Call:
        args: list[str | int | float | bytes] = [
            LEVEL_WEIGHT,
            _ms(now),
            self.config.host_concurrency,
            _ms(now + self.config.lease_timeout),
            _ms(order.default_delay),
            PROMOTE_LIMIT,
            _score_limit(order.deepest_level),
            order.node_id,
        ]
        return Call("pop", self.keys[order.shard], args)

    def _popped(
        self, order: PopOrder, reply: list[Any]
    ) -> tuple[tuple[Lease, bytes] | None, bool]:
        """The lease and entry popped, if any, and whether the pop was fenced."""
        self._remember(order.shard, reply[2:])
        if reply[0] is None:
            return None, reply[1] == b"fenced"
        return (Lease(order.shard, str(reply[0])), reply[1]), False

    def requeue(self, now: float, leases: Iterable[Lease] = ()) -> int:
        """Put back *leases*, or every expired lease of every shard; how many."""
        ids: dict[int, list[str]] = {}
        for lease in leases:
            ids.setdefault(lease.shard, []).append(lease.lease_id)
        shards = list(ids) if ids else list(range(self.config.shards))
        base = [LEVEL_WEIGHT, _ms(now), self.config.host_concurrency, REQUEUE_LIMIT]
        calls = [
            Call("requeue", self.keys[s], [*base, *ids.get(s, [])]) for s in shards
        ]
        total = 0
        for shard, reply in zip(shards, self._scripts.run(calls), strict=True):
            total += reply[0]
            self._remember(shard, reply[1:])
        return total

    def leases_of(self, shards: Iterable[int]) -> list[Lease]:
        """Every lease of *shards*, whoever holds it."""
        shards = list(shards)
        pipe = self.client.pipeline(transaction=False)
        for shard in shards:
            pipe.zrange(self.keys[shard].leases, 0, -1)
        replies = pipe.execute() if shards else []
        return [
            Lease(shard, lease_id.decode("utf-8", "replace"))
            for shard, ids in zip(shards, replies, strict=True)
            for lease_id in ids
        ]

    def promote(self, shards: Iterable[int], now: float) -> None:
        """Move hosts whose delay ended to ready, and refresh the shards' summaries."""
        shards = list(shards)
        args = [LEVEL_WEIGHT, _ms(now), PROMOTE_LIMIT]
        calls = [Call("promote", self.keys[s], args) for s in shards]
        for shard, reply in zip(shards, self._scripts.run(calls), strict=True):
            self._remember(shard, reply)

    def best_shard(
        self, among: Collection[int], deepest_level: int | None = None
    ) -> int | None:
        """The shard of *among* whose best ready host has the lowest BFS score, if
        any is no deeper than *deepest_level*."""
        scored = [
            (s.best, i)
            for i, s in enumerate(self.summaries)
            if s.best is not None
            and i in among
            and (deepest_level is None or s.best // LEVEL_WEIGHT <= deepest_level)
        ]
        return min(scored)[1] if scored else None

    def lowest_level(self) -> int | None:
        """The lowest level with requests queued or leased, over every shard."""
        levels = [s.lowest_level for s in self.summaries if s.lowest_level is not None]
        return min(levels) if levels else None

    def due_shards(self, now: float) -> list[int]:
        """Shards with a waiting host whose delay has ended by *now*."""
        return [
            i
            for i, s in enumerate(self.summaries)
            if s.wake is not None and s.wake <= now
        ]

    def next_wake(self) -> float | None:
        """When the first waiting host of any shard becomes ready."""
        wakes = [s.wake for s in self.summaries if s.wake is not None]
        return min(wakes) if wakes else None

    def has_work(self) -> bool:
        """Whether, as far as the last replies tell, any shard has requests queued."""
        return any(s.best is not None or s.wake is not None for s in self.summaries)

    def renew(self, leases: Iterable[Lease], now: float) -> None:
        """Push the expiry of leases this node still works on."""
        expiry = _ms(now + self.config.lease_timeout)
        by_shard: dict[int, list[str]] = {}
        for lease in leases:
            by_shard.setdefault(lease.shard, []).append(lease.lease_id)
        if not by_shard:
            return
        pipe = self.client.pipeline(transaction=False)
        for shard, ids in by_shard.items():
            pipe.zadd(self.keys[shard].leases, dict.fromkeys(ids, expiry), xx=True)
        pipe.execute()

    def totals(self) -> tuple[int, int]:
        """Requests queued and leased in the whole crawl, over every shard."""
        pipe = self.client.pipeline(transaction=False)
        for keys in self.keys:
            pipe.hget(keys.counters, "queued")
            pipe.zcard(keys.leases)
        replies = pipe.execute()
        queued = sum(int(r or 0) for r in replies[0::2])
        return queued, sum(replies[1::2])

    def hosts_ready(self) -> int:
        """Hosts that may be fetched now, over every shard."""
        pipe = self.client.pipeline(transaction=False)
        for keys in self.keys:
            pipe.zcard(keys.ready)
        return sum(pipe.execute())

    def delete_all(self) -> int:
        """Delete every key of the crawl; how many."""
        deleted = 0
        batch: list[bytes] = []
        for key in self.client.scan_iter(match=self.crawl_keys.pattern, count=1000):
            batch.append(key)
            if len(batch) >= 1000:
                deleted += self.client.unlink(*batch)
                batch.clear()
        if batch:
            deleted += self.client.unlink(*batch)
        self.summaries = [Summary() for _ in range(self.config.shards)]
        return deleted

    def _write_bloom_layouts(self) -> None:
        layouts = shard_layouts(self.config.dedup, self.config.shards)
        fields: dict[str, int] = {"filters": 1}
        for index, layout in enumerate(layouts):
            fields |= {
                f"bits:{index}": layout.bits,
                f"hashes:{index}": layout.hashes,
                f"cap:{index}": layout.capacity,
            }
        pipe = self.client.pipeline(transaction=False)
        for keys in self.keys:
            for name, value in fields.items():
                pipe.hsetnx(keys.seen, name, value)
        pipe.execute()

    def _remember(self, shard: int, state: Sequence[bytes | int | None]) -> None:
        best, wake, lowest_level = state
        self.summaries[shard] = Summary(
            float(best) if best is not None else None,
            float(wake) / 1000 if wake is not None else None,
            int(lowest_level) if lowest_level is not None else None,
        )


def _score_limit(deepest_level: int | None) -> int | str:
    """The highest ready-set score of a request at *deepest_level* or above."""
    if deepest_level is None:
        return "+inf"
    return (deepest_level + 1) * LEVEL_WEIGHT - 1


def _ms(seconds: float) -> int:
    return round(seconds * 1000)
