"""Unit tests for crawler/policy/order.py: levels, priorities, scores, the depth limit.

Expected orders come from reference sort keys written here from the documented rules
(``bfs``: level, then higher priority, then FIFO; ``priority``: higher priority, then
level, then FIFO; priorities exact from -512 to 511, clamped beyond), never from the
module's own encoding.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler.policy.order import (
    MAX_LEVEL,
    TIERS_PER_DEPTH,
    check_order,
    class_level,
    depth_allowed,
    level_of,
    level_of_score,
    may_be_stranded,
    queue_class,
    rank_of,
    score_limit,
    score_of,
)
from tests.unit.properties import PROPERTY

# The documented range of priorities that order exactly.
LOWEST, HIGHEST = -512, 511
# Sequence numbers of a shard that order exactly in a score.
MAX_SEQUENCE = 2**32 - 1

levels = st.integers(0, MAX_LEVEL)
priorities = st.integers(LOWEST, HIGHEST)
hostile_priorities = st.integers(-(2**70), 2**70)
sequences = st.integers(0, MAX_SEQUENCE)


def score(level: int, priority: int, sequence: int, order: str) -> float:
    """A request's score the way Redis stores it: a double."""
    rank = rank_of(queue_class(level, priority), order)
    return float(score_of(rank, sequence))


def clamped(priority: int) -> int:
    return min(max(priority, LOWEST), HIGHEST)


def reference_key(request: tuple[int, int, int], order: str) -> tuple[int, ...]:
    """The documented order of (level, priority, sequence); lower goes first."""
    level, priority, sequence = request
    if order == "bfs":
        return (level, -clamped(priority), sequence)
    return (-clamped(priority), level, sequence)


@pytest.mark.parametrize(
    ("depth", "tier", "level"),
    [
        (0, 0, 0),
        (0, 1, 1),
        (0, TIERS_PER_DEPTH - 1, TIERS_PER_DEPTH - 1),
        (1, 0, TIERS_PER_DEPTH),
        (2, 3, 2 * TIERS_PER_DEPTH + 3),
        (127, 15, 127 * 16 + 15),
        (128, 0, MAX_LEVEL),
        (10**9, TIERS_PER_DEPTH - 1, MAX_LEVEL),
    ],
)
def test_level_table(depth: int, tier: int, level: int) -> None:
    assert level_of(depth, tier) == level


def test_depths_up_to_127_have_levels_of_their_own() -> None:
    assert MAX_LEVEL == 128 * TIERS_PER_DEPTH - 1


@pytest.mark.parametrize("depth", [0, 1, 5, 17, 100])
def test_every_request_of_a_depth_goes_before_the_next_depth(depth: int) -> None:
    assert level_of(depth, TIERS_PER_DEPTH - 1) < level_of(depth + 1, 0)


@pytest.mark.parametrize(
    ("depth", "tier"),
    [(-1, 0), (0, -1), (0, TIERS_PER_DEPTH), (3, 99), (-5, -5)],
)
def test_bad_depth_or_tier_is_rejected(depth: int, tier: int) -> None:
    with pytest.raises(ValueError, match=r"depth|tier"):
        level_of(depth, tier)


@pytest.mark.parametrize("level", [-1, MAX_LEVEL + 1, 2**40])
def test_a_level_out_of_range_has_no_queue_class(level: int) -> None:
    with pytest.raises(ValueError, match="level"):
        queue_class(level, 0)


@pytest.mark.parametrize("order", ["bfs", "priority"])
@pytest.mark.parametrize(
    ("first", "second"),
    [
        (10, 0),
        (1, 0),
        (0, -1),
        (100, -100),
        (HIGHEST, HIGHEST - 1),
        (LOWEST + 1, LOWEST),
    ],
)
def test_higher_priority_goes_first_within_a_level(
    order: str, first: int, second: int
) -> None:
    level = level_of(3, 2)
    assert score(level, first, 500, order) < score(level, second, 1, order)


@pytest.mark.parametrize("order", ["bfs", "priority"])
@pytest.mark.parametrize("priority", [LOWEST, -1, 0, 7, HIGHEST])
def test_fifo_among_equal_priorities(order: str, priority: int) -> None:
    scores = [score(level_of(2), priority, seq, order) for seq in (0, 1, 2, 10**9)]
    assert scores == sorted(set(scores))


@PROPERTY
@given(level=levels, priority=priorities, sequence=sequences)
def test_one_class_keeps_the_order_of_its_sequence(
    level: int, priority: int, sequence: int
) -> None:
    for order in ("bfs", "priority"):
        if sequence < MAX_SEQUENCE:
            assert score(level, priority, sequence, order) < score(
                level, priority, sequence + 1, order
            )


@PROPERTY
@given(
    shallow=levels,
    step=st.integers(1, MAX_LEVEL),
    priorities=st.tuples(hostile_priorities, hostile_priorities),
    sequences=st.tuples(sequences, sequences),
)
def test_bfs_never_mixes_levels(
    shallow: int,
    step: int,
    priorities: tuple[int, int],
    sequences: tuple[int, int],
) -> None:
    deep = min(shallow + step, MAX_LEVEL)
    if deep == shallow:
        return
    low_priority_shallow = score(shallow, priorities[0], sequences[0], "bfs")
    high_priority_deep = score(deep, priorities[1], sequences[1], "bfs")
    assert low_priority_shallow < high_priority_deep


@PROPERTY
@given(
    levels=st.tuples(levels, levels),
    higher=priorities,
    gap=st.integers(1, HIGHEST - LOWEST),
    sequences=st.tuples(sequences, sequences),
)
def test_priority_order_puts_priority_before_depth(
    levels: tuple[int, int],
    higher: int,
    gap: int,
    sequences: tuple[int, int],
) -> None:
    lower = higher - gap
    if lower < LOWEST:
        return
    first = score(levels[0], higher, sequences[0], "priority")
    assert first < score(levels[1], lower, sequences[1], "priority")


@PROPERTY
@given(
    requests=st.lists(
        st.tuples(levels, hostile_priorities, sequences), min_size=2, max_size=20
    ),
    order=st.sampled_from(["bfs", "priority"]),
)
def test_scores_sort_requests_in_the_documented_order(
    requests: list[tuple[int, int, int]], order: str
) -> None:
    by_score = sorted(requests, key=lambda r: (score(*r, order), r))
    by_rules = sorted(requests, key=lambda r: (reference_key(r, order), r))
    assert [reference_key(r, order) for r in by_score] == [
        reference_key(r, order) for r in by_rules
    ]


@pytest.mark.parametrize("order", ["bfs", "priority"])
def test_hostile_priorities_are_clamped_to_the_documented_bounds(order: str) -> None:
    level = level_of(1)
    huge = [10**6, 2**63, 10**30]
    for priority in huge:
        assert score(level, priority, 0, order) == score(level, HIGHEST, 0, order)
        assert score(level, priority, 0, order) < score(level, HIGHEST - 1, 0, order)
    for priority in (-(10**6), -(2**63), -(10**30)):
        assert score(level, priority, 0, order) == score(level, LOWEST, 0, order)
        assert score(level, priority, 0, order) > score(level, LOWEST + 1, 0, order)


@PROPERTY
@given(
    level=levels,
    priority=hostile_priorities,
    sequence=st.integers(0, 2**60),
    order=st.sampled_from(["bfs", "priority"]),
)
def test_every_score_is_an_exact_integer_in_a_double(
    level: int, priority: int, sequence: int, order: str
) -> None:
    exact = score_of(rank_of(queue_class(level, priority), order), sequence)
    assert exact < 2**53
    assert int(float(exact)) == exact


@PROPERTY
@given(
    level=levels,
    priority=hostile_priorities,
    sequence=sequences,
    order=st.sampled_from(["bfs", "priority"]),
)
def test_the_level_is_read_back_from_class_and_score(
    level: int, priority: int, sequence: int, order: str
) -> None:
    klass = queue_class(level, priority)
    assert class_level(klass) == level
    assert level_of_score(score(level, priority, sequence, order), order) == level


def test_the_largest_score_is_the_largest_exact_integer() -> None:
    largest = score_of(rank_of(queue_class(MAX_LEVEL, LOWEST), "bfs"), MAX_SEQUENCE)
    assert largest == 2**53 - 1
    assert largest == score_of(
        rank_of(queue_class(MAX_LEVEL, LOWEST), "priority"), MAX_SEQUENCE
    )


def test_a_sequence_past_its_room_never_reaches_the_next_rank() -> None:
    """A shard past 2**32 sequence numbers: clamped, not carried into the level."""
    for order in ("bfs", "priority"):
        beyond = score(level_of(0), 0, 2**40, order)
        next_rank = score(level_of(0), -1, 0, order)
        assert beyond < next_rank


@PROPERTY
@given(
    deepest=st.integers(0, MAX_LEVEL - 1),
    priority=hostile_priorities,
    sequence=sequences,
)
def test_score_limit_is_the_bfs_barrier(
    deepest: int, priority: int, sequence: int
) -> None:
    limit = score_limit(deepest)
    assert isinstance(limit, int)
    assert score(deepest, priority, sequence, "bfs") <= limit
    assert score(deepest + 1, priority, sequence, "bfs") > limit


@pytest.mark.parametrize("deepest", [None, MAX_LEVEL, MAX_LEVEL + 16])
def test_no_barrier_or_one_past_the_last_level_is_no_limit(deepest: int | None) -> None:
    assert score_limit(deepest) == "+inf"


@pytest.mark.parametrize(
    ("order", "lookahead"), [("bfs", -1), ("bfs", 0), ("bfs", 3), ("priority", -1)]
)
def test_valid_orders(order: str, lookahead: int) -> None:
    assert check_order(order, lookahead) == order


@pytest.mark.parametrize(
    ("order", "lookahead", "message"),
    [
        (
            "BFS",
            -1,
            "FRONTIER_ORDER must be one of bfs, priority, importance, got 'BFS'",
        ),
        ("", -1, "FRONTIER_ORDER must be one of bfs, priority, importance, got ''"),
        (None, -1, "FRONTIER_ORDER must be one of bfs, priority, importance, got None"),
        (
            "depth",
            0,
            "FRONTIER_ORDER must be one of bfs, priority, importance, got 'depth'",
        ),
        ("priority", 0, "FRONTIER_ORDER=priority needs FRONTIER_BFS_LOOKAHEAD=-1"),
        ("priority", 2, "FRONTIER_ORDER=priority needs FRONTIER_BFS_LOOKAHEAD=-1"),
    ],
)
def test_a_bad_order_is_one_line(order: object, lookahead: int, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}") as error:
        check_order(order, lookahead)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("depth", "limit", "allowed"),
    [
        (0, 0, True),
        (10**6, 0, True),
        (0, 1, True),
        (1, 1, True),
        (2, 1, False),
        (17, 17, True),
        (18, 17, False),
        (5, -1, True),
    ],
)
def test_depth_allowed(depth: int, limit: int, allowed: bool) -> None:
    assert depth_allowed(depth, limit) is allowed


@pytest.mark.parametrize("order", ["bfs", "priority"])
def test_a_shard_with_nothing_ready_may_hold_a_stranded_host(order: str) -> None:
    assert may_be_stranded(None, level_of(0), order)


def test_in_bfs_a_best_host_deeper_than_the_lowest_level_is_a_sign() -> None:
    deeper = score(level_of(2), 0, 5, "bfs")
    assert may_be_stranded(deeper, level_of(1), "bfs")
    assert not may_be_stranded(score(level_of(1), -9, 5, "bfs"), level_of(1), "bfs")


def test_in_priority_order_a_deeper_best_host_is_no_sign() -> None:
    deeper_first = score(level_of(5), 100, 5, "priority")
    assert not may_be_stranded(deeper_first, level_of(0), "priority")
