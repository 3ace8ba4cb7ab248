"""The frontier's Redis side: every read and write of crawl state goes through here.

Each method is one round trip (a pipeline of script calls, one per shard touched).
Every script reply carries its shard's summary, kept in ``summaries`` so the
scheduler chooses a shard without asking Redis again.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from redis.exceptions import ResponseError

from crawler.crawlstate.keys import SCHEMA_VERSION, CrawlKeys
from crawler.frontier.dedup import shard_layouts
from crawler.frontier.repair import ShardRepair
from crawler.frontier.scripts import Call, script_runner
from crawler.policy.order import (
    TIERS_PER_DEPTH,
    level_of_score,
    may_be_stranded,
    queue_class,
    score_limit,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Sequence

    from redis import Redis
    from redis.client import Pipeline

    from crawler.crawlstate.keys import Keys
    from crawler.frontier.frontierconfig import FrontierConfig

logger = logging.getLogger(__name__)

# Waiting hosts one script call moves to ready at most (bounds a call's work).
PROMOTE_LIMIT = 100
REQUEUE_LIMIT = 500
# Deepest provisional depth looked at when DEPTH_LIMIT is 0 (no limit).
MAX_DEPTH = 64


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
    """A request accepted locally, waiting to be pushed to its shard: queued, or held
    until *hold_until* (epoch seconds) when it is to be tried again later. *revive*
    is the fingerprint (hex) of a seed that is queued again if it failed for good.
    *depth_key* names it while a shorter path to it may still be found (depth
    repair, see the push script). *priority* is its ``Request.priority``."""

    shard: int
    host: str
    level: int
    dedup: str | bytes
    entry: str
    hold_until: float | None = None
    revive: str = ""
    depth_key: str = ""
    priority: int = 0


class Ack(NamedTuple):
    """A lease done: the host's delay from now, and what became of the request.

    *fate* is empty for a lease replaced by a retry of its request; *fingerprint*
    (hex) is given for a request that failed for good, which is then kept for
    ``scrapy frontier retry``; *untouched* means nothing reached the host (robots.txt
    forbade the URL), so the host's delay is not spent on it.
    """

    lease: Lease
    delay: float
    fate: str = ""
    fingerprint: str = ""
    untouched: bool = False


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
    the pop was refused because another node owns the shard now (fencing), and
    how many pushes were requests found again by a shorter path (depth repair)."""

    new: list[bool]
    acked: int
    popped: tuple[Lease, bytes] | None = None
    fenced: bool = False
    shortened: int = 0


@dataclass(frozen=True, slots=True)
class Lease:
    """A request handed out to this node: its shard and the lease id there; whether
    it is a page fetched too deep whose links are to be followed again; and, once
    done, when its download ended (the host's delay counts from then, not from the
    ack, which waits for the page's record)."""

    shard: int
    lease_id: str
    reparse: bool = field(default=False, compare=False)
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
        self._repair = ShardRepair(client, self._scripts, config, self.keys)
        # Values found damaged (not written by the crawler) and set aside or fixed.
        self.bad_entries = 0
        self._damage_logged = False

    def prepare(self, now: float) -> None:
        """Check the schema version, repair every shard, write Bloom layouts, load
        scripts and summaries."""
        if self.config.reset:
            self.delete_all()
        self._check_schema()
        self._scripts.load()
        for shard, reply in self._repair.fixed(range(self.config.shards), now):
            self._remember(shard, reply[1:], int(reply[0]))
        if self.config.dedup.mode == "bloom":
            self._write_bloom_layouts(self.keys)
        self.promote(range(self.config.shards), now)

    def _check_schema(self) -> None:
        """Refuse a crawl written by another schema version; a meta key or version
        the crawler did not write (not a hash, not a number) is replaced."""
        meta = self.crawl_keys.meta
        try:
            found = self.client.hget(meta, "schema_version")
        except ResponseError:  # WRONGTYPE: not a hash
            self.client.delete(meta)
            self.damaged(1, f"{meta} was not a hash: deleted")
            found = None
        if found is not None and not found.isdigit():
            self.client.hdel(meta, "schema_version")
            self.damaged(1, f"{meta} held schema version {found[:50]!r}: replaced")
        self.client.hsetnx(meta, "schema_version", SCHEMA_VERSION)
        found = self.client.hget(meta, "schema_version")
        if found != SCHEMA_VERSION.encode():
            raise SchemaMismatchError(
                f"crawl {self.config.prefix!r} in Redis has schema version {found!r}, "
                f"this crawler writes {SCHEMA_VERSION}: use another "
                "FRONTIER_KEY_PREFIX or start afresh with -s FRONTIER_RESET=1"
            )
        self.client.hsetnx(meta, "frontier_order", self.config.order)
        stored = self.client.hget(meta, "frontier_order")
        order = stored.decode(errors="replace") if isinstance(stored, bytes) else ""
        if order != self.config.order:  # queued classes rank by the order
            raise SchemaMismatchError(
                f"crawl {self.config.prefix!r} in Redis was queued with "
                f"FRONTIER_ORDER={order[:20]}, not {self.config.order}: set it back, "
                "or start afresh with -s FRONTIER_RESET=1"
            )

    def flush(
        self,
        batch: Sequence[Pending],
        acks: Sequence[Ack | tuple[Lease, float]],
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
        calls += [self._ack_call(Ack(*ack), now) for ack in acks]
        pop_calls = [self._pop_call(pop, now)] if pop is not None else []
        replies = self._scripts.run(calls + pop_calls, self._repair_shard)
        popped, fenced = self._popped(pop, replies.pop()) if pop else (None, False)
        for call, reply in zip(calls, replies, strict=True):
            self._remember(call.keys.shard, reply[1:])
        pushes = len(by_shard)
        flags = {
            call.keys.shard: iter(reply[0])
            for call, reply in zip(calls[:pushes], replies[:pushes], strict=True)
        }
        marks = [next(flags[pending.shard]) for pending in batch]
        new = [mark != ord("0") for mark in marks]
        acked = sum(reply[0] for reply in replies[pushes:])
        shortened = marks.count(ord("2"))
        return Flushed(new, acked, popped, fenced, shortened)

    def pop(self, order: PopOrder, now: float) -> tuple[Lease, bytes] | None:
        """Lease the best ready request of a shard: its lease and entry, or None."""
        return self.flush([], [], now, order).popped

    def _push_call(self, shard: int, items: list[Pending], now: float) -> Call:
        args: list[str | int | float | bytes] = [
            self.config.order,
            _ms(now),
            self.config.host_concurrency,
            self.config.dedup.mode,
            self.lowest_depth() or 0,
            self.config.depth_limit if self.config.depth_limit > 0 else MAX_DEPTH,
            TIERS_PER_DEPTH,
            "1" if self.config.reparse_from_store else "0",
        ]
        for item in items:
            hold = "" if item.hold_until is None else _ms(item.hold_until)
            args += [item.host, queue_class(item.level, item.priority), item.dedup]
            args += [item.entry, hold, item.revive]
            args.append(item.depth_key)
        return Call("push", self.keys[shard], args)

    def _ack_call(self, ack: Ack, now: float) -> Call:
        done_at = ack.lease.done_at
        since = now if done_at is None else min(now, done_at)
        args: list[str | int | float | bytes] = [
            self.config.order,
            _ms(since),
            self.config.host_concurrency,
            _ms(ack.delay),
            ack.lease.lease_id,
            ack.fate,
            ack.fingerprint,
            "1" if ack.untouched else "0",
        ]
        return Call("ack", self.keys[ack.lease.shard], args)

    def _pop_call(self, order: PopOrder, now: float) -> Call:
        args: list[str | int | float | bytes] = [
            self.config.order,
            _ms(now),
            self.config.host_concurrency,
            _ms(now + self.config.lease_timeout),
            _ms(order.default_delay),
            PROMOTE_LIMIT,
            score_limit(order.deepest_level),
            order.node_id,
            TIERS_PER_DEPTH,
        ]
        return Call("pop", self.keys[order.shard], args)

    def _popped(
        self, order: PopOrder, reply: list[Any]
    ) -> tuple[tuple[Lease, bytes] | None, bool]:
        """The lease and entry popped, if any, and whether the pop was fenced."""
        self._remember(order.shard, reply[3:])
        if reply[0] is None:
            return None, reply[1] == b"fenced"
        return (
            Lease(order.shard, str(reply[0]), reparse=reply[2] == 1),
            reply[1],
        ), False

    def requeue(self, now: float, leases: Iterable[Lease] = ()) -> int:
        """Put back *leases*, or every expired lease of every shard; how many."""
        ids: dict[int, list[str]] = {}
        for lease in leases:
            ids.setdefault(lease.shard, []).append(lease.lease_id)
        shards = list(ids) if ids else list(range(self.config.shards))
        base: list[str | int] = [
            self.config.order,
            _ms(now),
            self.config.host_concurrency,
            REQUEUE_LIMIT,
        ]
        calls = [
            Call("requeue", self.keys[s], [*base, *ids.get(s, [])]) for s in shards
        ]
        total = 0
        replies = self._scripts.run(calls, self._repair_shard)
        for shard, reply in zip(shards, replies, strict=True):
            total += reply[0]
            self._remember(shard, reply[1:])
        return total

    def failed(self, host: str | None = None) -> dict[int, list[tuple[str, str]]]:
        """Requests that failed for good, by shard: (fingerprint, fate) pairs, only
        those of *host* if given. Entries this crawler did not write are skipped."""
        found: dict[int, list[tuple[str, str]]] = {}
        for shard, keys in enumerate(self.keys):
            for key, payload in self.client.hscan_iter(keys.failed, count=1000):
                fate, entry_host = _failed_fate_and_host(payload)
                if fate and (host is None or entry_host == host):
                    fingerprint = key.decode("ascii", "replace")
                    found.setdefault(shard, []).append((fingerprint, fate))
        return found

    def retry_failed(self, failed: dict[int, list[tuple[str, str]]], now: float) -> int:
        """Queue the *failed* requests again (as ``failed`` lists them); how many."""
        base: list[str | int] = [
            self.config.order,
            _ms(now),
            self.config.host_concurrency,
        ]
        shards = [shard for shard, entries in failed.items() if entries]
        calls = [
            Call("retry", self.keys[s], [*base, *(fp for fp, _ in failed[s])])
            for s in shards
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
        floor = self.lowest_depth()
        args: list[str | int] = [
            self.config.order,
            _ms(now),
            PROMOTE_LIMIT,
            self.config.host_concurrency,
            "" if floor is None else floor,
        ]
        calls = [Call("promote", self.keys[s], args) for s in shards]
        replies = self._scripts.run(calls, self._repair_shard)
        for shard, reply in zip(shards, replies, strict=True):
            self._remember(shard, reply)

    def repair_stuck(self, among: Collection[int], now: float) -> int:
        """Look at every host of the shards of *among* that seem stuck: requests
        outstanding, yet no host ready at their lowest level, none waiting, nothing
        leased (a stranded host, a count left by a damaged entry). Each shard at most
        every ``repair.STUCK_REPAIR_INTERVAL``. Returns the hosts scheduled again."""
        candidates = [
            i
            for i in sorted(among)
            if self._looks_stuck(i) and self._repair.due(i, now)
        ]
        if not candidates:
            return 0

        def read(pipe: Pipeline) -> None:
            for shard in candidates:
                pipe.zcard(self.keys[shard].leases)

        leased = self._read(read)
        return self.rescue(
            now, [s for s, n in zip(candidates, leased, strict=True) if not n]
        )

    def rescue(self, now: float, shards: Iterable[int] | None = None) -> int:
        """Schedule every stranded host of *shards* (default: every shard not looked
        at in the last ``repair.STUCK_REPAIR_INTERVAL``); how many. One SCAN."""
        if shards is None:
            shards = [s for s in range(self.config.shards) if self._repair.due(s, now)]
        scheduled = 0
        for shard, hosts, summary in self._repair.hosts(shards, now) if shards else ():
            self._remember(shard, summary)
            scheduled += hosts
        return scheduled

    def _looks_stuck(self, shard: int) -> bool:
        summary = self.summaries[shard]
        low = summary.lowest_level
        return (
            low is not None
            and summary.wake is None
            and may_be_stranded(summary.best, low, self.config.order)
        )

    def _repair_shard(self, call: Call) -> None:
        """*call* failed on its shard: repair the shard before the call runs again."""
        now = float(call.args[1]) / 1000  # every script's ARGV[3]
        ((shard, reply),) = self._repair.fixed([call.keys.shard], now)
        if self.config.dedup.mode == "bloom":
            self._write_bloom_layouts([call.keys])
        self._remember(shard, reply[1:], int(reply[0]))

    def damaged(self, count: int, what: str) -> None:
        """Count *count* values the crawler did not write; the first is logged."""
        if count <= 0:
            return
        self.bad_entries += count
        if not self._damage_logged:
            self._damage_logged = True
            logger.warning(
                "Repaired frontier state the crawler did not write (%(what)s); "
                "further damage is only counted in frontier/bad_entries",
                {"what": what},
            )

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
            and (
                deepest_level is None
                or level_of_score(s.best, self.config.order) <= deepest_level
            )
        ]
        return min(scored)[1] if scored else None

    def lowest_level(self) -> int | None:
        """The lowest level with requests queued or leased, over every shard."""
        levels = [s.lowest_level for s in self.summaries if s.lowest_level is not None]
        return min(levels) if levels else None

    def lowest_depth(self) -> int | None:
        """The lowest depth with requests queued or leased, over every shard."""
        level = self.lowest_level()
        return None if level is None else level // TIERS_PER_DEPTH

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

        def write(pipe: Pipeline) -> None:
            for shard, ids in by_shard.items():
                pipe.zadd(self.keys[shard].leases, dict.fromkeys(ids, expiry), xx=True)

        self._read(write)

    def totals(self) -> tuple[int, int]:
        """Requests queued (held ones included: they are work still to do) and
        leased in the whole crawl, over every shard.

        A shard's queued count is at least its hosts ready or waiting, so that a
        count a damaged entry left too low never ends a crawl early.
        """

        def read(pipe: Pipeline) -> None:
            for keys in self.keys:
                pipe.hget(keys.counters, "queued")
                pipe.zcard(keys.leases)
                pipe.zcard(keys.ready)
                pipe.zcard(keys.waiting)
                pipe.zcard(keys.held)

        replies = self._read(read)
        queued = leased = 0
        for count, leases, ready, waiting, held in zip(
            *[iter(replies)] * 5, strict=True
        ):
            queued += max(_integer(count), ready + waiting) + held
            leased += leases
        return queued, leased

    def _read(self, commands: Callable[[Pipeline], None]) -> list[Any]:
        """The replies of the commands *commands* queues in a pipeline. A key of the
        wrong type makes every shard be repaired, then the pipeline run again."""
        for attempt in range(2):
            pipe = self.client.pipeline(transaction=False)
            commands(pipe)
            replies = pipe.execute(raise_on_error=False)
            errors = [r for r in replies if isinstance(r, ResponseError)]
            if not errors:
                break
            if attempt:
                raise errors[0]
            self.repair(range(self.config.shards), time.time())
        return replies

    def repair(self, shards: Iterable[int], now: float) -> None:
        """Run the repair script on *shards* (key types, counts, leases, hosts)."""
        for shard, reply in self._repair.fixed(shards, now):
            self._remember(shard, reply[1:], int(reply[0]))

    def hosts_ready(self) -> int:
        """Hosts that may be fetched now, over every shard."""

        def read(pipe: Pipeline) -> None:
            for keys in self.keys:
                pipe.zcard(keys.ready)

        return sum(self._read(read))

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

    def _write_bloom_layouts(self, shards: Iterable[Keys]) -> None:
        layouts = shard_layouts(self.config.dedup, self.config.shards)
        fields: dict[str, int] = {"filters": 1}
        for index, layout in enumerate(layouts):
            fields |= {
                f"bits:{index}": layout.bits,
                f"hashes:{index}": layout.hashes,
                f"cap:{index}": layout.capacity,
            }
        pipe = self.client.pipeline(transaction=False)
        for keys in shards:
            for name, value in fields.items():
                pipe.hsetnx(keys.seen, name, value)
        pipe.execute()

    def _remember(
        self, shard: int, state: Sequence[bytes | int | None], damage: int = 0
    ) -> None:
        """Keep a shard's summary; count the values its script found damaged."""
        best, wake, lowest_level, found = (*state, 0)[:4]
        self.damaged(
            damage + int(found or 0), f"shard {shard}: values set aside or fixed"
        )
        self.summaries[shard] = Summary(
            float(best) if best is not None else None,
            float(wake) / 1000 if wake is not None else None,
            int(lowest_level) if lowest_level is not None else None,
        )


def _failed_fate_and_host(payload: bytes) -> tuple[str, str]:
    """The fate and host of a ``failed`` entry (``<fate> <level> <len> <host><json>``);
    empty strings for one this crawler did not write."""
    try:
        fate, _level, length, rest = payload.decode("utf-8").split(" ", 3)
        return fate, rest[: int(length)]
    except (UnicodeDecodeError, ValueError):
        return "", ""


def _integer(value: bytes | None) -> int:
    """A counter read from Redis; one the crawler did not write counts as 0."""
    try:
        return int(value or 0)
    except ValueError:
        return 0


def _ms(seconds: float) -> int:
    return round(seconds * 1000)
