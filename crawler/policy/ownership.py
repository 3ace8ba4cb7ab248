"""Which live node owns which shard: rendezvous (highest random weight) hashing.

Every node computes the same answer from the same list of live nodes, with no
coordination: each shard goes to the node with the highest hash of (shard, node).
When a node joins or leaves, only the shards it gains or loses change owner.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Collection


def weight(shard: int, node: str) -> int:
    """The rendezvous weight of *node* for *shard* (the first 8 bytes of an MD5)."""
    digest = hashlib.md5(f"{shard}:{node}".encode(), usedforsecurity=False).digest()
    return int.from_bytes(digest[:8], "big")


def owner_of(shard: int, nodes: Collection[str]) -> str | None:
    """The node that should own *shard* (ties, if any, go to the larger id)."""
    if not nodes:
        return None
    return max(nodes, key=lambda node: (weight(shard, node), node))


def shards_of(node: str, nodes: Collection[str], shards: int) -> frozenset[int]:
    """The shards *node* should own among *nodes* (it counts itself as live)."""
    everyone = {*nodes, node}
    return frozenset(s for s in range(shards) if owner_of(s, everyone) == node)
