"""Cluster-wide gauges: the crawl's state in Redis, read at most every
``METRICS_REFRESH`` seconds whatever the scrape rate.

One read is ``crawler.crawlstate.status.read_status``, what ``scrapy frontier
status`` shows (two pipelined round trips). Scrapes in between get the last read,
so scraping costs Redis nothing more however often Prometheus comes. A read that
fails (Redis away) never fails the scrape: the last gauges are served with their
age (``crawler_cluster_gauges_age_seconds``), the failure is counted
(``crawler_cluster_read_errors_total``, not in Scrapy's stats: this runs off the
reactor thread) and logged once per outage. The next try waits ``METRICS_REFRESH``
too: a Redis that is down is not hammered by scrapes.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from redis.exceptions import RedisError

from crawler.policy.fates import FATES

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from prometheus_client.core import Metric

    from crawler.crawlstate.controls import Control
    from crawler.crawlstate.nodetable import NodeStatus
    from crawler.crawlstate.status import CrawlStatus

logger = logging.getLogger(__name__)

# What a read may raise when Redis is away or answers nonsense: served stale.
READ_ERRORS = (RedisError, OSError)


class ClusterGauges:
    """The last cluster-wide read, refreshed on a scrape at most every *refresh* s.

    Thread-safe: concurrent scrapes share one read (the lock), none waits on the
    reactor. Until ``attach`` gives it a reader (once the frontier is open) it has
    nothing to read, and says so with an infinite age.
    """

    def __init__(
        self, refresh: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._refresh = refresh
        self._clock = clock
        self._lock = threading.Lock()
        self._read: Callable[[], CrawlStatus] | None = None
        self._status: CrawlStatus | None = None
        self._read_at: float | None = None
        self._tried_at = -math.inf
        self._failing = False
        self.reads = 0
        self.errors = 0

    def attach(self, read: Callable[[], CrawlStatus]) -> None:
        """Read the crawl's state with *read* from now on."""
        with self._lock:
            self._read = read

    def current(self) -> tuple[CrawlStatus | None, float]:
        """The last state read and its age in seconds (``inf``: never read)."""
        with self._lock:
            now = self._clock()
            if self._read is not None and now - self._tried_at >= self._refresh:
                self._tried_at = now
                self._try_read(self._read, now)
            age = math.inf if self._read_at is None else now - self._read_at
            return self._status, age

    def _try_read(self, read: Callable[[], CrawlStatus], now: float) -> None:
        self.reads += 1
        try:
            self._status = read()
        except READ_ERRORS as exc:
            self.errors += 1
            if not self._failing:
                self._failing = True
                logger.warning(
                    "Metrics: the cluster-wide gauges could not be read from Redis "
                    "(%(error)s); the last ones are served, with their age, until "
                    "it answers",
                    {"error": exc},
                )
            return
        self._read_at = now
        self._failing = False

    def families(self) -> Iterator[Metric]:
        """The cluster-wide families: the last read's, its age, the failed reads."""
        status, age = self.current()
        yield GaugeMetricFamily(
            "crawler_cluster_gauges_age_seconds",
            "Seconds since the cluster-wide gauges were read from Redis (+Inf: "
            "never; they are read at most every METRICS_REFRESH seconds).",
            value=age,
        )
        yield CounterMetricFamily(
            "crawler_cluster_read_errors_total",
            "Reads of the cluster-wide gauges that failed (Redis away): the last "
            "gauges were served.",
            value=self.errors,
        )
        if status is not None:
            yield from status_families(status)


def status_families(status: CrawlStatus) -> Iterator[Metric]:
    """The gauges of one read of the crawl's state, over every shard and node."""
    yield from _totals(status)
    yield _by_depth(status)
    hosts = GaugeMetricFamily(
        "crawler_frontier_hosts",
        "Whole crawl: hosts with requests queued, by state: ready (may be fetched "
        "now) or waiting (out their politeness delay).",
        labels=["state"],
    )
    hosts.add_metric(["ready"], status.ready)
    hosts.add_metric(["waiting"], status.waiting)
    yield hosts
    fates = CounterMetricFamily(
        "crawler_cluster_pages_total",
        "Whole crawl: requests that reached their final fate, by fate (the "
        "frontier's counters; one a URL, every node).",
        labels=["fate"],
    )
    for fate in FATES:
        fates.add_metric([fate], status.fates.get(fate, 0))
    yield fates
    yield from node_families(status)


# The per-node gauges of the node table: (name, help, the node's figure or None).
NODE_GAUGES: tuple[
    tuple[str, str, Callable[[NodeStatus, Control], float | None]], ...
] = (
    (
        "crawler_node_capacity_pages_per_second",
        "Pages/s the node measured while saturated (absent until measured).",
        lambda node, _: node.capacity,
    ),
    (
        "crawler_node_weight",
        "The node's dispatch weight in force (FRONTIER_NODE_WEIGHT or measured).",
        lambda node, _: node.weight,
    ),
    (
        "crawler_node_concurrency",
        "CONCURRENT_REQUESTS in force on the node.",
        lambda node, _: node.concurrency,
    ),
    (
        "crawler_node_in_flight_requests",
        "Requests in the node's downloader now.",
        lambda node, _: node.in_flight,
    ),
    (
        "crawler_node_ready_hosts",
        "Hosts ready (delay over, not busy) in the shards the node owns.",
        lambda node, _: node.ready_hosts,
    ),
    (
        "crawler_node_load_ratio",
        "(in flight + ready hosts) / concurrency: above 1, hosts wait for the node.",
        lambda node, _: node.load,
    ),
    (
        "crawler_node_pages_per_minute",
        "Pages the node fetched a minute, over the last minute.",
        lambda node, _: node.pages_per_min,
    ),
    (
        "crawler_node_draining",
        "1 while the node drains (told to by `scrapy frontier drain`, or says so).",
        lambda node, control: float(
            node.node_id in control.draining or node.state == "draining"
        ),
    ),
    (
        "crawler_node_shards",
        "Shards the node owns.",
        lambda node, _: len(node.shards),
    ),
)


def node_families(status: CrawlStatus) -> Iterator[Metric]:
    """One gauge family per figure of the node table, labelled by node: live
    nodes only, and only the figures their entry holds (older nodes write fewer)."""
    live = [node for node in status.nodes if node.alive]
    for name, help_text, figure in NODE_GAUGES:
        family = GaugeMetricFamily(
            name, f"Each live node: {help_text}", labels=["node"]
        )
        for node in live:
            value = figure(node, status.control)
            if value is not None:
                family.add_metric([node.node_id], value)
        yield family


def _totals(status: CrawlStatus) -> Iterator[Metric]:
    """The unlabelled gauges: totals over every shard, nodes alive, paused."""
    totals = (
        ("crawler_frontier_queued_requests", status.queued, "Requests queued."),
        (
            "crawler_frontier_leased_requests",
            status.in_flight,
            "Requests leased to nodes (in flight).",
        ),
        (
            "crawler_frontier_held_requests",
            status.held,
            "Requests held to be tried again later (retry-later).",
        ),
        ("crawler_frontier_seeds", status.seeds, "Seeds waiting in the seeds list."),
        (
            "crawler_nodes_alive",
            sum(node.alive for node in status.nodes),
            "Nodes with a live heartbeat.",
        ),
        ("crawler_crawl_paused", int(status.control.paused), "1 if paused."),
    )
    for name, value, help_text in totals:
        yield GaugeMetricFamily(name, f"Whole crawl: {help_text}", value=value)


def _by_depth(status: CrawlStatus) -> GaugeMetricFamily:
    family = GaugeMetricFamily(
        "crawler_frontier_outstanding_requests",
        "Whole crawl: requests queued or leased, by BFS depth (what the BFS "
        "barrier counts).",
        labels=["depth"],
    )
    for depth, count in sorted(status.by_depth.items()):
        family.add_metric([str(depth)], count)
    return family
