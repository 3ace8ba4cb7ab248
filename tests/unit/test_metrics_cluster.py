"""Cluster-wide gauges: read at most once per refresh whatever the scrape rate,
served stale with their age (and the failure counted) when a read fails."""

from __future__ import annotations

import math

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from crawler.crawlstate.status import CrawlStatus, NodeStatus
from crawler.metrics.cluster import ClusterGauges, status_families


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Reads:
    """A crawl state to read, counted; raises while *down*."""

    def __init__(self) -> None:
        self.calls = 0
        self.down = False
        self.queued = 0

    def __call__(self) -> CrawlStatus:
        self.calls += 1
        if self.down:
            raise RedisConnectionError("Connection refused")
        return CrawlStatus("crawl", 8, queued=self.queued)


def samples(status: CrawlStatus) -> dict[tuple[str, tuple[str, ...]], float]:
    return {
        (sample.name, tuple(sample.labels.values())): sample.value
        for family in status_families(status)
        for sample in family.samples
    }


def test_nothing_is_read_before_a_reader_is_attached():
    gauges = ClusterGauges(5.0, clock=Clock())
    assert gauges.current() == (None, math.inf)


def test_twenty_scrapes_within_the_refresh_make_one_read():
    clock, reads = Clock(), Reads()
    gauges = ClusterGauges(5.0, clock=clock)
    gauges.attach(reads)
    for _ in range(20):
        gauges.current()
        clock.now += 0.2  # 20 scrapes in 4 s
    assert reads.calls == 1
    clock.now += 1.0
    status, age = gauges.current()
    assert reads.calls == 2
    assert age == 0
    assert status is not None


def test_a_failed_read_serves_the_last_gauges_with_their_age():
    clock, reads = Clock(), Reads()
    gauges = ClusterGauges(5.0, clock=clock)
    gauges.attach(reads)
    reads.queued = 7
    gauges.current()
    reads.down = True
    clock.now += 12.0
    status, age = gauges.current()
    assert status is not None
    assert status.queued == 7
    assert age == 12.0
    assert gauges.errors == 1
    for _ in range(10):  # Redis still down: tried again once per refresh only
        gauges.current()
    assert reads.calls == 2
    reads.down, reads.queued = False, 3
    clock.now += 5.0
    status, age = gauges.current()
    assert status is not None
    assert (status.queued, age, gauges.errors) == (3, 0, 1)


def test_a_failure_is_logged_once_per_outage(caplog):
    clock, reads = Clock(), Reads()
    gauges = ClusterGauges(1.0, clock=clock)
    gauges.attach(reads)
    reads.down = True
    for _ in range(5):
        gauges.current()
        clock.now += 1.0
    assert gauges.errors == 5
    assert len([r for r in caplog.records if "could not be read" in r.message]) == 1


def test_status_families_sum_the_crawl():
    status = CrawlStatus(
        "crawl",
        8,
        nodes=[NodeStatus("a", alive=True), NodeStatus("b", alive=False)],
        queued=40,
        in_flight=3,
        ready=2,
        waiting=5,
        by_depth={0: 1, 2: 42},
        held=4,
        fates={"fetched": 10, "http_error": 1},
    )
    found = samples(status)
    assert found[("crawler_frontier_queued_requests", ())] == 40
    assert found[("crawler_frontier_leased_requests", ())] == 3
    assert found[("crawler_frontier_held_requests", ())] == 4
    assert found[("crawler_nodes_alive", ())] == 1
    assert found[("crawler_frontier_hosts", ("ready",))] == 2
    assert found[("crawler_frontier_hosts", ("waiting",))] == 5
    assert found[("crawler_frontier_outstanding_requests", ("0",))] == 1
    assert found[("crawler_frontier_outstanding_requests", ("2",))] == 42
    assert found[("crawler_cluster_pages_total", ("fetched",))] == 10
    assert found[("crawler_cluster_pages_total", ("timed_out",))] == 0
    assert found[("crawler_crawl_paused", ())] == 0


@pytest.mark.parametrize("refresh", [0.5, 5.0, 60.0])
def test_reads_never_exceed_one_per_refresh(refresh):
    clock, reads = Clock(), Reads()
    gauges = ClusterGauges(refresh, clock=clock)
    gauges.attach(reads)
    span = 10 * refresh
    start = clock.now
    while clock.now < start + span:  # a scrape every 50 ms, bounded by the span
        gauges.current()
        clock.now += 0.05
    assert reads.calls <= math.ceil(span / refresh) + 1
