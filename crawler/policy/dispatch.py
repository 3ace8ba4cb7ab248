"""Which live node owns which shard (``FRONTIER_DISPATCH``), and when work moves.

Every node computes the same *home* of each shard from the node table, with no
coordination: ``rendezvous`` (highest random weight, every node alike),
``round-robin`` (shard i to the i-th node, every node alike; a join moves most
shards), ``weighted`` (weighted rendezvous with quotas: each node gets exactly its
share of the shards by weight, each shard the node that ranks it highest among those
with room; a join or a new weight moves little more than the shards that change
hands). ``least-load`` and
``pick-2`` start from the weighted homes and add the pull model: a node with free
concurrency and nothing ready in its shards takes shards with ready hosts from a
node that has more ready hosts than free slots: the most loaded such node
(least-load: the work goes to where load is least) or the more loaded of two picked
at random (pick-2: nearly as good for far less reading). A shard that moved stays
where it went at least ``FRONTIER_DISPATCH_HOLD`` seconds, so shards do not
ping-pong; a moved shard is a *loan* that lasts while its borrower lives.

Pure: the node table, the loans and the ready counts come in; the caller's random
generator picks pick-2's pair.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import random
    from collections.abc import Collection, Mapping, Sequence

POLICIES = ("rendezvous", "round-robin", "weighted", "least-load", "pick-2")
# The policies that move shards to free capacity as the crawl runs.
PULLING = frozenset({"least-load", "pick-2"})
# A node's weight is its measured capacity, published again only when the
# measurement drifts this far from it (a new weight moves shards).
WEIGHT_DRIFT = 0.25


def _hash(shard: int, node: str) -> int:
    """64 bits of MD5 of (shard, node): the rendezvous draw."""
    digest = hashlib.md5(f"{shard}:{node}".encode(), usedforsecurity=False).digest()
    return int.from_bytes(digest[:8], "big")


def _weighted_score(shard: int, node: str, weight: float) -> float:
    """Weighted rendezvous (Schindelhauer and Schomaker): ``-w / ln u``, u uniform in
    (0, 1) from the hash; a node wins a share of shards proportional to w."""
    u = (_hash(shard, node) + 0.5) / 2.0**64
    return -weight / math.log(u)


def _live(weights: Mapping[str, float]) -> list[str]:
    """The nodes that take shards (a node of weight 0, a draining one, takes none)."""
    return sorted(node for node, weight in weights.items() if weight > 0)


def quotas(weights: Mapping[str, float], shards: int) -> dict[str, int]:
    """How many shards each node of positive weight gets: *shards* split in proportion
    to the weights, the remainders rounded by largest remainder so they sum to
    *shards* (ties to the node that sorts first)."""
    nodes = _live(weights)
    total = sum(weights[node] for node in nodes)
    exact = {node: shards * weights[node] / total for node in nodes}
    share = {node: math.floor(exact[node]) for node in nodes}
    by_remainder = sorted(nodes, key=lambda node: (share[node] - exact[node], node))
    for node in by_remainder[: shards - sum(share.values())]:
        share[node] += 1
    return share


def homes(weights: Mapping[str, float], shards: int, policy: str) -> dict[int, str]:
    """Every shard's home among the live nodes and their *weights*, before any loan
    (empty when no node takes shards).

    ``weighted`` and the pulling policies: every (shard, node) pair ranked by its
    weighted rendezvous score, best first, and a pair taken while its shard has no
    home and its node has room in its quota. Plain weighted rendezvous gives shares
    only proportional on average: with 64 shards its largest share is about 1.3 x
    its due (a crawl lasts as long as its most overloaded node takes); quotas make
    every share exact and still move few shards beyond those a join or a new weight
    must move (``bench.dispatch``)."""
    nodes = _live(weights)
    if not nodes:
        return {}
    if policy == "rendezvous":
        return {
            shard: max(nodes, key=lambda node: (_hash(shard, node), node))
            for shard in range(shards)
        }
    if policy == "round-robin":
        return {shard: nodes[shard % len(nodes)] for shard in range(shards)}
    room = quotas(weights, shards)
    ranked = sorted(
        (
            (_weighted_score(shard, node, weights[node]), node, shard)
            for shard in range(shards)
            for node in nodes
        ),
        reverse=True,
    )
    found: dict[int, str] = {}
    for _score, node, shard in ranked:
        if shard not in found and room[node] > 0:
            found[shard] = node
            room[node] -= 1
    return found


@dataclass(frozen=True, slots=True)
class Loan:
    """A shard that moved to free capacity: who holds it, since when (s)."""

    node: str
    since: float


def wanted_shards(  # noqa: PLR0913 (each is one input of the decision)
    node: str,
    weights: Mapping[str, float],
    shards: int,
    policy: str,
    *,
    loans: Mapping[int, Loan],
    live: Collection[str],
) -> frozenset[int]:
    """The shards *node* should hold: its homes not lent to another live node, and
    the shards lent to it. Without pulling, loans mean nothing."""
    home = homes(weights, shards, policy)
    if policy not in PULLING:
        return frozenset(s for s, owner in home.items() if owner == node)
    wanted = set()
    for shard in range(shards):
        loan = loans.get(shard)
        holder: str | None = home.get(shard)
        if loan is not None and loan.node in live and weights.get(loan.node, 0) > 0:
            holder = loan.node
        if holder == node:
            wanted.add(shard)
    return frozenset(wanted)


@dataclass(frozen=True, slots=True)
class NodeLoad:
    """A node as the node table shows it: what it can take and what waits for it."""

    node: str
    concurrency: int
    in_flight: int
    ready_hosts: int
    shards: frozenset[int] = frozenset()

    @property
    def free(self) -> int:
        """Download slots not in use."""
        return max(0, self.concurrency - self.in_flight)

    @property
    def waiting(self) -> int:
        """Ready hosts that no free slot of this node can take now."""
        return max(0, self.ready_hosts - self.free)

    @property
    def load(self) -> float:
        """What is in flight and ready against what the node can do at once (above 1:
        hosts wait for this node)."""
        return (self.in_flight + self.ready_hosts) / max(1, self.concurrency)

    @property
    def idle(self) -> bool:
        """Free slots and nothing ready in its shards: capacity going unused."""
        return self.free > 0 and self.ready_hosts == 0

    @property
    def saturated(self) -> bool:
        """Hosts ready in its shards that it cannot start now."""
        return self.waiting > 0


def state_of(load: NodeLoad, *, draining: bool) -> str:
    """The word the node table shows for a node's state."""
    if draining:
        return "draining"
    if load.saturated:
        return "saturated"
    return "idle" if load.idle else "working"


def donor_for(
    me: NodeLoad, others: Sequence[NodeLoad], policy: str, rng: random.Random
) -> NodeLoad | None:
    """Whom an idle *me* takes work from: a saturated node chosen by *policy*; None
    when *me* is not idle, the policy does not pull, or no chosen node is saturated."""
    if policy not in PULLING or not me.idle:
        return None
    if policy == "pick-2":
        pair = rng.sample(list(others), min(2, len(others)))
        chosen = max(pair, key=lambda other: (other.load, other.node), default=None)
        return chosen if chosen is not None and chosen.saturated else None
    saturated = [other for other in others if other.saturated]
    return max(saturated, key=lambda other: (other.load, other.node), default=None)


def shards_to_take(
    me: NodeLoad,
    donor: NodeLoad,
    ready_by_shard: Mapping[int, int],
    pinned: Collection[int],
) -> list[int]:
    """Which of *donor*'s shards *me* takes: shards with ready hosts, not *pinned*
    (moved within the hold), largest first, until they bring about as many ready
    hosts as *me* has free slots (a first shard up to twice that, so a shard of
    many hosts still moves), and never more than half of what waits on the donor
    (the donor keeps the rest, so the two do not swap places)."""
    budget = min(me.free, max(1, donor.waiting // 2))
    taken: list[int] = []
    candidates = sorted(
        (shard for shard in donor.shards if ready_by_shard.get(shard, 0) > 0),
        key=lambda shard: (-ready_by_shard[shard], shard),
    )
    for shard in candidates:
        if shard in pinned:
            continue
        ready = ready_by_shard[shard]
        if ready <= budget or (not taken and ready <= 2 * budget):
            taken.append(shard)
            budget -= ready
        if budget <= 0:
            break
    return taken


def published_weight(
    current: float | None, measured: float | None, drift: float = WEIGHT_DRIFT
) -> float | None:
    """The weight a node publishes from its *measured* capacity: the *current* one
    until the measurement moves more than *drift* away from it (a new weight moves
    shards: small wobbles must not)."""
    if measured is None or measured <= 0:
        return current
    if current is None or abs(measured - current) > drift * current:
        return measured
    return current


def weights_in_force(
    published: Mapping[str, float | None], concurrency: Mapping[str, int]
) -> dict[str, float]:
    """Each live node's weight for dispatch: its published weight, or, while it has
    none (not measured yet), its concurrency times the median pace a slot of the
    measured nodes gives (its concurrency alone when none is measured): a node of a
    quarter of the others' slots starts with about a quarter of their share."""
    per_slot = sorted(
        weight / concurrency[node]
        for node, weight in published.items()
        if weight and concurrency.get(node, 0) > 0
    )
    rate = per_slot[len(per_slot) // 2] if per_slot else 1.0
    return {
        node: weight if weight is not None else rate * max(1, concurrency.get(node, 1))
        for node, weight in published.items()
    }
