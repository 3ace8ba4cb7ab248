"""The node's metric families, made from Scrapy's stats when /metrics is scraped.

Nothing is counted on the crawl's path for the metrics: every family is read, at
scrape time, from what the crawl counts anyway (Scrapy's stats collector, the
frontier's round-trip times, the cluster-wide gauges read from Redis at most every
``METRICS_REFRESH`` seconds). The scrape runs in the endpoint's own thread; the
stats are copied in one step (a ``dict.copy`` holds the GIL throughout), so the
reactor is never waited on, nor disturbed.

Labels are bounded sets (fates, status classes, robots outcomes, timeout tiers,
BFS depths, host states), never URLs or hosts; every label value of a family is
given, 0 when nothing happened yet, so ``rate()`` sees a series from the start.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from prometheus_client.core import (
    CounterMetricFamily,
    HistogramMetricFamily,
)
from prometheus_client.registry import Collector

from crawler.policy.fates import FATES
from crawler.policy.robotsfetch import outcome_of_status

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

    from prometheus_client.core import Metric

    from crawler.context.roundtriptimes import RoundTripTimes
    from crawler.metrics.cluster import ClusterGauges

STATUS_PREFIX = "downloader/response_status_count/"
STATUS_CLASSES = ("1xx", "2xx", "3xx", "4xx", "5xx")
ROBOTS_STATUS_PREFIX = "robots/status_count/"
ROBOTS_EXCEPTION_PREFIX = "robots/exception_count/"
# What a robots.txt fetch came to (RFC 9309): rules to obey, none (4xx: allow all),
# or no answer (5xx, 429, a timeout, a network error: tried again later).
ROBOTS_OUTCOMES = {"parse": "rules", "unavailable": "unavailable"}
TIMEOUT_PREFIX = "timeouts/tier_"
# Plain counters: (metric name, stats key, HELP).
COUNTERS = (
    (
        "crawler_requests_total",
        "downloader/request_count",
        "Requests this node's downloader sent (robots.txt fetches included).",
    ),
    (
        "crawler_response_bytes_total",
        "downloader/response_bytes",
        "Bytes of the responses this node downloaded (downloader/response_bytes).",
    ),
    (
        "crawler_items_total",
        "item_scraped_count",
        "Items (page records) this node's spider yielded that the pipelines kept.",
    ),
    (
        "crawler_renders_total",
        "render/pages",
        "Pages this node rendered in the headless browser.",
    ),
    (
        "crawler_revisits_due_total",
        "revisit/due",
        "URLs this node's feeder claimed for a revisit and queued.",
    ),
    (
        "crawler_retry_later_held_total",
        "retry_later/held",
        "Requests this node held in the frontier to be tried again later.",
    ),
    (
        "crawler_robots_cache_hits_total",
        "robots/cache_hits",
        "robots.txt records this node took from Redis instead of fetching them.",
    ),
    (
        "crawler_robots_disallowed_total",
        "robots/disallowed",
        "Requests this node dropped because robots.txt forbids them.",
    ),
    (
        "crawler_hosts_paused_total",
        "timeouts/paused_hosts",
        "Hosts this node paused after timeouts on every tier (TIMEOUTS_HOST_PAUSE).",
    ),
    (
        "crawler_dns_lookups_total",
        "dns/lookups",
        "Names this node asked of DNS (each answer shared by every node for its TTL).",
    ),
    (
        "crawler_dns_cache_hits_total",
        "dns/cache_hits",
        "Names answered from this node's memory or the crawl's Redis, not asked.",
    ),
    (
        "crawler_dns_negative_hits_total",
        "dns/negative_hits",
        "Names answered 'no such name' from a cache, not asked.",
    ),
    (
        "crawler_dns_failures_total",
        "dns/failures",
        "DNS lookups no server answered in time (the fetch is tried again later).",
    ),
    (
        "crawler_dns_resolved_ahead_total",
        "dns/resolved_ahead",
        "Names this node resolved before their fetch asked (DNS_RESOLVE_AHEAD).",
    ),
    (
        "crawler_server_busy_total",
        "politeness/server_busy",
        "Requests sent back because their server was busy (POLITENESS_KEY ip, domain).",
    ),
    (
        "crawler_redis_errors_total",
        "redis/errors",
        "Calls to Redis that failed because it was away (each tried again).",
    ),
    (
        "crawler_redis_outages_total",
        "redis/outages",
        "Times Redis became unreachable for this node.",
    ),
)


class NodeCollector(Collector):
    """Every family of one node; registered in the endpoint's own registry."""

    def __init__(
        self,
        stats: Callable[[], Mapping[str, Any]],
        round_trips: RoundTripTimes,
        cluster: ClusterGauges,
        tiers: int,
    ) -> None:
        self._stats = stats
        self._round_trips = round_trips
        self._cluster = cluster
        self._tiers = tiers

    def collect(self) -> Iterator[Metric]:
        stats = dict(self._stats())
        yield pages(stats)
        yield responses(stats)
        for name, key, help_text in COUNTERS:
            yield CounterMetricFamily(name, help_text, value=number(stats.get(key)))
        yield robots_fetches(stats)
        yield dns_lookup_seconds(stats)
        yield timeouts(stats, self._tiers)
        yield round_trip_seconds(self._round_trips)
        yield from self._cluster.families()


def dns_lookup_seconds(stats: Mapping[str, Any]) -> CounterMetricFamily:
    """Seconds spent in this node's DNS lookups (``dns/lookup_ms_total``)."""
    return CounterMetricFamily(
        "crawler_dns_lookup_seconds_total",
        "Seconds this node spent in DNS lookups, in all (divide by lookups).",
        value=number(stats.get("dns/lookup_ms_total")) / 1000,
    )


def number(value: object) -> float:
    """A stats value as a sample: numbers as they are, anything else 0."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return 0.0


def pages(stats: Mapping[str, Any]) -> CounterMetricFamily:
    """URLs recorded by fate (``bfs/fate_count/<fate>``): one a URL, whatever became
    of it."""
    family = CounterMetricFamily(
        "crawler_pages_total",
        "URLs this node recorded (fetched, redirected or failed for good), by fate.",
        labels=["fate"],
    )
    for fate in FATES:
        family.add_metric([fate], number(stats.get(f"bfs/fate_count/{fate}")))
    return family


def whole(text: str) -> int | None:
    """The number an ASCII-digit string spells; None for anything else (``"²"``
    is a digit to ``str.isdigit``, not to ``int``)."""
    return int(text) if text.isascii() and text.isdigit() else None


def status_class(status: str) -> str:
    """``2xx`` for ``"204"``; ``other`` for anything outside 100-599."""
    code = whole(status)
    if code is not None and 100 <= code <= 599:
        return f"{code // 100}xx"
    return "other"


def responses(stats: Mapping[str, Any]) -> CounterMetricFamily:
    """Responses by status class, from ``downloader/response_status_count/*``."""
    counts = dict.fromkeys(STATUS_CLASSES, 0.0)
    for key, value in stats.items():
        if key.startswith(STATUS_PREFIX):
            kind = status_class(key[len(STATUS_PREFIX) :])
            counts[kind] = counts.get(kind, 0.0) + number(value)
    family = CounterMetricFamily(
        "crawler_responses_total",
        "Responses this node's downloader received, by status class.",
        labels=["status_class"],
    )
    for kind, count in counts.items():
        family.add_metric([kind], count)
    return family


def robots_outcome(status: str) -> str:
    """``rules`` (2xx), ``unavailable`` (no rules: 4xx, too many redirects) or
    ``unreachable`` (5xx, 429), as RFC 9309 reads a robots.txt's final status."""
    code = whole(status)
    if code is None:
        return "unreachable"
    outcome = outcome_of_status(code)
    if outcome == "redirect":  # the final status: redirects ran out
        return "unavailable"
    return ROBOTS_OUTCOMES.get(outcome, "unreachable")


def robots_fetches(stats: Mapping[str, Any]) -> CounterMetricFamily:
    """robots.txt fetches by outcome; one that raised is ``unreachable``."""
    counts = {"rules": 0.0, "unavailable": 0.0, "unreachable": 0.0}
    for key, value in stats.items():
        if key.startswith(ROBOTS_STATUS_PREFIX):
            counts[robots_outcome(key[len(ROBOTS_STATUS_PREFIX) :])] += number(value)
        elif key.startswith(ROBOTS_EXCEPTION_PREFIX):
            counts["unreachable"] += number(value)
    family = CounterMetricFamily(
        "crawler_robots_fetches_total",
        "robots.txt fetches this node made, by outcome: rules (2xx), unavailable "
        "(4xx: no rules) or unreachable (5xx, 429, timeout, network error).",
        labels=["outcome"],
    )
    for outcome, count in counts.items():
        family.add_metric([outcome], count)
    return family


def timeouts(stats: Mapping[str, Any], tiers: int) -> CounterMetricFamily:
    """Timeouts by tier (``timeouts/tier_<k>``): every configured tier, and any
    other tier found in the stats."""
    counts = dict.fromkeys(range(tiers), 0.0)
    for key, value in stats.items():
        tier = whole(key[len(TIMEOUT_PREFIX) :])
        if key.startswith(TIMEOUT_PREFIX) and tier is not None:
            counts[tier] = counts.get(tier, 0.0) + number(value)
    family = CounterMetricFamily(
        "crawler_timeouts_total",
        "Requests of this node that timed out, by timeout tier (TIMEOUTS_TIERS).",
        labels=["tier"],
    )
    for tier, count in sorted(counts.items()):
        family.add_metric([str(tier)], count)
    return family


def round_trip_seconds(times: RoundTripTimes) -> HistogramMetricFamily:
    """The frontier's script round trips to Redis (push, ack, pop, promote...)."""
    buckets = [
        ("+Inf" if math.isinf(bound) else repr(bound), count)
        for bound, count in times.cumulative()
    ]
    return HistogramMetricFamily(
        "crawler_redis_round_trip_seconds",
        "Time of this node's frontier round trips to Redis (one pipeline of "
        "script calls each).",
        buckets=buckets,
        sum_value=times.total_seconds,
    )
