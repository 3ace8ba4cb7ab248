"""Every family the endpoint serves follows Prometheus' naming conventions: a
``crawler_`` prefix (or the client library's ``process_``), lowercase snake case,
counters ending in ``_total``, units in the names, HELP text, and only bounded
labels (never a URL or a host)."""

from __future__ import annotations

import re

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from crawler.context.roundtriptimes import RoundTripTimes
from crawler.crawlstate.status import CrawlStatus, NodeStatus
from crawler.metrics.cluster import ClusterGauges
from crawler.metrics.collector import NodeCollector
from crawler.metrics.exporter import metrics_registry

NAME = re.compile(r"^(crawler|process)_[a-z][a-z0-9_]*[a-z0-9]$")
# Labels whose values come from small fixed sets.
# ``node``: a crawl's node ids, one a crawling process (tens, not thousands).
BOUNDED_LABELS = {"fate", "status_class", "outcome", "tier", "depth", "state", "node"}
# Words that say a unit, and the unit's base name (Prometheus: base units).
UNIT_WORDS = {"bytes": "bytes", "seconds": "seconds", "latency": "seconds"}

STATS = {
    "bfs/fate_count/fetched": 5,
    "downloader/response_status_count/200": 5,
    "downloader/response_bytes": 1000,
    "downloader/request_count": 6,
    "item_scraped_count": 5,
    "robots/status_count/200": 1,
    "robots/exception_count/builtins.OSError": 1,
    "timeouts/tier_0": 2,
    "render/pages": 1,
    "revisit/due": 1,
    "retry_later/held": 1,
    "robots/cache_hits": 1,
    "redis/errors": 1,
    "redis/outages": 1,
    "robots/disallowed": 1,
    "timeouts/paused_hosts": 1,
}


@pytest.fixture(scope="module")
def families():
    cluster = ClusterGauges(5.0)
    status = CrawlStatus(
        "crawl", 8, nodes=[NodeStatus("a", alive=True)], queued=3, by_depth={0: 3}
    )
    cluster.attach(lambda: status)
    times = RoundTripTimes()
    times.add(0.0004)
    registry = metrics_registry(NodeCollector(lambda: STATS, times, cluster, tiers=3))
    text = generate_latest(registry).decode()
    return list(text_string_to_metric_families(text))


def test_the_endpoint_serves_the_families_the_issue_asks_for(families):
    names = {family.name for family in families}
    assert {
        "crawler_pages",
        "crawler_responses",
        "crawler_response_bytes",
        "crawler_items",
        "crawler_frontier_outstanding_requests",
        "crawler_frontier_queued_requests",
        "crawler_frontier_leased_requests",
        "crawler_frontier_hosts",
        "crawler_frontier_held_requests",
        "crawler_redis_round_trip_seconds",
        "crawler_robots_fetches",
        "crawler_timeouts",
        "crawler_renders",
        "crawler_revisits_due",
        "crawler_nodes_alive",
        "crawler_cluster_gauges_age_seconds",
        "crawler_node_shards",
        "crawler_node_pages_per_minute",
    } <= names


def test_every_family_is_named_by_the_conventions(families):
    for family in families:
        assert NAME.match(family.name), family.name
        assert family.documentation.strip(), family.name
        for word, unit in UNIT_WORDS.items():
            if word in family.name.split("_"):
                assert family.name.endswith(f"_{unit}"), family.name


def test_counters_end_in_total_and_gauges_do_not(families):
    for family in families:
        own = [s for s in family.samples if not s.name.endswith("_created")]
        if family.type == "counter":
            assert all(s.name == f"{family.name}_total" for s in own), family.name
        else:
            assert not family.name.endswith("_total"), family.name


def test_labels_are_bounded(families):
    for family in families:
        for sample in family.samples:
            labels = set(sample.labels) - {"le"}
            assert labels <= BOUNDED_LABELS, (family.name, labels)
