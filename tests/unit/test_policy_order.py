"""Unit tests for crawler/policy/order.py: breadth-first levels and the depth limit."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler.policy.order import (
    LEVEL_WEIGHT,
    MAX_LEVEL,
    TIERS_PER_DEPTH,
    depth_allowed,
    level_of,
)
from tests.unit.properties import PROPERTY

MAX_SEQUENCE = 2**36 - 1


def score(level: int, sequence: int) -> float:
    """A sorted-set score the way Redis stores it: a double."""
    return float(level * LEVEL_WEIGHT + sequence)


@pytest.mark.parametrize(
    ("depth", "tier", "level"),
    [
        (0, 0, 0),
        (0, 1, 1),
        (0, TIERS_PER_DEPTH - 1, TIERS_PER_DEPTH - 1),
        (1, 0, TIERS_PER_DEPTH),
        (2, 3, 2 * TIERS_PER_DEPTH + 3),
        (10**9, 0, MAX_LEVEL),
        (10**9, TIERS_PER_DEPTH - 1, MAX_LEVEL),
    ],
)
def test_level_table(depth: int, tier: int, level: int) -> None:
    assert level_of(depth, tier) == level


def test_tier_defaults_to_zero() -> None:
    assert level_of(3) == level_of(3, 0)


@pytest.mark.parametrize("depth", [0, 1, 5, 17, 100])
def test_every_request_of_a_depth_goes_before_the_next_depth(depth: int) -> None:
    slowest_of_depth = level_of(depth, TIERS_PER_DEPTH - 1)
    fastest_of_next = level_of(depth + 1, 0)
    assert slowest_of_depth < fastest_of_next


@pytest.mark.parametrize("depth", [0, 1, 17])
def test_lower_tiers_go_first_within_a_depth(depth: int) -> None:
    levels = [level_of(depth, tier) for tier in range(TIERS_PER_DEPTH)]
    assert levels == sorted(set(levels))


@PROPERTY
@given(
    first=st.tuples(st.integers(0, 10**6), st.integers(0, TIERS_PER_DEPTH - 1)),
    second=st.tuples(st.integers(0, 10**6), st.integers(0, TIERS_PER_DEPTH - 1)),
)
def test_level_order_never_contradicts_depth_then_tier(
    first: tuple[int, int], second: tuple[int, int]
) -> None:
    if first < second:
        assert level_of(*first) <= level_of(*second)
    assert 0 <= level_of(*first) <= MAX_LEVEL


def test_level_is_capped_at_max_level() -> None:
    deepest_exact = MAX_LEVEL // TIERS_PER_DEPTH
    assert level_of(deepest_exact, MAX_LEVEL % TIERS_PER_DEPTH) == MAX_LEVEL
    assert level_of(deepest_exact + 1, 0) == MAX_LEVEL
    assert level_of(2**40, 5) == MAX_LEVEL


@pytest.mark.parametrize(
    ("depth", "tier"),
    [(-1, 0), (0, -1), (0, TIERS_PER_DEPTH), (3, 99), (-5, -5)],
)
def test_bad_depth_or_tier_is_rejected(depth: int, tier: int) -> None:
    with pytest.raises(ValueError, match=r"depth|tier"):
        level_of(depth, tier)


def test_largest_score_is_exact_in_a_double() -> None:
    largest = MAX_LEVEL * LEVEL_WEIGHT + MAX_SEQUENCE
    assert largest == 2**53 - 1
    assert int(score(MAX_LEVEL, MAX_SEQUENCE)) == largest


def test_one_level_more_would_not_be_exact() -> None:
    """The control: the bound is tight, so the exactness test can fail."""
    beyond = (MAX_LEVEL + 1) * LEVEL_WEIGHT + 1
    assert int(float(beyond)) != beyond


@PROPERTY
@given(
    level=st.integers(0, MAX_LEVEL),
    sequence=st.integers(0, MAX_SEQUENCE),
)
def test_scores_are_exact_and_keep_their_order(level: int, sequence: int) -> None:
    assert int(score(level, sequence)) == level * LEVEL_WEIGHT + sequence
    if sequence < MAX_SEQUENCE:
        assert score(level, sequence) < score(level, sequence + 1)
    if level < MAX_LEVEL:
        assert score(level, MAX_SEQUENCE) < score(level + 1, 0)


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
