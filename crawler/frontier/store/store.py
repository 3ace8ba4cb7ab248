"""The frontier's request path in Redis: push, acknowledge, pop, requeue, promote.

Each method is one round trip (a pipeline of script calls, one per shard touched).
Every script reply carries its shard's summary, kept in the shards' ``summaries`` so
the scheduler chooses a shard without asking Redis again. The store is given the
crawl's shards (``crawlshards.CrawlShards``: keys, summaries, damage and repair,
crawl-wide reads), read-only as ``shards``, and the ``ScriptRunner`` and
``ShardRepair`` they share.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crawler.frontier.store.crawlshards import CrawlShards, SchemaMismatchError
from crawler.frontier.store.repair import ShardRepair
from crawler.frontier.store.roundtrip import (
    Ack,
    Flushed,
    Lease,
    Pending,
    PopOrder,
    ms,
)
from crawler.frontier.store.scriptargs import common_args
from crawler.frontier.store.scripts import Call, script_runner
from crawler.policy.order import TIERS_PER_DEPTH, queue_class, score_limit

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Mapping, Sequence

    from redis import Redis

    from crawler.context.roundtriptimes import RoundTripTimes
    from crawler.context.runsettings import RunSettingsHolder
    from crawler.frontier.frontierconfig import FrontierConfig
    from crawler.frontier.store.scriptargs import Scalar, Value
    from crawler.frontier.store.scripts import ScriptRunner

__all__ = [
    "Ack",
    "Flushed",
    "FrontierStore",
    "Lease",
    "Pending",
    "PopOrder",
    "SchemaMismatchError",
]

# Waiting hosts one script call moves to ready at most (bounds a call's work).
PROMOTE_LIMIT = 100
# Politeness fields a shard's idle-host sweep looks at per heartbeat.
IDLE_SWEEP_LIMIT = 200
# The push script's marks of a request queued: new, or new at a shorter depth.
NEW_MARKS = (ord("1"), ord("2"))
OVER_BUDGET = ord("3")  # new, but its host's budget is spent: not queued
REQUEUE_LIMIT = 500
# Deepest provisional depth looked at when DEPTH_LIMIT is 0 (no limit).
MAX_DEPTH = 64


class FrontierStore:
    """The request path over *shards*, whose script runner and repair it shares."""

    def __init__(
        self,
        shards: CrawlShards,
        scripts: ScriptRunner,
        repair: ShardRepair,
        run: RunSettingsHolder | None = None,
    ) -> None:
        self._shards = shards
        self._config = shards.config
        self._keys = shards.keys
        self._summaries = shards.summaries
        self._scripts = scripts
        self._repair = repair
        # DEPTH_LIMIT in force, read at each push (`scrapy frontier set` changes it);
        # None (a command's store, a test's): every provisional depth is looked at.
        self._run = run
        self._site_limits = shards.config.site_depth_limits
        self._idle_cursors: dict[int, str] = {}  # shard -> where its sweep is

    @classmethod
    def on(
        cls,
        client: Redis,
        config: FrontierConfig,
        times: RoundTripTimes | None = None,
        run: RunSettingsHolder | None = None,
    ) -> FrontierStore:
        """The store of *config*'s crawl on *client*, its script calls timed in
        *times* (the metrics'), pushes reading DEPTH_LIMIT from *run*."""
        scripts = script_runner(client, times)
        repair = ShardRepair(client, scripts, config)
        shards = CrawlShards(client, config, scripts, repair)
        return cls(shards, scripts, repair, run)

    @property
    def shards(self) -> CrawlShards:
        """The crawl's shards: keys, summaries, damage, crawl-wide reads."""
        return self._shards

    def _deepest(self) -> int:
        """The deepest provisional depth a push looks at for a shorter path: the
        deepest a host may go (DEPTH_LIMIT, or a site's own deeper limit of
        FRONTIER_SITE_STRATEGY); the script stops at the deepest it has seen."""
        limit = 0 if self._run is None else self._run.current.depth_limit
        if limit <= 0 or self._site_limits:
            return MAX_DEPTH
        return limit

    def prepare(self, now: float) -> None:
        """Check the schema version, note when the crawl started, repair every shard, write Bloom layouts, load
        scripts and summaries."""
        shards = self._shards
        if self._config.reset:
            shards.delete_all()
        shards.check_schema()
        shards.mark_started(now)
        self._scripts.load()
        shards.repair(range(self._config.shards), now)
        if self._config.dedup.mode == "bloom":
            shards.write_bloom_layouts(self._keys)
        self.promote(range(self._config.shards), now)

    def flush(
        self,
        batch: Sequence[Pending],
        acks: Sequence[Ack | tuple[Lease, float]],
        now: float,
        pop: PopOrder | None = None,
        in_links: Mapping[int, Sequence[Mapping[str, Value]]] | None = None,
    ) -> Flushed:
        """Push *batch*, ack *leases* (each with its host's delay), then *pop*: one trip
        (on a Cluster, two when the pushes and acks go to more than one node).

        Pushes go first, so the links of a page are queued before its lease is
        released; the pop goes last, so it sees the hosts the acks made ready.
        *in_links* (importance order: in-links of URLs pushed before, by shard) go
        before the pop too, so that it sees the URLs they moved.
        """
        by_shard: dict[int, list[Pending]] = {}
        for pending in batch:
            by_shard.setdefault(pending.shard, []).append(pending)
        calls = [self._push_call(s, items, now) for s, items in by_shard.items()]
        calls += [self._ack_call(Ack(*ack), now) for ack in acks]
        credits = [self._in_link_call(s, v, now) for s, v in (in_links or {}).items()]
        pop_calls = [self._pop_call(pop, now)] if pop is not None else []
        pushes = len(by_shard)
        first = pushes if acks else 0  # links queued before their pages' leases go
        replies = self._scripts.run(
            calls + credits + pop_calls, self._shards.repair_shard, first
        )
        popped, fenced = self._popped(pop, replies.pop()) if pop else (None, False)
        for call, reply in zip(calls, replies, strict=False):
            self._shards.remember(call.keys.shard, reply[1:])
        for call, reply in zip(credits, replies[len(calls) :], strict=True):
            self._shards.remember(call.keys.shard, reply)
        flags = {
            call.keys.shard: iter(reply[0])
            for call, reply in zip(calls[:pushes], replies[:pushes], strict=True)
        }
        marks = [next(flags[pending.shard]) for pending in batch]
        new = [mark in NEW_MARKS for mark in marks]
        over_budget = [mark == OVER_BUDGET for mark in marks]
        acked = sum(reply[0] for reply in replies[pushes : len(calls)])
        shortened = marks.count(ord("2"))
        return Flushed(new, acked, popped, fenced, shortened, over_budget)

    def pop(self, order: PopOrder, now: float) -> tuple[Lease, bytes] | None:
        """Lease the best ready request of a shard: its lease and entry, or None."""
        return self.flush([], [], now, order).popped

    def _push_call(self, shard: int, items: list[Pending], now: float) -> Call:
        args: dict[str, Scalar] = {
            **common_args(self._config, now),
            "concurrency": self._config.host_concurrency,
            "dedup_mode": self._config.dedup.mode,
            "floor": self._summaries.lowest_depth() or 0,
            "deepest": self._deepest(),
            "per_depth": TIERS_PER_DEPTH,
            "reparse": "1" if self._config.reparse_from_store else "0",
            "host_max_pages": self._config.host_max_pages or 0,
        }
        records = [
            {
                "host": item.host,
                "class": queue_class(item.level, item.priority),
                "dedup": item.dedup,
                "entry": item.entry,
                "hold": "" if item.hold_until is None else ms(item.hold_until),
                "revive": item.revive,
                "depth_key": item.depth_key,
                "url_key": item.url_key,
                "importance": repr(item.importance),
                "backlinks": repr(item.backlinks),
                "credit": repr(item.credit),
                "gain": repr(item.gain),
                "host_credit": repr(item.host_credit),
                "strategy": "dfs" if item.deepest_first else "",
            }
            for item in items
        ]
        return Call("push", self._keys[shard], args, records)

    def _in_link_call(
        self, shard: int, links: Sequence[Mapping[str, Value]], now: float
    ) -> Call:
        args: dict[str, Scalar] = {
            **common_args(self._config, now),
            "concurrency": self._config.host_concurrency,
            "per_depth": TIERS_PER_DEPTH,
        }
        return Call("credit", self._keys[shard], args, links)

    def _ack_call(self, ack: Ack, now: float) -> Call:
        done_at = ack.lease.done_at
        since = now if done_at is None else min(now, done_at)
        args: dict[str, Scalar] = {
            **common_args(self._config, since),
            "concurrency": self._config.host_concurrency,
            "delay": ms(ack.delay),
            "lease_id": ack.lease.lease_id,
            "fate": ack.fate,
            "fingerprint": ack.fingerprint,
            "untouched": "1" if ack.untouched else "0",
            "not_before": ms(ack.not_before),
        }
        return Call("ack", self._keys[ack.lease.shard], args)

    def _pop_call(self, order: PopOrder, now: float) -> Call:
        args: dict[str, Scalar] = {
            **common_args(self._config, now),
            "concurrency": self._config.host_concurrency,
            "expiry": ms(now + self._config.lease_timeout),
            "default_delay": ms(order.default_delay),
            "promote_limit": PROMOTE_LIMIT,
            "score_limit": score_limit(order.deepest_level),
            "node_id": order.node_id,
            "per_depth": TIERS_PER_DEPTH,
        }
        return Call("pop", self._keys[order.shard], args)

    def _popped(
        self, order: PopOrder, reply: list[Any]
    ) -> tuple[tuple[Lease, bytes] | None, bool]:
        """The lease and entry popped, if any, and whether the pop was fenced."""
        self._shards.remember(order.shard, reply[8:])
        if reply[0] is None:
            return None, reply[1] == b"fenced"
        lease = Lease(
            order.shard,
            str(reply[0]),
            reparse=reply[2] == 1,
            importance=None if reply[4] is None else float(reply[4]),
            backlinks=float(reply[5] or 0),
            inlinks=int(reply[6]),
            host=reply[7].decode("utf-8", "replace"),
        )
        return (lease, reply[1]), False

    def requeue(self, now: float, leases: Iterable[Lease] = ()) -> int:
        """Put back *leases*, or every expired lease of every shard; how many."""
        ids: dict[int, list[str]] = {}
        for lease in leases:
            ids.setdefault(lease.shard, []).append(lease.lease_id)
        shards = list(ids) if ids else list(range(self._config.shards))
        args: dict[str, Scalar] = {
            **common_args(self._config, now),
            "concurrency": self._config.host_concurrency,
            "limit": REQUEUE_LIMIT,
        }
        calls = [
            Call("requeue", self._keys[s], args, [{"id": i} for i in ids.get(s, [])])
            for s in shards
        ]
        total = 0
        replies = self._scripts.run(calls, self._shards.repair_shard)
        for shard, reply in zip(shards, replies, strict=True):
            total += reply[0]
            self._shards.remember(shard, reply[1:])
        return total

    def promote(self, shards: Iterable[int], now: float) -> None:
        """Move hosts whose delay ended to ready, and refresh the shards' summaries."""
        shards = list(shards)
        floor = self._summaries.lowest_depth()
        args: dict[str, Scalar] = {
            **common_args(self._config, now),
            "limit": PROMOTE_LIMIT,
            "concurrency": self._config.host_concurrency,
            "floor": "" if floor is None else floor,
        }
        calls = [Call("promote", self._keys[s], args) for s in shards]
        replies = self._scripts.run(calls, self._shards.repair_shard)
        for shard, reply in zip(shards, replies, strict=True):
            self._shards.remember(shard, reply)

    def forget_idle(self, shards: Iterable[int], now: float) -> int:
        """Sweep on through each of *shards*' politeness fields, forgetting those of
        hosts done for now (their delay passed, nothing queued or leased), so a
        host that is done costs no memory there; how many were forgotten."""
        shards = list(shards)
        if not shards:
            return 0
        calls = [
            Call(
                "forget_idle",
                self._keys[s],
                {
                    **common_args(self._config, now),
                    "cursor": self._idle_cursors.get(s, "0"),
                    "limit": IDLE_SWEEP_LIMIT,
                },
            )
            for s in shards
        ]
        forgotten = 0
        for shard, reply in zip(
            shards, self._scripts.run(calls, self._shards.repair_shard), strict=True
        ):
            cursor = reply[0].decode() if isinstance(reply[0], bytes) else str(reply[0])
            self._idle_cursors[shard] = cursor
            forgotten += int(reply[1])
        return forgotten

    def repair_stuck(self, among: Collection[int], now: float) -> int:
        """Look at every host of the shards of *among* that seem stuck: requests
        outstanding, yet no host ready at their lowest level, none waiting, nothing
        leased (a stranded host, a count left by a damaged entry). Each shard at most
        every ``repair.STUCK_REPAIR_INTERVAL``. Returns the hosts scheduled again."""
        candidates = [
            i
            for i in sorted(among)
            if self._summaries.looks_stuck(i) and self._repair.due(i, now)
        ]
        if not candidates:
            return 0
        leased = self._shards.lease_counts(candidates)
        return self.rescue(
            now, [s for s, n in zip(candidates, leased, strict=True) if not n]
        )

    @property
    def counts_trusted(self) -> bool:
        """Whether every shard found damaged has had its counts set since (until
        then its queued count may be short, and the crawl is not over)."""
        return self._repair.counts_trusted

    def suspect(self, shard: int) -> None:
        """*shard* handed out an entry this crawler did not write: its counts took
        it for one of theirs."""
        self._repair.suspect(shard)

    def rescue(self, now: float, shards: Iterable[int] | None = None) -> int:
        """Schedule every stranded host of *shards* (default: every shard not looked
        at in the last ``repair.STUCK_REPAIR_INTERVAL``); how many. One SCAN."""
        if shards is None:
            shards = [s for s in range(self._config.shards) if self._repair.due(s, now)]
        scheduled = 0
        for shard, hosts, summary in self._repair.hosts(shards, now) if shards else ():
            self._shards.remember(shard, summary)
            scheduled += hosts
        return scheduled
