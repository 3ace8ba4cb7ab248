"""What a start does with the crawl its keys hold (crawler/policy/crawlidentity.py)."""

from __future__ import annotations

import pytest

from crawler.policy.crawlidentity import (
    CrawlIdentity,
    Verdict,
    conflict_message,
    seeds_digest,
    verdict,
)

A = CrawlIdentity.of("bfs", "seed-hosts", ["http://a.example/"], 1000.0)
A_AGAIN = CrawlIdentity.of("bfs", "seed-hosts", ["http://a.example/"] * 2, 2000.0)
B = CrawlIdentity.of("bfs", "seed-hosts", ["http://b.example/"], 2000.0)
NO_SEEDS = CrawlIdentity.of("bfs", "", [], 2000.0)
USER_SPIDER = CrawlIdentity.of("quotes", "", [], 2000.0)


@pytest.mark.parametrize(
    ("stored", "given", "work_left", "expected"),
    [
        (None, A, False, Verdict.NEW),
        (None, A, True, Verdict.NEW),  # a crawl of an earlier version: adopted
        (A, A_AGAIN, True, Verdict.JOIN),  # the same seeds: resumed
        (A, NO_SEEDS, True, Verdict.JOIN),  # no seeds: resumed, or a second node
        (A, USER_SPIDER, True, Verdict.JOIN),  # a spider that declares no seeds
        (A, B, True, Verdict.CONFLICT),  # new seeds, unfinished: refused
        (A, B, False, Verdict.RENEW),  # new seeds, finished: a new identity
    ],
)
def test_verdict(stored, given, work_left, expected):
    assert verdict(stored, given, work_left=work_left) is expected


def test_the_seeds_digest_is_of_the_set():
    assert seeds_digest(["http://b/", "http://a/", "http://a/"]) == seeds_digest(
        ["http://a/", "http://b/"]
    )
    assert seeds_digest(["http://a/"]) != seeds_digest(["http://a/x"])


def test_an_identity_shows_a_few_seeds_and_counts_hosts():
    seeds = [f"http://h{i % 2}.example/{i}" for i in range(5)]
    identity = CrawlIdentity.of("bfs", "any", seeds, 0.0)
    assert identity.seed_count == 5
    assert identity.hosts == 2
    assert identity.seeds_text() == (
        "http://h0.example/0, http://h0.example/2, http://h0.example/4 and 2 more"
    )
    assert NO_SEEDS.seeds_text() == "no seeds of its own"


def test_the_conflict_is_one_line_with_the_three_ways_on():
    message = conflict_message(
        prefix="bfs",
        redis="redis://127.0.0.1:6379/0",
        stored=A,
        started="1970-01-01 00:16 UTC",
        queued=150,
        in_flight=2,
        done=40,
    )
    assert "\n" not in message
    for words in (
        "another unfinished crawl under the key prefix 'bfs'",
        "seeds http://a.example/",
        "started 1970-01-01 00:16 UTC",
        "150 queued, 2 in flight, 40 done",
        "rerun without seeds (or with the same) to resume it",
        "-s FRONTIER_RESET=1",
        "-s FRONTIER_KEY_PREFIX=NAME",
    ):
        assert words in message
