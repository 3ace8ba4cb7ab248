"""The frontier's order: which queued request goes first, and how deep a crawl goes.

A request's *level* is its depth, then its timeout tier (lower tiers first). Its
*queue class* adds its ``Request.priority``: ``level * PRIORITY_BANDS + band``, where
the band is ``MAX_PRIORITY - priority`` (higher priority, lower band). A host keeps one
FIFO list per queue class, so requests of one class go out in the order they were
queued, exactly. The class is what is stored (queues, leases, held and failed
entries); the level is ``class // PRIORITY_BANDS`` whatever the order, so the BFS
barrier's counts, the depth limit and depth repair read it the same way in both.

``FRONTIER_ORDER`` says how classes rank: ``bfs`` ranks by level, then priority
(priority orders requests within a level); ``priority`` ranks by priority, then
level (Scrapy's own order: higher priority first regardless of depth);
``importance`` ranks by the band of the URL's importance
(``crawler.policy.importance``: the push script sets it in place of the priority
band, and moves a queued URL to a better band as in-links arrive), then level. A host's
score in the shard's ``ready`` set is ``rank * SEQUENCE_LIMIT + seq`` of its head
request, so across hosts the best head goes first, FIFO among equal ranks.

Scores must be exact integers in a double (below 2**53): 11 bits of level, 10 bits
of priority band and 32 bits of sequence (2**53 - 1 at most). Priorities from
``MIN_PRIORITY`` (-512) to ``MAX_PRIORITY`` (511) order exactly, which covers
Scrapy's usual -100..100 and its retry and redirect adjustments; beyond, a priority
counts as the bound: 10**6 ties with 511 (FIFO among them) and still goes before
every lower one. Depths 0 to 127 have levels of their own (16 tiers each; deeper
ones share the last level, still after every shallower one), far past DEPTH_LIMIT's
17 and the 64 depths depth repair follows. A shard's sequence (one per push and per
lease) past 2**32 is clamped in the score: FIFO across hosts then falls back to
host name order, and nothing is dropped. The other way, a zero-padded sequence in
the sorted-set member with equal scores, was not needed: a host's queue is a list
per class (FIFO for free), and the ready set's member is the host.

The order reaches the scripts as ARGV[2] of every call (no extra round trip); the
constants are written into the scripts' source from this module. A crawl keeps the
order it was queued with (``<prefix>:meta``), since stored ranks follow it.
"""

from __future__ import annotations

# Room for timeout tiers inside one depth.
TIERS_PER_DEPTH = 16
# Levels that order exactly: 2**11, depths 0 to 127.
LEVELS = 2**11
MAX_LEVEL = LEVELS - 1
# Priorities that order exactly; larger ones are clamped to these bounds.
PRIORITY_BANDS = 2**10
MAX_PRIORITY = PRIORITY_BANDS // 2 - 1
MIN_PRIORITY = MAX_PRIORITY - PRIORITY_BANDS + 1
# Room for a shard's sequence number in a score: rank * SEQUENCE_LIMIT + seq.
SEQUENCE_LIMIT = 2**32
# The values of FRONTIER_ORDER.
ORDERS = ("bfs", "priority", "importance")
# The orders that rank a class by its band first (Request.priority's, or the
# importance band of crawler.policy.importance), then by its level.
BAND_FIRST = ("priority", "importance")


def level_of(depth: int, tier: int = 0) -> int:
    """The queue level of a request: depth first, then tier, capped to stay exact."""
    if depth < 0 or not 0 <= tier < TIERS_PER_DEPTH:
        raise ValueError(f"bad depth {depth!r} or tier {tier!r}")
    return min(depth * TIERS_PER_DEPTH + tier, MAX_LEVEL)


def band_of(priority: int) -> int:
    """The priority band: 0 for the highest priority; out-of-range ones clamped."""
    return MAX_PRIORITY - min(max(priority, MIN_PRIORITY), MAX_PRIORITY)


def queue_class(level: int, priority: int = 0) -> int:
    """The queue class a request is stored under: its level and priority band."""
    if not 0 <= level <= MAX_LEVEL:
        raise ValueError(f"bad level {level!r}")
    return level * PRIORITY_BANDS + band_of(priority)


def class_level(queue_class: int) -> int:
    """The level of a queue class (the same in every order)."""
    return queue_class // PRIORITY_BANDS


def rank_of(queue_class: int, order: str) -> int:
    """Where a class ranks: lower goes first. Below ``LEVELS * PRIORITY_BANDS``."""
    if order in BAND_FIRST:
        band = queue_class % PRIORITY_BANDS
        return band * LEVELS + class_level(queue_class)
    return queue_class


def score_of(rank: int, sequence: int) -> int:
    """A host's score in ``ready`` for its head request (exact in a double)."""
    return rank * SEQUENCE_LIMIT + min(sequence, SEQUENCE_LIMIT - 1)


def level_of_score(score: float, order: str) -> int:
    """The level of the head request a ``ready`` score was computed from."""
    rank = int(score) // SEQUENCE_LIMIT
    if order in BAND_FIRST:
        return rank % LEVELS
    return rank // PRIORITY_BANDS


def score_limit(deepest_level: int | None) -> int | str:
    """The highest ``bfs`` score of a request no deeper than *deepest_level*
    (Redis' ``+inf`` for no limit): the BFS barrier as a score range."""
    if deepest_level is None or deepest_level >= MAX_LEVEL:
        return "+inf"
    return (deepest_level + 1) * PRIORITY_BANDS * SEQUENCE_LIMIT - 1


def may_be_stranded(best: float | None, lowest_level: int, order: str) -> bool:
    """Whether a shard with no host waiting, requests outstanding down to
    *lowest_level* and *best* as its best ready score may hold a stranded host (one
    with requests queued, yet neither ready nor waiting): nothing is ready, or, in
    ``bfs``, its best ready host is deeper than its lowest level. In ``priority``
    and ``importance`` a deeper best is the order at work, not a sign of one.
    """
    if best is None:
        return True
    return order == "bfs" and level_of_score(best, order) > lowest_level


def check_order(order: object, lookahead: int) -> str:
    """*order* if it is a valid FRONTIER_ORDER with this lookahead; raises
    ``ValueError`` with one line otherwise. A depth barrier cannot go with
    ``priority`` or ``importance``: it would hold back the deep requests those
    orders put first, and a host's head could wait behind the barrier while its
    shallow requests block it.
    """
    if order not in ORDERS:
        raise ValueError(
            f"FRONTIER_ORDER must be one of {', '.join(ORDERS)}, got {order!r}"
        )
    if order in BAND_FIRST and lookahead >= 0:
        raise ValueError(
            f"FRONTIER_ORDER={order} needs FRONTIER_BFS_LOOKAHEAD=-1 (no depth "
            f"barrier: {order} leads across depths), got {lookahead}"
        )
    return str(order)


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
