"""The start-up lines of a crawl (crawler/policy/crawlsummary.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from crawler.policy.crawlidentity import CrawlIdentity, Verdict
from crawler.policy.crawlsummary import (
    Counts,
    Delays,
    StartFacts,
    pages_per_minute,
    start_lines,
)

DELAYS = Delays(
    day=10.0,
    night=1.0,
    minimum=0.0,
    jitter=0.0,
    day_hours="08:00-22:00",
    day_source="default",
    night_source="settings.py",
    minimum_source="default",
)
SEEDS = ["http://a.example/", "http://b.example/", "http://b.example/x"]
FACTS = StartFacts(
    prefix="bfs",
    redis="redis://127.0.0.1:6379/0 (private, data in .crawl/redis)",
    identity=CrawlIdentity.of("bfs", "seed-hosts", SEEDS, 0.0),
    verdict=Verdict.NEW,
    counts=Counts(queued=0, in_flight=0, held=0, done=0, failed=0),
    depth_limit=17,
    delays=DELAYS,
    concurrency=16,
)


def test_a_new_crawl_says_what_it_is():
    lines = start_lines(FACTS)
    assert lines == [
        (
            "Crawl 'bfs' (spider bfs, key prefix 'bfs') in Redis "
            "redis://127.0.0.1:6379/0 (private, data in .crawl/redis)"
        ),
        "New crawl, started 1970-01-01 00:00 UTC",
        (
            "Seeds: http://a.example/, http://b.example/, http://b.example/x; scope "
            "seed-hosts; depth limit 17"
        ),
        (
            "Delay between two fetches of one host: 10 s by day (08:00-22:00 host time; "
            "POLITENESS_DAY_DELAY, default), 1 s by night (POLITENESS_NIGHT_DELAY, "
            "settings.py), plus up to 0% jitter; a robots.txt Crawl-delay raises it for "
            "its host"
        ),
        (
            "Expect about 12 pages a minute by day, 120 by night (2 seed hosts x 60 / "
            "delay; at most CONCURRENT_REQUESTS=16 hosts at once); more as links reach "
            "new hosts"
        ),
    ]


def test_a_resumed_crawl_gives_its_counts_and_how_to_start_over():
    counts = Counts(queued=150, in_flight=3, held=2, done=40, failed=5)
    line = start_lines(replace(FACTS, verdict=Verdict.JOIN, counts=counts))[1]
    assert line == (
        "Resumed (started 1970-01-01 00:00 UTC): 150 queued, 3 in flight, 2 held, "
        "40 done, 5 failed; -s FRONTIER_RESET=1 starts over"
    )


def test_new_seeds_over_a_finished_crawl_say_seen_urls_stay_seen():
    counts = Counts(queued=0, in_flight=0, held=0, done=40, failed=0)
    line = start_lines(replace(FACTS, verdict=Verdict.RENEW, counts=counts))[1]
    assert "New seeds over a finished crawl" in line
    assert "URLs seen before stay seen" in line


def test_the_floor_says_where_it_came_from():
    delays = replace(DELAYS, minimum=2.0, minimum_source="DOWNLOAD_DELAY in -s")
    line = start_lines(replace(FACTS, delays=delays))[3]
    assert "never below 2 s (POLITENESS_MIN_DELAY, DOWNLOAD_DELAY in -s)" in line


def test_a_spider_without_seeds_gets_a_rate_per_host():
    identity = CrawlIdentity.of("quotes", "", [], 0.0)
    lines = start_lines(replace(FACTS, identity=identity))
    assert (
        lines[2] == "Seeds: no seeds of its own; scope the spider's own; depth limit 17"
    )
    assert lines[4] == "Expect about 6.0 pages a minute a host by day, 60 by night"


@pytest.mark.parametrize(
    ("delay", "minimum", "jitter", "hosts", "expected"),
    [
        (10.0, 0.0, 0.0, 1, 6.0),
        (10.0, 0.0, 0.0, 3, 18.0),
        (1.0, 2.0, 0.0, 1, 30.0),  # the floor wins
        (10.0, 0.0, 0.5, 1, 60 / 12.5),  # the mean of the jitter's range
        (0.0, 0.0, 0.5, 4, None),  # no delay: response times bound it
    ],
)
def test_pages_per_minute(delay, minimum, jitter, hosts, expected):
    delays = replace(DELAYS, minimum=minimum, jitter=jitter)
    assert pages_per_minute(delay, delays, hosts=hosts) == expected


def test_per_server_politeness_says_hosts_share_a_delay_and_the_rate_is_a_ceiling():
    lines = start_lines(replace(FACTS, delays=replace(DELAYS, key="ip")))
    assert lines[3].endswith(
        "its host; hosts on one address share one delay (POLITENESS_KEY=ip)"
    )
    assert lines[4] == (
        "Expect at most 12 pages a minute by day, 120 by night (2 seed hosts x 60 / "
        "delay; fewer where they share a server: one a delay for each)"
    )
