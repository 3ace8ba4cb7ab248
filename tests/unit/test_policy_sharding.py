"""Unit tests for crawler/policy/sharding.py: the cluster-wide shard formula."""

from __future__ import annotations

import hashlib
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler.policy.sharding import check_shards, shard_of
from tests.unit.properties import PROPERTY

HOSTS = [
    "example.com",
    "www.example.org",
    "127.0.0.1",
    "::1",
    "xn--bcher-kva.example",
    "bücher.example",
    "a",
    "",
    "host-with-a-long-name.sub.sub.example.co.uk",
]
SHARD_COUNTS = [1, 2, 64, 1024]


def documented_shard(key: str, shards: int) -> int:
    """The formula as the docs state it, written independently of the module."""
    return int(hashlib.md5(key.encode()).hexdigest(), 16) & (shards - 1)  # noqa: S324 -- the documented shard hash, not security


@pytest.mark.parametrize("shards", SHARD_COUNTS)
@pytest.mark.parametrize("key", HOSTS)
def test_shard_matches_documented_formula(key: str, shards: int) -> None:
    assert shard_of(key, shards) == documented_shard(key, shards)


# Computed once by hand with python's hashlib and pasted: other implementations of the
# cluster contract (in any language) must agree with these.
@pytest.mark.parametrize(
    ("key", "shards", "expected"),
    [
        ("example.com", 64, 50),
        ("example.com", 1024, 370),
        ("www.example.org", 64, 16),
        ("www.example.org", 1024, 848),
        ("127.0.0.1", 64, 22),
        ("127.0.0.1", 1024, 214),
        ("", 64, 62),
        ("example.com", 1, 0),
    ],
)
def test_shard_matches_pasted_vectors(key: str, shards: int, expected: int) -> None:
    assert shard_of(key, shards) == expected


@pytest.mark.parametrize("shards", [1, 2, 4, 8, 64, 256, 1024])
def test_power_of_two_shard_counts_are_accepted(shards: int) -> None:
    assert check_shards(shards) == shards


@pytest.mark.parametrize("shards", [0, 3, 6, -4, 1000])
def test_other_shard_counts_are_rejected_naming_the_setting(shards: int) -> None:
    with pytest.raises(ValueError, match="FRONTIER_SHARDS") as info:
        check_shards(shards)
    assert "\n" not in str(info.value)


@PROPERTY
@given(key=st.text(), power=st.integers(min_value=0, max_value=10))
def test_shard_is_always_in_range(key: str, power: int) -> None:
    shards = 2**power
    assert 0 <= shard_of(key, shards) < shards


def test_synthetic_hosts_spread_evenly_over_shards() -> None:
    counts = Counter(shard_of(f"host{i}.example{i % 7}.com", 64) for i in range(10_000))
    assert set(counts) == set(range(64))
    assert min(counts.values()) >= 100
    assert max(counts.values()) <= 230
