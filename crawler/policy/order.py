"""Breadth-first order: which queued request goes first, and how deep a crawl goes.

A request's *level* orders it: every request of depth d goes before any of depth d+1,
and within a depth, lower timeout tiers go first. Within a level, requests go out in
the order they were queued (a per-shard sequence number breaks ties, never Redis'
member order).
"""

from __future__ import annotations

# Room for timeout tiers inside one depth.
TIERS_PER_DEPTH = 16
# Sequence numbers below 2**36 per shard; level * LEVEL_WEIGHT + sequence stays an
# exact integer in a double (a Redis sorted-set score) for levels below 2**17.
LEVEL_WEIGHT = 2**36
MAX_LEVEL = 2**17 - 1


def level_of(depth: int, tier: int = 0) -> int:
    """The queue level of a request: depth first, then tier, capped to stay exact."""
    if depth < 0 or not 0 <= tier < TIERS_PER_DEPTH:
        raise ValueError(f"bad depth {depth!r} or tier {tier!r}")
    return min(depth * TIERS_PER_DEPTH + tier, MAX_LEVEL)


def depth_allowed(depth: int, depth_limit: int) -> bool:
    """Whether a request at *depth* may be crawled; a limit of 0 means no limit."""
    return depth_limit <= 0 or depth <= depth_limit


def deepest_level_allowed(lowest_level: int | None, lookahead: int) -> int | None:
    """The deepest level that may be handed out, or None for no limit.

    *lowest_level* is the lowest level with requests queued or in flight anywhere in
    the crawl. With *lookahead* 0 the crawl is strictly breadth-first: no request of
    depth d+1 goes out while one of depth d is unfinished, so every page is reached
    first by a shortest path and carries its true depth. Each extra level of
    lookahead lets fast hosts run ahead of slow ones at the cost of that guarantee; a
    negative lookahead removes the barrier.
    """
    if lookahead < 0 or lowest_level is None:
        return None
    depth = lowest_level // TIERS_PER_DEPTH
    return (depth + lookahead + 1) * TIERS_PER_DEPTH - 1
