"""Whether the whole crawl is over: the end of crawl, decided the same on every node.

A node does not stop when its own shards run dry: other nodes may still find links
for them. The crawl is over when nothing is queued and nothing is leased in any
shard, as read at one moment (``CrawlShards.settled_totals``). Nodes started
together get a grace: one that has seen no work yet waits up to FRONTIER_NODE_TTL
while other nodes are alive, since the node with the seeds may not have pushed them
yet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from crawler.frontier.node.membership import Membership
    from crawler.frontier.store.crawlshards import CrawlShards

# The engine asks has_pending_requests() often; Redis is asked at most this often.
CHECK_INTERVAL = 1.0


class DrainWatch:
    def __init__(
        self, shards: CrawlShards, membership: Membership, opened_at: float
    ) -> None:
        self._shards = shards
        self._membership = membership
        self._opened_at = opened_at
        # When Redis was last read, what it said, and this node's trips by then.
        self._checked: tuple[float, bool, int] = (0.0, False, 0)
        self._seen_work = False

    def drained(self, now: float, own_leases: int = 0, trips: int = 0) -> bool:
        """Whether no request is queued, nor leased but the *own_leases* this node's
        engine still works on.

        "Not drained" is kept for CHECK_INTERVAL: work ends only through Redis, read
        again then. "Drained" holds only until this node's next round trip
        (*trips* counts them): its own leases' links and acks may queue work, and a
        stale "drained" would end the crawl with work queued (a spilled queue's
        head of one, popped before its refill, left no host ready for a moment)."""
        checked_at, drained, trips_then = self._checked
        if now - checked_at >= CHECK_INTERVAL or (drained and trips != trips_then):
            # None: a shard changed as it was read (work is moving): not drained.
            settled = self._shards.settled_totals()
            queued, leased = settled if settled is not None else (1, 0)
            drained = queued <= 0 and leased <= own_leases
            self._seen_work = self._seen_work or queued > 0 or leased > 0
            if drained and self._waiting_for_seeds(now):
                drained = False
            self._checked = (now, drained, trips)
        return drained

    def forget(self) -> None:
        """Ask Redis again next time: hosts were just scheduled again."""
        self._checked = (0.0, False, 0)

    def _waiting_for_seeds(self, now: float) -> bool:
        """A node that has seen no work waits while other nodes are alive, at most
        FRONTIER_NODE_TTL from its start."""
        if self._seen_work or now - self._opened_at >= self._shards.config.node_ttl:
            return False
        others = set(self._membership.live_nodes(now)) - {self._membership.node_id}
        return bool(others)
