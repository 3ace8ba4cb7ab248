"""The robots.txt rules a process holds (crawler/robots/cache.py)."""

from __future__ import annotations

import pytest

from crawler.policy.robotsfetch import RobotsRecord
from crawler.robots.cache import RobotsEntry, RulesCache


def entry(expires_at: float) -> RobotsEntry:
    return RobotsEntry(RobotsRecord("allow", 0.0, expires_at), rules=None)


@pytest.mark.parametrize(
    ("now", "held"),
    [(0.0, True), (99.9, True), (100.0, False), (500.0, False)],
)
def test_an_entry_is_held_until_its_record_expires(now, held):
    cache = RulesCache(size=4)
    kept = entry(expires_at=100.0)
    cache.put("http://a.example:80", kept)
    assert (cache.get("http://a.example:80", now) is kept) is held


def test_an_expired_entry_is_dropped_not_kept_for_later():
    cache = RulesCache(size=4)
    cache.put("http://a.example:80", entry(expires_at=100.0))
    assert cache.get("http://a.example:80", 200.0) is None
    assert cache.get("http://a.example:80", 50.0) is None  # gone, whatever the time


def test_the_least_recently_used_origin_goes_first():
    cache = RulesCache(size=2)
    first, second, third = entry(100.0), entry(100.0), entry(100.0)
    cache.put("http://a.example:80", first)
    cache.put("http://b.example:80", second)
    assert cache.get("http://a.example:80", 0.0) is first  # a is now the newest
    cache.put("http://c.example:80", third)
    assert cache.get("http://b.example:80", 0.0) is None
    assert cache.get("http://a.example:80", 0.0) is first
    assert cache.get("http://c.example:80", 0.0) is third
