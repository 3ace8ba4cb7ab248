"""Shards changing hands between live nodes: work pulled to free capacity, and a
drained node's shards handed to the others at once.

A shard changes owner only by an atomic compare-and-set of its owner key (the key
the pop script checks), so a node that lost a shard cannot pop from it even before
its own heartbeat notices. Its requests in flight keep their leases: their hosts
stay busy until it acknowledges them, and the acknowledgement sets the hosts' next
ready time, so no host is fetched by two nodes at once nor sooner than its delay.
Held requests, queues and their order are the shard's and move with it.
"""

from __future__ import annotations

import logging
import math
import time
from typing import TYPE_CHECKING

from crawler.crawlstate.controls import read_control
from crawler.crawlstate.damage import retyped
from crawler.crawlstate.readers import registry_entry
from crawler.frontier.store.scripts import queue_script
from crawler.policy.dispatch import POLICIES, Loan, homes, weights_in_force

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from redis import Redis

    from crawler.crawlstate.keys import CrawlKeys
    from crawler.frontier.store.crawlshards import CrawlShards

logger = logging.getLogger(__name__)

# KEYS: a shard's owner key, its loan key. ARGV: the node giving it, the node taking
# it, the owner lease in ms, the loan ('<node>|<since>', or '' for none).
# Moves the shard only if the giver still holds it; 1 if it moved.
MOVE = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
if ARGV[4] == '' then redis.call('DEL', KEYS[2]) else redis.call('SET', KEYS[2], ARGV[4]) end
return 1
"""


def loan_text(loan: Loan) -> str:
    return f"{loan.node}|{loan.since:.3f}"


def parse_loan(raw: bytes | None) -> Loan | None:
    """A loan key's value; None for no loan or a value no node wrote."""
    if raw is None:
        return None
    try:
        node, _, since = raw.decode("utf-8").rpartition("|")
        moment = float(since)
    except (UnicodeDecodeError, ValueError):
        return None
    return Loan(node, moment) if node and math.isfinite(moment) else None


def read_loans(client: Redis, keys: CrawlKeys, shards: int) -> dict[int, Loan]:
    """Every shard's loan (shards without one left out). A loan key of the wrong
    type reads as no loan; the next move of its shard overwrites it."""
    pipe = client.pipeline(transaction=False)
    for shard in range(shards):
        pipe.get(keys.shard(shard).loan)
    replies = pipe.execute(raise_on_error=False)
    found = {
        shard: parse_loan(raw) if isinstance(raw, bytes | None) else None
        for shard, raw in enumerate(replies)
    }
    return {shard: loan for shard, loan in found.items() if loan is not None}


def ready_by_shard(
    client: Redis, keys: CrawlKeys, shards: Iterable[int], now: float
) -> dict[int, int]:
    """Hosts of each shard that could be fetched now: ready, or waiting with their
    delay over (the next pop or promote makes them ready).

    A set of the wrong type counts as empty: this is an estimate for sharing work,
    and the shard's own scripts find the damage, repair it and count it."""
    ordered = sorted(shards)
    pipe = client.pipeline(transaction=False)
    for shard in ordered:
        pipe.zcard(keys.shard(shard).ready)
        pipe.zcount(keys.shard(shard).waiting, "-inf", int(now * 1000))
    replies = pipe.execute(raise_on_error=False) if ordered else []
    counts = [reply if isinstance(reply, int) else 0 for reply in replies]
    return {shard: counts[2 * i] + counts[2 * i + 1] for i, shard in enumerate(ordered)}


def move_shards(  # noqa: PLR0913 (one move's facts)
    client: Redis,
    keys: CrawlKeys,
    moves: Mapping[int, str],
    *,
    giver: str,
    lease_ms: int,
    loan_since: float | None,
) -> frozenset[int]:
    """Move each shard of *moves* from *giver* to its node, as a loan since
    *loan_since* (None: no loan, the shard goes home); the shards that moved."""
    ordered = sorted(moves)
    script = client.register_script(MOVE)
    pipe = client.pipeline(transaction=False)
    for shard in ordered:
        to = moves[shard]
        loan = "" if loan_since is None else loan_text(Loan(to, loan_since))
        shard_keys = keys.shard(shard)
        queue_script(
            pipe,
            script,
            [shard_keys.owner, shard_keys.loan],
            [giver, to, lease_ms, loan],
        )
    replies = pipe.execute() if ordered else []
    return frozenset(s for s, moved in zip(ordered, replies, strict=True) if moved)


def hand_over(shards: CrawlShards, node_id: str, now: float | None = None) -> int:
    """Give every shard *node_id* holds to the node that is its home without it
    (`scrapy frontier drain`): at once, not at the next heartbeats. How many moved.

    The other nodes' weights and policy come from their node table entries; their
    heartbeats take the shards in within a maintenance round.
    """
    now = time.time() if now is None else now
    client, keys, config = shards.client, shards.crawl_keys, shards.config
    entries: dict[bytes, bytes] = client.hgetall(keys.nodes)  # type: ignore[assignment]
    # Nodes told to drain that have not said so in their entry yet get nothing.
    control = retyped(
        client,
        keys.control,
        "hash",
        lambda: client.hgetall(keys.control),
        shards.damaged,
    )
    draining = read_control(control).draining  # type: ignore[arg-type]
    published: dict[str, float | None] = {}
    slots: dict[str, int] = {}
    policy = "rendezvous"
    for raw_id, raw in entries.items():
        node = raw_id.decode("utf-8", "replace")
        entry = registry_entry(raw)
        if node == node_id or entry is None or not client.exists(keys.heartbeat(node)):
            continue
        if entry.get("state") == "draining" or node in draining:
            continue
        published[node] = entry_weight(entry)
        concurrency = entry.get("concurrency")
        slots[node] = concurrency if isinstance(concurrency, int) else 1
        policy = _policy(entry, policy)
    owners = _owners(client, keys, config.shards)
    held = {shard for shard, owner in owners.items() if owner == node_id}
    home = homes(weights_in_force(published, slots), config.shards, policy)
    moves = {shard: home[shard] for shard in held if shard in home}
    lease_ms = int(config.node_ttl * 1000)
    moved = move_shards(
        client, keys, moves, giver=node_id, lease_ms=lease_ms, loan_since=None
    )
    logger.info(
        "Handed %(count)d shards of node %(node)s to %(nodes)d other nodes",
        {"count": len(moved), "node": node_id, "nodes": len(published)},
    )
    return len(moved)


def _owners(client: Redis, keys: CrawlKeys, shards: int) -> dict[int, str]:
    pipe = client.pipeline(transaction=False)
    for shard in range(shards):
        pipe.get(keys.shard(shard).owner)
    return {
        shard: raw.decode("utf-8", "replace")
        for shard, raw in enumerate(pipe.execute())
        if raw is not None
    }


def entry_weight(entry: Mapping[str, object]) -> float | None:
    """A node's published weight in its entry; None if it has none yet (or wrote
    none we read)."""
    weight = entry.get("weight")
    if isinstance(weight, int | float) and math.isfinite(weight) and weight >= 0:
        return float(weight)
    return None


def _policy(entry: Mapping[str, object], default: str) -> str:
    policy = entry.get("dispatch")
    return policy if isinstance(policy, str) and policy in POLICIES else default
