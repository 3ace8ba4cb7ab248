"""The crawl's shards in Redis: their keys and summaries, damage, crawl-wide reads.

Used alone by the commands and the node's runtime; given to ``FrontierStore`` (the
request path), which shares its ``ScriptRunner`` and ``ShardRepair``. Here: the
schema check, counting and repairing values the crawler did not write, the shards'
summaries kept from every script reply, and the reads and writes that span every
shard off the request path (totals, hosts ready, leases of shards, requests that
failed for good, lease renewal, deleting the crawl). Each method is one round trip
(a pipeline), bar the SCAN of ``delete_all``.
"""

from __future__ import annotations

import json
import logging
import time
from typing import TYPE_CHECKING, Any

from redis.exceptions import ResponseError

from crawler.context.logonce import OnceLogger
from crawler.crawlstate.keys import SCHEMA_VERSION, CrawlKeys
from crawler.crawlstate.readers import (
    TOTALS_COMMANDS,
    add_totals,
    delete_crawl,
    queue_totals,
    queue_versions,
)
from crawler.crawlstate.status import STARTED_FIELD
from crawler.frontier.dedup import layout_fields
from crawler.frontier.store.repair import ShardRepair
from crawler.frontier.store.roundtrip import Lease, ms
from crawler.frontier.store.scriptargs import common_args
from crawler.frontier.store.scripts import Call, script_runner
from crawler.frontier.store.summaries import ShardSummaries

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from redis import Redis
    from redis.client import Pipeline

    from crawler.context.roundtriptimes import RoundTripTimes
    from crawler.crawlstate.keys import Keys
    from crawler.frontier.frontierconfig import FrontierConfig
    from crawler.frontier.store.scriptargs import Scalar
    from crawler.frontier.store.scripts import ScriptRunner

logger = logging.getLogger(__name__)

# A shard's Bloom layout fields (KEYS: its seen hash, its first filter's bitmap;
# ARGV: the blocked layout's fields and the plain one's, as JSON, then the length of
# the first filter's bitmap in each). A shard with no URL yet (no bitmap: the first
# filter fills first) takes the blocked layout whole. Else it keeps the kind its
# filter was made with, and its missing fields are written again: bits set by one
# layout and read by the other would make URLs seen before look new, and new ones
# look seen. The bitmap's length says which (it is made whole at once) and outlives
# a seen hash the repair deleted; the hash says when the length tells neither.
WRITE_LAYOUT = """
local length = redis.call('STRLEN', KEYS[2])
local blocked_length, plain_length = tonumber(ARGV[3]), tonumber(ARGV[4])
if length == 0 then
  for name, value in pairs(cjson.decode(ARGV[1])) do
    redis.call('HSET', KEYS[1], name, value)
  end
  return 1
end
local blocked = redis.call('HEXISTS', KEYS[1], 'block:0') == 1
if blocked_length ~= plain_length and length == blocked_length then blocked = true end
if blocked_length ~= plain_length and length == plain_length then blocked = false end
if not blocked then redis.call('HDEL', KEYS[1], 'block:0') end
for name, value in pairs(cjson.decode(blocked and ARGV[1] or ARGV[2])) do
  redis.call('HSETNX', KEYS[1], name, value)
end
return blocked and 1 or 0
"""


class SchemaMismatchError(RuntimeError):
    """The crawl's keys were written by an incompatible version of the frontier."""


class CrawlShards:
    """A crawl's shards in Redis, with the summaries of their last replies."""

    def __init__(
        self,
        client: Redis,
        config: FrontierConfig,
        scripts: ScriptRunner,
        repair: ShardRepair,
    ) -> None:
        self.client = client
        self.config = config
        self.crawl_keys = CrawlKeys(config.prefix)
        self.keys = [self.crawl_keys.shard(s) for s in range(config.shards)]
        self.summaries = ShardSummaries(config.shards, config.order)
        self._scripts = scripts  # shared with the store given these shards
        self._repair = repair
        # Values found damaged (not written by the crawler) and set aside or fixed.
        self.bad_entries = 0
        self._once = OnceLogger(logger)  # counted in bad_entries, not in stats
        self._write_layout = client.register_script(WRITE_LAYOUT)

    @classmethod
    def on(
        cls, client: Redis, config: FrontierConfig, times: RoundTripTimes | None = None
    ) -> CrawlShards:
        """The shards of *config*'s crawl on *client*, with their own script runner
        (timed in *times*, the metrics') and repair."""
        scripts = script_runner(client, times)
        return cls(client, config, scripts, ShardRepair(client, scripts, config))

    def check_schema(self) -> None:
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
        self._check_spill(meta)
        self.client.hsetnx(meta, "frontier_order", self.config.order)
        stored = self.client.hget(meta, "frontier_order")
        order = stored.decode(errors="replace") if isinstance(stored, bytes) else ""
        if order != self.config.order:  # queued classes rank by the order
            raise SchemaMismatchError(
                f"crawl {self.config.prefix!r} in Redis was queued with "
                f"FRONTIER_ORDER={order[:20]}, not {self.config.order}: set it back, "
                "or start afresh with -s FRONTIER_RESET=1"
            )

    def _check_spill(self, meta: str) -> None:
        """A crawl that spilled keeps FRONTIER_SPILL on: with it off, its entries in
        the spill database would never come back."""
        if self.config.spill_head:
            self.client.hset(meta, "spill", "1")
        elif self.client.hget(meta, "spill") == b"1":
            raise SchemaMismatchError(
                f"crawl {self.config.prefix!r} in Redis spills its queues to a "
                "database: set FRONTIER_SPILL=True (and the same "
                "FRONTIER_SPILL_DATABASE_URL), or start afresh with -s FRONTIER_RESET=1"
            )

    def mark_started(self, now: float) -> None:
        """Note in the meta hash when the crawl started, unless a node already did:
        the progress line's elapsed time counts from the first run's start."""
        self.client.hsetnx(self.crawl_keys.meta, STARTED_FIELD, repr(now))

    def damaged(self, count: int, what: str) -> None:
        """Count *count* values the crawler did not write; the first is logged."""
        if count <= 0:
            return
        self.bad_entries += count
        self._once.once(
            "damage",
            "Repaired frontier state the crawler did not write (%(what)s); "
            "further damage is only counted in frontier/bad_entries",
            {"what": what},
        )

    def remember(
        self, shard: int, state: Sequence[bytes | int | None], damage: int = 0
    ) -> None:
        """Keep a shard's summary from a script reply; count the values its script
        found damaged."""
        found = self.summaries.remember(shard, state)
        if damage + found > 0:
            self._repair.suspect(shard)
        self.damaged(damage + found, f"shard {shard}: values set aside or fixed")

    def repair(self, shards: Iterable[int], now: float) -> None:
        """Run the repair script on *shards* (key types, counts, leases, hosts)."""
        for shard, reply in self._repair.fixed(shards, now):
            self.remember(shard, reply[1:], int(reply[0]))

    def repair_shard(self, call: Call) -> None:
        """*call* failed on its shard: repair the shard before the call runs again."""
        now = float(call.args["now"]) / 1000  # every call's (ms)
        ((shard, reply),) = self._repair.fixed([call.keys.shard], now)
        if self.config.dedup.mode == "bloom":
            self.write_bloom_layouts([call.keys])
        self.remember(shard, reply[1:], int(reply[0]))

    def write_bloom_layouts(self, shards: Iterable[Keys]) -> None:
        """Write the Bloom filters' layouts of *shards*, where not written yet:
        blocked for a shard whose filter is new, plain for one made before them."""
        dedup, count = self.config.dedup, self.config.shards
        blocked = layout_fields(dedup, count, blocked=True)
        plain = layout_fields(dedup, count, blocked=False)
        args = [json.dumps(blocked), json.dumps(plain)]
        args += [str((fields["bits:0"] + 7) // 8) for fields in (blocked, plain)]
        for keys in shards:  # a call each: a Cluster pipeline runs no scripts
            self._write_layout(keys=[keys.seen, keys.bloom(0)], args=args)

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

    def totals(self) -> tuple[int, int]:
        """Requests queued (held ones included: they are work still to do) and
        leased in the whole crawl, over every shard.

        A shard's queued count is at least its hosts ready or waiting, so that a
        count a damaged entry left too low never ends a crawl early.
        """
        return add_totals(self._read(lambda pipe: queue_totals(pipe, self.keys)))

    def settled_totals(self) -> tuple[int, int] | None:
        """``totals`` as they stood at one moment, or None if a shard changed while
        they were read: what the end of the crawl is decided on.

        The shards are read one by one (on a Cluster, node by node), so a request
        moving from one shard to another (a page's links queued in one, its lease
        released in another) may be missed in both. Read twice, with what every
        push, pop and ack changes: if nothing changed, every shard held what was
        read at the moment between the two reads (two round trips).
        """

        def read(pipe: Pipeline) -> None:
            queue_totals(pipe, self.keys)
            queue_versions(pipe, self.keys)

        first, second = self._read(read), self._read(read)
        if first != second:
            return None
        return add_totals(first[: TOTALS_COMMANDS * len(self.keys)])

    def hosts_ready(self) -> int:
        """Hosts that may be fetched now, over every shard."""

        def read(pipe: Pipeline) -> None:
            for keys in self.keys:
                pipe.zcard(keys.ready)

        return sum(self._read(read))

    def lease_counts(self, shards: Sequence[int]) -> list[int]:
        """How many leases each of *shards* holds, whoever holds them."""

        def read(pipe: Pipeline) -> None:
            for shard in shards:
                pipe.zcard(self.keys[shard].leases)

        return self._read(read)

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

    def renew(self, leases: Iterable[Lease], now: float) -> None:
        """Push the expiry of leases this node still works on."""
        expiry = ms(now + self.config.lease_timeout)
        by_shard: dict[int, list[str]] = {}
        for lease in leases:
            by_shard.setdefault(lease.shard, []).append(lease.lease_id)
        if not by_shard:
            return

        def write(pipe: Pipeline) -> None:
            for shard, ids in by_shard.items():
                pipe.zadd(self.keys[shard].leases, dict.fromkeys(ids, expiry), xx=True)

        self._read(write)

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
        args: dict[str, Scalar] = {
            **common_args(self.config, now),
            "concurrency": self.config.host_concurrency,
        }
        shards = [shard for shard, entries in failed.items() if entries]
        calls = [
            Call(
                "retry", self.keys[s], args, [{"fingerprint": f} for f, _ in failed[s]]
            )
            for s in shards
        ]
        total = 0
        for shard, reply in zip(shards, self._scripts.run(calls), strict=True):
            total += reply[0]
            self.remember(shard, reply[1:])
        return total

    def delete_all(self) -> int:
        """Delete every key of the crawl (one key a command: Cluster-safe); how many."""
        deleted = delete_crawl(self.client, self.crawl_keys)
        self.summaries.forget()
        return deleted


def _failed_fate_and_host(payload: bytes) -> tuple[str, str]:
    """The fate and host of a ``failed`` entry (``<fate> <level> <len> <host><json>``);
    empty strings for one this crawler did not write."""
    try:
        fate, _level, length, rest = payload.decode("utf-8").split(" ", 3)
        return fate, rest[: int(length)]
    except (UnicodeDecodeError, ValueError):
        return "", ""
