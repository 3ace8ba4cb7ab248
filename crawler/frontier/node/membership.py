"""This node's membership in the crawl: its registration, heartbeat and shards.

Every heartbeat (each maintenance round) the node renews its heartbeat key, rewrites
its entry in the registry, reads which nodes are alive, and claims the shards that
rendezvous hashing gives it among them. A shard's owner key is a lease only its
holder renews; a node takes a shard only when the key is free (released by its old
owner, or expired with a dead one), and the pop script refuses a node that does not
hold the key, so two nodes never serve one shard at once.
"""

from __future__ import annotations

import json
import logging
import math
import os
import socket
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from redis.exceptions import ResponseError

from crawler import __version__
from crawler.crawlstate.damage import delete_if_wrong_type, retyped
from crawler.crawlstate.readers import registry_entry
from crawler.frontier.node.nodeid import NodeIdentity, node_identity
from crawler.frontier.store.scripts import queue_script
from crawler.policy.ownership import shards_of

if TYPE_CHECKING:
    from collections.abc import Callable

    from redis import Redis

    from crawler.crawlstate.keys import CrawlKeys
    from crawler.frontier.frontierconfig import FrontierConfig
    from crawler.frontier.store.store import FrontierStore

logger = logging.getLogger(__name__)

# KEYS[1]: a shard's owner key. ARGV: node id, lease in ms.
# Renews the key if this node holds it (2), takes it if it is free (1); else 0.
CLAIM = """
local owner = redis.call('GET', KEYS[1])
if owner == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 2
end
if not owner then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
"""
# KEYS[1]: a shard's owner key. ARGV: node id. Frees the key only if this node holds it.
RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


@dataclass
class Membership:
    """This node's registration and the shards it holds.

    Without a *node_id*, the node's own (``crawler.frontier.node.nodeid``): the one it
    had before a restart, so ``resume`` finds its shards.
    """

    client: Redis
    keys: CrawlKeys
    config: FrontierConfig
    node_id: str = ""
    # Told of each key of the wrong type deleted (count, what): the store's count.
    on_damage: Callable[[int, str], None] = field(default=lambda count, what: None)
    owned: frozenset[int] = frozenset()
    started: float = 0.0
    # Shards whose owner key already held this node's id at its first heartbeat.
    resumed: frozenset[int] = frozenset()
    _last_beat: tuple[float, int] = (0.0, 0)
    _identity: NodeIdentity | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not self.node_id:
            self._identity = node_identity(self.config.node_name)
            self.node_id = self._identity.node_id
        self._claim = self.client.register_script(CLAIM)
        self._release = self.client.register_script(RELEASE)
        self._owner_keys = [self.keys.shard(s).owner for s in range(self.config.shards)]

    def beat(self, now: float, pages: int) -> frozenset[int]:
        """Renew this node's heartbeat and shards; the shards it holds now."""
        first = not self.started
        if first:
            self.started = now
        ttl = int(self.config.node_ttl * 1000)
        self.client.set(self.keys.heartbeat(self.node_id), "1", px=ttl)
        wanted = shards_of(self.node_id, self.live_nodes(now), self.config.shards)
        held, renewed = self._claim_all(wanted, ttl)
        if first:
            self.resumed = renewed
        self._release_all(self.owned - wanted)
        if held != self.owned:
            logger.info(
                "Node %(node)s now owns %(count)d of %(shards)d shards",
                {
                    "node": self.node_id,
                    "count": len(held),
                    "shards": self.config.shards,
                },
            )
        self.owned = held
        self._register(now, pages)
        return held

    def live_nodes(self, now: float) -> list[str]:
        """Ids of the registered nodes whose heartbeat is alive; forgets dead ones
        (a node's entry outlives its heartbeat by one TTL, for `frontier status`).

        An entry no node wrote (not UTF-8, not a JSON entry) or a heartbeat without
        a TTL is not a node: deleted and counted, so it owns no shards.
        """
        entries = self._entries()
        ids = [key.decode("utf-8", "replace") for key in entries]
        pipe = self.client.pipeline(transaction=False)
        for node in ids:
            pipe.pttl(self.keys.heartbeat(node))
        ttls = pipe.execute() if ids else []
        live, dead = [], []
        for raw, node, ttl in zip(entries, ids, ttls, strict=True):
            age = _age(entries, raw, now)
            if ttl == -1:  # a heartbeat without a TTL is not one a node wrote
                self.client.delete(self.keys.heartbeat(node))
                self.on_damage(1, f"heartbeat of node {node!r} had no TTL: deleted")
            if age == float("inf"):
                self.on_damage(1, f"registry entry {raw[:100]!r} is not a node's")
                dead.append(raw)
            elif ttl >= 0:
                live.append(node)
            elif age > 2 * self.config.node_ttl:
                dead.append(raw)
        if dead:
            self.client.hdel(self.keys.nodes, *dead)
        return live

    def _entries(self) -> dict[bytes, bytes]:
        """The registry (node id -> JSON entry); a key of the wrong type is deleted."""
        return retyped(
            self.client,
            self.keys.nodes,
            "hash",
            lambda: self.client.hgetall(self.keys.nodes),  # type: ignore[arg-type,return-value]
            self.on_damage,
        )

    def leave(self) -> None:
        """Clean close: free the shards and deregister, so others take over now."""
        self._release_all(self.owned)
        self.owned = frozenset()
        self.client.delete(self.keys.heartbeat(self.node_id))
        retyped(
            self.client,
            self.keys.nodes,
            "hash",
            lambda: self.client.hdel(self.keys.nodes, self.node_id),
            self.on_damage,
        )
        if self._identity is not None:
            self._identity.release()

    def lost(self, shard: int) -> None:
        """The pop script found *shard* owned by another node (this one was late)."""
        self.owned -= {shard}

    def _claim_all(
        self, shards: frozenset[int], ttl: int
    ) -> tuple[frozenset[int], frozenset[int]]:
        """The shards held after claiming *shards*, and those already held before."""
        ordered = sorted(shards)

        def claim() -> list[int]:
            pipe = self.client.pipeline(transaction=False)
            for shard in ordered:
                keys = [self._owner_keys[shard]]
                queue_script(pipe, self._claim, keys, [self.node_id, ttl])
            return pipe.execute() if ordered else []

        claimed = list(zip(ordered, self._on_owner_keys(claim), strict=True))
        return (
            frozenset(s for s, reply in claimed if reply),
            frozenset(s for s, reply in claimed if reply == 2),
        )

    def resume(self, store: FrontierStore, now: float) -> int:
        """Requeue, before the first pop, the leases of the shards this node's
        previous run held until it died: that run's requests, which no one will
        ack. Only the owner pops from a shard, so they are its own (but for a
        request a former owner still had in flight when it handed the shard over,
        which may then be fetched twice). How many."""
        if not self.resumed:
            return 0
        leases = store.shards.leases_of(self.resumed)
        requeued = store.requeue(now, leases) if leases else 0
        logger.info(
            "Node %(node)s resumed: took back %(shards)d shards at once and put "
            "%(count)d requests its previous run held back in their queues",
            {"node": self.node_id, "shards": len(self.resumed), "count": requeued},
        )
        return requeued

    def _release_all(self, shards: frozenset[int]) -> None:
        if not shards:
            return

        def release() -> list[int]:
            pipe = self.client.pipeline(transaction=False)
            for shard in shards:
                keys = [self._owner_keys[shard]]
                queue_script(pipe, self._release, keys, [self.node_id])
            return pipe.execute()

        self._on_owner_keys(release)

    def _on_owner_keys(self, run: Callable[[], list[int]]) -> list[int]:
        """``run()``; if an owner key is of the wrong type, every such key is deleted
        (counted) and ``run()`` runs once more."""
        try:
            return run()
        except ResponseError:
            deleted = [
                delete_if_wrong_type(self.client, key, "string", self.on_damage)
                for key in self._owner_keys
            ]
            if not any(deleted):
                raise
        return run()

    def _register(self, now: float, pages: int) -> None:
        """Rewrite this node's registry entry (read by `scrapy frontier status`)."""
        last_time, last_pages = self._last_beat
        rate = (pages - last_pages) * 60 / (now - last_time) if last_time else 0.0
        self._last_beat = (now, pages)
        entry = {
            "id": self.node_id,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "started": self.started,
            "version": __version__,
            "heartbeat": now,
            "shards": sorted(self.owned),
            "pages": pages,
            "pages_per_min": round(rate, 1),
        }
        retyped(
            self.client,
            self.keys.nodes,
            "hash",
            lambda: self.client.hset(self.keys.nodes, self.node_id, json.dumps(entry)),
            self.on_damage,
        )


def _age(entries: dict[bytes, bytes], node: bytes, now: float) -> float:
    """Seconds since *node*'s last heartbeat by its registry entry (inf if unreadable:
    not a node's)."""
    entry = registry_entry(entries[node])
    try:
        age = now - float(entry["heartbeat"]) if entry is not None else math.inf
        node.decode("utf-8")
    except (KeyError, ValueError, TypeError, RecursionError):
        return math.inf
    return math.inf if math.isnan(age) else age
