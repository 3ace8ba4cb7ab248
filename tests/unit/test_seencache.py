"""Unit tests for crawler/context/seencache.py: the compact local seen cache."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy.settings import Settings

from crawler.context.seencache import BUCKET, MAX_DEPTH, SLOT_BYTES, SeenCache
from tests.unit.properties import PROPERTY


def test_add_is_true_the_first_time_then_false() -> None:
    cache = SeenCache(10)
    assert cache.add(b"a") is True
    assert cache.add(b"a") is False
    assert cache.add("https://a.example/") is True
    assert cache.add("https://a.example/") is False
    assert len(cache) == 2


def test_a_full_bucket_forgets_its_oldest_entry() -> None:
    cache = SeenCache(2)  # one bucket of two slots
    for fingerprint in (b"a", b"b", b"c"):
        assert cache.add(fingerprint)
    assert len(cache) == 2
    assert cache.add(b"c") is False
    assert cache.add(b"b") is False
    assert cache.add(b"a") is True  # forgotten: "a" was the oldest
    assert cache.add(b"c") is False  # "b" made room for "a"; "c" stayed
    assert cache.add(b"b") is True


def test_seeing_an_entry_again_does_not_make_it_younger() -> None:
    """Oldest first, not least recently used: a hit changes nothing."""
    cache = SeenCache(2)
    cache.add(b"a")
    cache.add(b"b")
    assert cache.add(b"a") is False
    cache.add(b"c")
    assert cache.add(b"a") is True


def test_size_zero_never_remembers() -> None:
    cache = SeenCache(0)
    for _ in range(3):
        assert cache.add(b"a") is True
    assert cache.depth_of(b"a") is None
    cache.discard(b"a")
    assert len(cache) == 0


def test_size_one_remembers_only_the_last() -> None:
    cache = SeenCache(1)
    assert cache.add(b"a")
    assert not cache.add(b"a")
    assert cache.add(b"b")
    assert cache.add(b"a")


@PROPERTY
@given(
    size=st.integers(0, BUCKET),
    fingerprints=st.lists(st.binary(min_size=1, max_size=2), max_size=60),
)
def test_one_bucket_matches_a_model_and_stays_bounded(
    size: int, fingerprints: list[bytes]
) -> None:
    """Up to one bucket's size, the cache is the exact oldest-first set."""
    cache = SeenCache(size)
    model: list[bytes] = []
    for fingerprint in fingerprints:
        expected = fingerprint not in model
        assert cache.add(fingerprint) is expected
        if expected and size:
            model = [*model, fingerprint][-size:]
        assert len(cache) == len(model) <= size


@PROPERTY
@given(
    capacity=st.integers(0, 200),
    keys=st.lists(st.text(max_size=3) | st.binary(max_size=3), max_size=300),
)
def test_never_says_seen_for_a_key_never_added(capacity: int, keys: list) -> None:
    """What it remembers is a subset of what was added, within its capacity: it
    may forget (a round trip to Redis) but never invents a key."""
    cache = SeenCache(capacity)
    added: set = set()
    for key in keys:
        if cache.depth_of(key) is not None:
            assert key in added
        cache.add(key)
        added.add(key)
        assert len(cache) <= cache.capacity <= max(capacity, 1)


def test_a_key_seen_again_shallower_goes_to_redis_again() -> None:
    """Depth repair: only Redis knows whether a shorter path re-queues the URL."""
    cache = SeenCache(10)
    assert cache.add(b"a", 5)
    assert not cache.add(b"a", 5)
    assert not cache.add(b"a", 7)
    assert cache.add(b"a", 3)
    assert not cache.add(b"a", 4)  # 3 is remembered now
    assert cache.depth_of(b"a") == 3


def test_depths_past_the_largest_kept_are_kept_as_it() -> None:
    cache = SeenCache(10)
    assert cache.add(b"a", MAX_DEPTH + 40)
    assert cache.depth_of(b"a") == MAX_DEPTH
    assert not cache.add(b"a", MAX_DEPTH + 1)
    assert cache.add(b"a", MAX_DEPTH - 1)


def test_discarded_key_is_new_again_and_the_bucket_keeps_its_order() -> None:
    """A key that was not pushed after all (a refused request) is forgotten; the
    bucket's other entries still leave oldest first."""
    cache = SeenCache(3)
    for key in (b"a", b"b", b"c"):
        cache.add(key)
    cache.discard(b"b")
    cache.discard(b"never added")
    assert len(cache) == 2
    assert cache.add(b"d")  # fills the freed slot
    assert cache.add(b"e")  # full: "a", the oldest, goes
    assert cache.add(b"a")
    assert not cache.add(b"d")
    assert cache.add(b"b")


def test_many_keys_in_many_buckets_are_remembered() -> None:
    """At a quarter of its capacity nearly every key stays: two keys a bucket of
    eight on average, so a bucket overflows rarely (about 0.3 keys forgotten of
    2000 on average, whatever Python's hash seed)."""
    cache = SeenCache(8000)
    urls = [f"https://h{i % 50}.example/page/{i}" for i in range(2000)]
    for url in urls:
        cache.add(url, 2)
    remembered = sum(cache.depth_of(url) == 2 for url in urls)
    assert remembered >= 0.99 * len(urls)
    assert len(cache) == remembered


def test_sized_by_megabytes_at_nine_bytes_a_key() -> None:
    cache = SeenCache.sized(1)
    assert cache.capacity == pytest.approx(2**20 / SLOT_BYTES, abs=BUCKET)
    assert cache.capacity * SLOT_BYTES <= 2**20


def test_from_settings_reads_the_megabytes_and_names_a_bad_value() -> None:
    assert (
        SeenCache.from_settings(Settings({"FRONTIER_LOCAL_SEEN_MB": 0})).capacity == 0
    )
    assert SeenCache.from_settings(Settings({"FRONTIER_LOCAL_SEEN_MB": 2})).capacity > (
        2 * 2**20 // SLOT_BYTES - BUCKET
    )
    for bad in (-1, "lots", 10**9):
        with pytest.raises(ValueError, match="FRONTIER_LOCAL_SEEN_MB"):
            SeenCache.from_settings(Settings({"FRONTIER_LOCAL_SEEN_MB": bad}))
