"""Unit tests for crawler/frontier/seencache.py: the bounded local seen cache."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from crawler.frontier.seencache import SeenCache
from tests.unit.properties import PROPERTY


def test_add_is_true_the_first_time_then_false() -> None:
    cache = SeenCache(10)
    assert cache.add(b"a") is True
    assert cache.add(b"a") is False
    assert cache.add(b"b") is True
    assert cache.add(b"b") is False
    assert len(cache) == 2


def test_full_cache_forgets_its_oldest_entry() -> None:
    cache = SeenCache(2)
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
    assert len(cache) == 0


def test_size_one_remembers_only_the_last() -> None:
    cache = SeenCache(1)
    assert cache.add(b"a")
    assert not cache.add(b"a")
    assert cache.add(b"b")
    assert cache.add(b"a")


@PROPERTY
@given(
    size=st.integers(0, 8),
    fingerprints=st.lists(st.binary(min_size=1, max_size=2), max_size=60),
)
def test_cache_matches_a_model_and_stays_bounded(
    size: int, fingerprints: list[bytes]
) -> None:
    cache = SeenCache(size)
    model: list[bytes] = []
    for fingerprint in fingerprints:
        expected = fingerprint not in model
        assert cache.add(fingerprint) is expected
        if expected and size:
            model = [*model, fingerprint][-size:]
        assert len(cache) == len(model) <= size


def test_a_fingerprint_seen_again_shallower_goes_to_redis_again() -> None:
    """Depth repair: only Redis knows whether a shorter path re-queues the URL."""
    cache = SeenCache(10)
    assert cache.add(b"a", 5)
    assert not cache.add(b"a", 5)
    assert not cache.add(b"a", 7)
    assert cache.add(b"a", 3)
    assert not cache.add(b"a", 4)  # 3 is remembered now


def test_discarded_fingerprint_is_new_again() -> None:
    """A fingerprint that was not pushed after all (a refused request) is forgotten."""
    cache = SeenCache(4)
    cache.add(b"a")
    cache.add(b"b")
    cache.discard(b"a")
    cache.discard(b"never added")
    assert len(cache) == 1
    assert cache.add(b"a")
    assert not cache.add(b"b")
