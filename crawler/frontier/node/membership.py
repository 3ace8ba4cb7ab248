"""This node's membership in the crawl: its registration, heartbeat and shards.

Every heartbeat (each maintenance round) the node renews its heartbeat key, reads
the node table (which nodes are alive, their weights and loads), claims the shards
that ``FRONTIER_DISPATCH`` gives it among them (``crawler.policy.dispatch``), takes
shards with waiting hosts from a saturated node when it has capacity to spare
(``node/handover.py``), and rewrites its entry: its capacity, weight and load. A
shard's owner key is a lease only its holder renews; a node takes a shard only when
the key is free (released by its old owner, or expired with a dead one) or by an
atomic hand-over from its holder, and the pop script refuses a node that does not
hold the key, so two nodes never serve one shard at once.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
import socket
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from redis.exceptions import ResponseError

from crawler import __version__
from crawler.crawlstate.damage import delete_if_wrong_type, retyped
from crawler.crawlstate.readers import registry_entry
from crawler.frontier.node.capacity import CapacityMeter, Sample, is_saturated
from crawler.frontier.node.handover import (
    entry_weight,
    move_shards,
    read_loans,
    ready_by_shard,
)
from crawler.frontier.node.nodeid import NodeIdentity, node_identity
from crawler.frontier.store.scripts import queue_script
from crawler.policy.dispatch import (
    Loan,
    NodeLoad,
    donor_for,
    published_weight,
    shards_to_take,
    state_of,
    wanted_shards,
    weights_in_force,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Mapping
    from typing import Any

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


@dataclass(frozen=True, slots=True)
class NodeReport:
    """What the node's engine says at a heartbeat: pages fetched, its concurrency
    in force, its requests in flight, its weight setting (0: measured) and whether
    it was told to drain."""

    pages: int = 0
    concurrency: int = 16
    in_flight: int = 0
    weight_setting: float = 0.0
    draining: bool = False


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
    # Shards gained and lost since the start; shards pulled from and given to others.
    moves: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(("in", "out", "pulled", "given"), 0)
    )
    meter: CapacityMeter = field(default_factory=CapacityMeter)
    weight: float | None = None  # the weight published; None: not measured yet
    _identity: NodeIdentity | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not self.node_id:
            self._identity = node_identity(self.config.node_name)
            self.node_id = self._identity.node_id
        self._claim = self.client.register_script(CLAIM)
        self._release = self.client.register_script(RELEASE)
        self._owner_keys = [self.keys.shard(s).owner for s in range(self.config.shards)]
        self._rng = random.Random(self.node_id)  # pick-2's pairs  # noqa: S311

    def beat(
        self,
        now: float,
        report: NodeReport | None = None,
        told_to_drain: frozenset[str] = frozenset(),
    ) -> frozenset[int]:
        """Renew this node's heartbeat and shards, take work to spare capacity, and
        publish its entry; the shards it holds now. Nodes *told_to_drain* get no
        shard, before their own entries say they drain."""
        report = report or NodeReport()
        first = not self.started
        if first:
            self.started = now
        ttl = int(self.config.node_ttl * 1000)
        self.client.set(self.keys.heartbeat(self.node_id), "1", px=ttl)
        table = self.node_table(now)
        loans = read_loans(self.client, self.keys, self.config.shards)
        wanted = self._wanted(table, loans, report, told_to_drain)
        held, renewed = self._claim_all(wanted, ttl)
        if first:
            self.resumed = renewed
            held |= self._take_share(wanted - held, table.keys(), ttl)
        self._release_all(self.owned - wanted)
        ready = ready_by_shard(self.client, self.keys, held, now)
        me = NodeLoad(
            self.node_id,
            report.concurrency,
            report.in_flight,
            sum(ready.values()),
            held,
        )
        if not report.draining and not first:
            held |= self._pull(me, table, loans, now, ttl)
        self._count_moves(held, loans)
        self.owned = held
        saturated = is_saturated(report.concurrency, report.in_flight, me.waiting)
        self.meter.record(Sample(now, report.pages, report.concurrency, saturated))
        self._publish_weight(report)
        self._register(now, report, me)
        return held

    def _wanted(
        self,
        table: Mapping[str, dict[str, Any]],
        loans: Mapping[int, Loan],
        report: NodeReport,
        told_to_drain: frozenset[str],
    ) -> frozenset[int]:
        """The shards the dispatch policy gives this node among the live nodes, by
        their weights (none while it drains)."""
        if report.draining:
            return frozenset()
        weights = weights_in_force(
            {node: entry_weight(entry) for node, entry in table.items()}
            | {self.node_id: report.weight_setting or self.weight}
            | dict.fromkeys(told_to_drain & table.keys(), 0.0),
            {node: _count(entry, "concurrency") for node, entry in table.items()}
            | {self.node_id: report.concurrency},
        )
        return wanted_shards(
            self.node_id,
            weights,
            self.config.shards,
            self.config.dispatch,
            loans=loans,
            live={*table, self.node_id},
        )

    def _take_share(
        self, shards: frozenset[int], live: Collection[str], ttl: int
    ) -> frozenset[int]:
        """A joining node takes its share from the live nodes that hold it, at its
        first heartbeat, instead of waiting for them to let go at theirs."""
        if not shards:
            return frozenset()
        ordered = sorted(shards)
        pipe = self.client.pipeline(transaction=False)
        for shard in ordered:
            pipe.get(self._owner_keys[shard])
        by_giver: dict[str, dict[int, str]] = {}
        for shard, raw in zip(ordered, pipe.execute(), strict=True):
            giver = raw.decode("utf-8", "replace") if raw is not None else None
            if giver is not None and giver in live:
                by_giver.setdefault(giver, {})[shard] = self.node_id
        taken: frozenset[int] = frozenset()
        for giver, moves in by_giver.items():
            taken |= move_shards(
                self.client,
                self.keys,
                moves,
                giver=giver,
                lease_ms=ttl,
                loan_since=None,
            )
        return taken

    def _publish_weight(self, report: NodeReport) -> None:
        """The weight this node publishes: its setting, else its measured capacity
        once it drifts far enough from the weight in force."""
        if report.weight_setting > 0:
            self.weight = report.weight_setting
        else:
            self.weight = published_weight(self.weight, self.meter.capacity)

    def _pull(
        self,
        me: NodeLoad,
        table: Mapping[str, dict[str, Any]],
        loans: Mapping[int, Loan],
        now: float,
        ttl: int,
    ) -> frozenset[int]:
        """Shards taken, as loans, from a saturated node while this one idles."""
        others = [_load_of(node, entry) for node, entry in table.items()]
        donor = donor_for(me, others, self.config.dispatch, self._rng)
        if donor is None:
            return frozenset()
        # The donor's entry is a heartbeat old: read its shards' hosts afresh.
        ready = ready_by_shard(self.client, self.keys, donor.shards, now)
        fresh = NodeLoad(
            donor.node, donor.concurrency, donor.in_flight, sum(ready.values()),
            donor.shards,
        )  # fmt: skip
        hold = self.config.dispatch_hold
        pinned = {s for s, loan in loans.items() if now - loan.since < hold}
        wanted = shards_to_take(me, fresh, ready, pinned)
        moves = dict.fromkeys(wanted, self.node_id)
        taken = move_shards(
            self.client,
            self.keys,
            moves,
            giver=donor.node,
            lease_ms=ttl,
            loan_since=now,
        )
        if taken:
            self.moves["pulled"] += len(taken)
            logger.info(
                "Node %(node)s took %(count)d shards with %(hosts)d hosts ready from "
                "node %(donor)s (load %(load).1f), which had more than it could fetch",
                {
                    "node": self.node_id,
                    "count": len(taken),
                    "hosts": sum(ready[s] for s in taken),
                    "donor": donor.node,
                    "load": fresh.load,
                },
            )
        return taken

    def _count_moves(self, held: frozenset[int], loans: Mapping[int, Loan]) -> None:
        """Count and log the shards gained and lost since the last heartbeat (lost to
        a node that pulled them: given)."""
        if held == self.owned:
            return
        lost = self.owned - held
        self.moves["in"] += len(held - self.owned)
        self.moves["out"] += len(lost)
        self.moves["given"] += sum(
            1
            for shard in lost
            if (loan := loans.get(shard)) is not None and loan.node != self.node_id
        )
        logger.info(
            "Node %(node)s now owns %(count)d of %(shards)d shards",
            {"node": self.node_id, "count": len(held), "shards": self.config.shards},
        )

    def node_table(self, now: float) -> dict[str, dict[str, Any]]:
        """The other live nodes' registry entries (unreadable ones as empty)."""
        entries = self._entries()
        live = set(self._live_of(entries, now)) - {self.node_id}
        table = {}
        for raw, value in entries.items():
            node = raw.decode("utf-8", "replace")
            if node in live:
                table[node] = registry_entry(value) or {}
        return table

    def live_nodes(self, now: float) -> list[str]:
        """Ids of the registered nodes whose heartbeat is alive; forgets dead ones
        (a node's entry outlives its heartbeat by one TTL, for `frontier status`).

        An entry no node wrote (not UTF-8, not a JSON entry) or a heartbeat without
        a TTL is not a node: deleted and counted, so it owns no shards.
        """
        return self._live_of(self._entries(), now)

    def _live_of(self, entries: dict[bytes, bytes], now: float) -> list[str]:
        """``live_nodes`` of the registry *entries* already read."""
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

    def _register(self, now: float, report: NodeReport, load: NodeLoad) -> None:
        """Rewrite this node's entry in the node table (read by the other nodes'
        dispatch, `scrapy frontier nodes|status`, the dashboard and metrics)."""
        capacity = self.meter.capacity
        entry = {
            "id": self.node_id,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "started": self.started,
            "version": __version__,
            "heartbeat": now,
            "shards": sorted(self.owned),
            "pages": report.pages,
            "pages_per_min": round(self.meter.pages_per_min(), 1),
            "concurrency": report.concurrency,
            "in_flight": report.in_flight,
            "ready_hosts": load.ready_hosts,
            "capacity": None if capacity is None else round(capacity, 2),
            "weight": 0.0 if report.draining else self.weight,
            "weight_from": _weight_source(report, self.weight),
            "load": round(load.load, 2),
            "state": state_of(load, draining=report.draining),
            "dispatch": self.config.dispatch,
            "shards_in": self.moves["in"],
            "shards_out": self.moves["out"],
        }
        retyped(
            self.client,
            self.keys.nodes,
            "hash",
            lambda: self.client.hset(self.keys.nodes, self.node_id, json.dumps(entry)),
            self.on_damage,
        )


def _weight_source(report: NodeReport, weight: float | None) -> str:
    if report.weight_setting > 0:
        return "setting"
    return "default" if weight is None else "measured"


def _count(entry: Mapping[str, Any], name: str) -> int:
    value = entry.get(name)
    return value if isinstance(value, int) and value >= 0 else 0


def _load_of(node: str, entry: Mapping[str, Any]) -> NodeLoad:
    """Another node's load as its entry gives it (an entry without it: no load)."""
    shards = entry.get("shards")
    owned = frozenset(
        s for s in shards if isinstance(s, int)
    ) if isinstance(shards, list) else frozenset()  # fmt: skip
    return NodeLoad(
        node,
        max(1, _count(entry, "concurrency")),
        _count(entry, "in_flight"),
        _count(entry, "ready_hosts"),
        owned,
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
