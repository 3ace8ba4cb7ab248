"""What nodes and commands read of a crawl in Redis, and how a crawl is deleted.

One home for the readers the scheduler's nodes and the ``scrapy frontier`` commands
share: the crawl's totals (queued, leased), which registered nodes are alive, a
node's registry entry, and deleting every key of a crawl. Every reader sends
single-key commands in non-transactional pipelines, so it works on a Redis Cluster,
and reads defensively: a value this crawler did not write counts as absent.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    import redis
    from redis.client import Pipeline

    from crawler.crawlstate.keys import CrawlKeys, Keys

# Keys a SCAN step asks for, and unlinked by one pipeline.
SCAN_BATCH = 1000
# Characters SCAN would read as a glob in a prefix: such a crawl is never deleted.
GLOB_CHARACTERS = frozenset("*?[]\\")
# Commands ``queue_totals`` queues per shard.
TOTALS_COMMANDS = 5


# --- totals ---------------------------------------------------------------------------


def queue_totals(pipe: Pipeline, shards: Iterable[Keys]) -> None:
    """Queue on *pipe* the reads ``add_totals`` sums, for each of *shards*."""
    for keys in shards:
        pipe.hget(keys.counters, "queued")
        pipe.zcard(keys.leases)
        pipe.zcard(keys.ready)
        pipe.zcard(keys.waiting)
        pipe.zcard(keys.held)


def queue_versions(pipe: Pipeline, shards: Iterable[Keys]) -> None:
    """Queue on *pipe* what every push, pop and ack of each of *shards* changes (the
    shard's sequence, which pushes and pops draw from, and its count of acks): the
    replies of ``queue_totals`` and of these, read twice alike, say that no shard
    changed in between."""
    for keys in shards:
        pipe.get(keys.sequence)
        pipe.hget(keys.counters, "acked")


def add_totals(replies: Sequence[Any]) -> tuple[int, int]:
    """Requests queued (held ones included: they are work still to do) and leased,
    over the shards whose replies ``queue_totals`` queued.

    A shard's queued count is at least its hosts ready or waiting, so that a count
    a damaged entry left too low never ends a crawl early.
    """
    queued = leased = 0
    for count, leases, ready, waiting, held in zip(
        *[iter(replies)] * TOTALS_COMMANDS, strict=True
    ):
        queued += max(whole_count(count), whole_count(ready) + whole_count(waiting))
        queued += whole_count(held)
        leased += whole_count(leases)
    return queued, leased


def totals(client: redis.Redis, keys: CrawlKeys, shards: int) -> tuple[int, int]:
    """``add_totals`` of every shard of the crawl: one round trip."""
    pipe = client.pipeline(transaction=False)
    queue_totals(pipe, (keys.shard(shard) for shard in range(shards)))
    return add_totals(pipe.execute(raise_on_error=False))


# --- nodes ----------------------------------------------------------------------------


def alive(client: redis.Redis, keys: CrawlKeys, ids: Iterable[str]) -> dict[str, bool]:
    """Whether each node's heartbeat key exists: one round trip. Ids read from
    Redis (``decoded``) are asked for as the bytes Redis holds, whatever they are."""
    ordered = sorted(set(ids))
    pipe = client.pipeline(transaction=False)
    for node in ordered:
        pipe.exists(encoded(keys.heartbeat(node)))
    replies = pipe.execute(raise_on_error=False) if ordered else []
    return {node: reply == 1 for node, reply in zip(ordered, replies, strict=True)}


def live_nodes(client: redis.Redis, keys: CrawlKeys) -> list[str]:
    """Ids of the registered nodes whose heartbeat key exists: two round trips."""
    registry = mapping(client.hgetall(keys.nodes))
    found = alive(client, keys, (decoded(node) for node in registry))
    return sorted(node for node, is_alive in found.items() if is_alive)


def registry_entry(raw: bytes) -> dict[str, Any] | None:
    """A node's registry entry (JSON written by ``crawler.frontier.node.membership``), or None
    for a value no node wrote."""
    try:
        entry = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return entry if isinstance(entry, dict) else None


# --- deleting a crawl -----------------------------------------------------------------


def check_deletable(keys: CrawlKeys) -> None:
    """Raise ``ValueError`` if the crawl's prefix holds characters SCAN reads as a
    glob: deleting it would delete other crawls' keys too."""
    if GLOB_CHARACTERS & set(keys.prefix):
        raise ValueError(
            f"cannot delete crawl {keys.prefix!r}: its prefix holds glob characters"
        )


def crawl_key_count(client: redis.Redis, keys: CrawlKeys) -> int:
    """How many keys the crawl has (a SCAN of the whole keyspace)."""
    return sum(1 for _key in client.scan_iter(match=keys.pattern, count=SCAN_BATCH))


def delete_crawl(client: redis.Redis, keys: CrawlKeys) -> int:
    """UNLINK every key of the crawl, one key a command (Cluster-safe); how many.
    Raises ``ValueError`` as ``check_deletable`` does."""
    check_deletable(keys)
    deleted = 0
    batch: list[bytes] = []
    for key in client.scan_iter(match=keys.pattern, count=SCAN_BATCH):
        batch.append(key)
        if len(batch) >= SCAN_BATCH:
            deleted += _unlink(client, batch)
    return deleted + _unlink(client, batch)


def _unlink(client: redis.Redis, batch: list[bytes]) -> int:
    """UNLINK *batch* (then empty it); how many keys were deleted."""
    if not batch:
        return 0
    pipe = client.pipeline(transaction=False)
    for key in batch:
        pipe.unlink(key)
    batch.clear()
    return sum(whole_count(reply) for reply in pipe.execute(raise_on_error=False))


# --- reading replies defensively ------------------------------------------------------


def mapping(reply: object) -> dict[bytes, bytes]:
    """A hash Redis returned, or an empty one for anything else (an error)."""
    return reply if isinstance(reply, dict) else {}


def whole_count(reply: object) -> int:
    """A whole number Redis returned, or 0 for anything else (absent, an error)."""
    if isinstance(reply, int):
        return reply
    if isinstance(reply, bytes) and reply.lstrip(b"-").isdigit():
        return int(reply)
    return 0


def decoded(raw: bytes) -> str:
    """Bytes Redis returned as text, byte for byte (surrogate escapes)."""
    return raw.decode("utf-8", "surrogateescape")


def encoded(text: str) -> bytes:
    """Text read with ``decoded`` (a key, a host name) as the bytes Redis holds.

    Pass keys built from names Redis returned as these bytes: hiredis packs a str
    argument as strict UTF-8, whatever the client's ``encoding_errors``, so a host
    name that was not UTF-8 would raise ``UnicodeEncodeError``."""
    return text.encode("utf-8", "surrogateescape")


def finite_number(value: object) -> float | None:
    """A finite int or float of a JSON entry; None for anything else."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
        return number if math.isfinite(number) else None
    return None


def whole_number(value: object) -> int | None:
    """An int of a JSON entry; None for anything else."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None
