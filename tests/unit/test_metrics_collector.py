"""The node's families, made from a stats dict: fates, status classes, robots
outcomes, timeout tiers and the round-trip histogram; hostile stats never raise."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler.context.roundtriptimes import RoundTripTimes
from crawler.metrics.cluster import ClusterGauges
from crawler.metrics.collector import (
    NodeCollector,
    pages,
    responses,
    robots_fetches,
    robots_outcome,
    round_trip_seconds,
    status_class,
    timeouts,
)

if TYPE_CHECKING:
    from prometheus_client.core import Metric


def values(family: Metric) -> dict[tuple[str, ...], float]:
    """(labels...) -> value of a family's main samples."""
    return {
        tuple(sample.labels.values()): sample.value
        for sample in family.samples
        if not sample.name.endswith("_created")
    }


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("200", "2xx"),
        ("204", "2xx"),
        ("301", "3xx"),
        ("404", "4xx"),
        ("599", "5xx"),
        ("100", "1xx"),
        ("600", "other"),
        ("99", "other"),
        ("abc", "other"),
        ("", "other"),
    ],
)
def test_status_class(status, expected):
    assert status_class(status) == expected


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("200", "rules"),
        ("404", "unavailable"),
        ("401", "unavailable"),
        ("301", "unavailable"),  # the final status: redirects ran out
        ("429", "unreachable"),
        ("500", "unreachable"),
        ("503", "unreachable"),
        ("junk", "unreachable"),
    ],
)
def test_robots_outcome_reads_the_final_status_as_rfc_9309(status, expected):
    assert robots_outcome(status) == expected


def test_pages_by_fate_gives_every_fate_and_zero_for_the_unseen():
    family = pages({"bfs/fate_count/fetched": 7, "bfs/fate_count/http_error": 2})
    found = values(family)
    assert found[("fetched",)] == 7
    assert found[("http_error",)] == 2
    assert found[("timed_out",)] == 0
    assert len(found) == 11  # every fate of crawler.policy.fates
    assert all(sample.name == "crawler_pages_total" for sample in family.samples)


def test_responses_are_summed_by_status_class():
    stats = {
        "downloader/response_status_count/200": 5,
        "downloader/response_status_count/204": 1,
        "downloader/response_status_count/404": 2,
        "downloader/response_status_count/999": 1,
        "downloader/response_count": 9,
    }
    assert values(responses(stats)) == {
        ("1xx",): 0,
        ("2xx",): 6,
        ("3xx",): 0,
        ("4xx",): 2,
        ("5xx",): 0,
        ("other",): 1,
    }


def test_robots_fetches_count_exceptions_as_unreachable():
    stats = {
        "robots/status_count/200": 3,
        "robots/status_count/404": 2,
        "robots/status_count/503": 1,
        "robots/exception_count/twisted.internet.error.TimeoutError": 4,
    }
    assert values(robots_fetches(stats)) == {
        ("rules",): 3,
        ("unavailable",): 2,
        ("unreachable",): 5,
    }


def test_timeouts_give_every_configured_tier_and_any_other_found():
    found = values(timeouts({"timeouts/tier_1": 4, "timeouts/tier_5": 1}, tiers=3))
    assert found == {("0",): 0, ("1",): 4, ("2",): 0, ("5",): 1}


def test_round_trip_histogram_is_cumulative():
    times = RoundTripTimes()
    for seconds in (0.00005, 0.0003, 0.0003, 0.002, 5.0):
        times.add(seconds)
    samples = {
        (sample.name, sample.labels.get("le")): sample.value
        for sample in round_trip_seconds(times).samples
    }
    assert samples[("crawler_redis_round_trip_seconds_bucket", "0.0001")] == 1
    assert samples[("crawler_redis_round_trip_seconds_bucket", "0.0005")] == 3
    assert samples[("crawler_redis_round_trip_seconds_bucket", "0.0025")] == 4
    assert samples[("crawler_redis_round_trip_seconds_bucket", "1.0")] == 4
    assert samples[("crawler_redis_round_trip_seconds_bucket", "+Inf")] == 5
    assert samples[("crawler_redis_round_trip_seconds_count", None)] == 5
    assert math.isclose(
        samples[("crawler_redis_round_trip_seconds_sum", None)], 5.00265
    )


def test_a_bound_counts_in_its_own_bucket():
    times = RoundTripTimes()
    times.add(0.001)  # le="0.001" means at most 0.001
    buckets = dict(times.cumulative())
    assert buckets[0.0005] == 0
    assert buckets[0.001] == 1


stats_values = st.one_of(
    st.integers(), st.floats(), st.text(max_size=5), st.none(), st.booleans()
)
stats_keys = st.one_of(
    st.text(max_size=20),
    st.sampled_from(
        [
            "downloader/response_status_count/",
            "robots/status_count/",
            "robots/exception_count/",
            "timeouts/tier_",
            "bfs/fate_count/",
        ]
    ).flatmap(lambda prefix: st.text(max_size=6).map(lambda rest: prefix + rest)),
)


@given(st.dictionaries(stats_keys, stats_values, max_size=20))
def test_hostile_stats_never_raise(stats):
    for family in (
        pages(stats),
        responses(stats),
        robots_fetches(stats),
        timeouts(stats, tiers=3),
    ):
        assert family.samples


@pytest.mark.parametrize(
    ("sample", "key"),
    [
        ("crawler_response_bytes_total", "downloader/response_bytes"),
        ("crawler_requests_total", "downloader/request_count"),
        ("crawler_items_total", "item_scraped_count"),
        ("crawler_renders_total", "render/pages"),
        ("crawler_revisits_due_total", "revisit/due"),
        ("crawler_retry_later_held_total", "retry_later/held"),
        ("crawler_robots_cache_hits_total", "robots/cache_hits"),
        ("crawler_robots_disallowed_total", "robots/disallowed"),
        ("crawler_hosts_paused_total", "timeouts/paused_hosts"),
        ("crawler_redis_errors_total", "redis/errors"),
        ("crawler_redis_outages_total", "redis/outages"),
        ("crawler_dns_lookups_total", "dns/lookups"),
        ("crawler_dns_cache_hits_total", "dns/cache_hits"),
        ("crawler_dns_negative_hits_total", "dns/negative_hits"),
        ("crawler_dns_failures_total", "dns/failures"),
        ("crawler_dns_resolved_ahead_total", "dns/resolved_ahead"),
        ("crawler_server_busy_total", "politeness/server_busy"),
    ],
)
def test_each_counter_reads_its_stats_key(sample, key):
    collector = NodeCollector(
        lambda: {key: 7}, RoundTripTimes(), ClusterGauges(5.0), tiers=3
    )
    found = {s.name: s.value for family in collector.collect() for s in family.samples}
    assert found[sample] == 7
    sevens = [name for name, value in found.items() if value == 7]
    assert sevens == [sample]  # no other family reads that key


def test_dns_lookup_time_is_served_in_seconds():
    collector = NodeCollector(
        lambda: {"dns/lookup_ms_total": 2500},
        RoundTripTimes(),
        ClusterGauges(5.0),
        tiers=3,
    )
    found = {s.name: s.value for family in collector.collect() for s in family.samples}
    assert found["crawler_dns_lookup_seconds_total"] == 2.5
