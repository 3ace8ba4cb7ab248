"""The compact near-duplicate index in Redis (crawler/spiders/neardups.py): its
script, run by a real Redis, and the records the middleware reads back."""

from __future__ import annotations

import pytest

from crawler.crawlstate.keys import CrawlKeys
from crawler.policy.simhash import bands
from crawler.spiders.neardups import (
    ADD_TO_BANDS,
    KEPT_FOR,
    RECORD_BYTES,
    RECORDS_PER_BAND,
    _candidates,
)

pytestmark = pytest.mark.integration

KEY = CrawlKeys("bfs").near_duplicates("a.example")


def record(fingerprint: int, url_key: str) -> bytes:
    return fingerprint.to_bytes(8, "big") + bytes.fromhex(url_key)


def add(redis, page: bytes, *fields: str, kept: int = RECORDS_PER_BAND) -> None:
    redis.eval(ADD_TO_BANDS, 1, KEY, KEPT_FOR, kept, page, *fields)


def test_a_page_is_found_again_in_each_of_its_bands(redis):
    fingerprint = 0x0123_4567_89AB_CDEF
    fields = bands(fingerprint, 6)
    add(redis, record(fingerprint, "00aa11bb22cc"), *fields)
    found = _candidates(redis.hmget(KEY, fields))
    assert found == [(fingerprint, "00aa11bb22cc")] * len(fields)
    assert 0 < redis.ttl(KEY) <= KEPT_FOR


def test_a_revisit_of_an_unchanged_page_is_not_added_twice(redis):
    page = record(7, "000000000001")
    for _ in range(3):
        add(redis, page, "b0:07")
    assert redis.hget(KEY, "b0:07") == page


def test_a_band_keeps_its_latest_records_only(redis):
    pages = [record(n, f"{n:012x}") for n in range(10)]
    for page in pages:
        add(redis, page, "b0:00", kept=4)
    assert redis.hget(KEY, "b0:00") == b"".join(pages[-4:])
    assert [key for _, key in _candidates([redis.hget(KEY, "b0:00")])] == [
        f"{n:012x}" for n in range(6, 10)
    ]


def test_a_damaged_field_loses_its_leading_bytes_not_its_records(redis):
    """A value that is not whole records (cut, or not ours): read and appended to
    from its end, record by record."""
    page = record(9, "0000000000ff")
    redis.hset(KEY, "b0:09", b"xyz" + page)
    assert _candidates([redis.hget(KEY, "b0:09")]) == [(9, "0000000000ff")]
    add(redis, page, "b0:09")  # known: not appended again
    add(redis, record(10, "000000000100"), "b0:09")
    assert _candidates([redis.hget(KEY, "b0:09")]) == [
        (9, "0000000000ff"),
        (10, "000000000100"),
    ]


def test_a_host_of_many_pages_costs_a_few_hundred_bytes_a_page_at_most(redis):
    """Seven 14-byte records a page at the default distance, in one hash (the
    old layout, a set a band value, took about 860 bytes a page here)."""
    pages = 2000
    for n in range(pages):
        fingerprint = (n * 0x9E37_79B9_7F4A_7C15) % 2**64
        add(redis, record(fingerprint, f"{n:012x}"), *bands(fingerprint, 6))
    assert len(bands(0, 6)) * RECORD_BYTES == 98
    assert redis.memory_usage(KEY, samples=0) / pages < 300
