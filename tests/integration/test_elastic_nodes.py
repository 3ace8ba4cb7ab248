"""Nodes of unequal size and nodes that leave on request, as real `scrapy crawl`
processes on one Redis, measured at the site: a node told to drain hands its
shards over at once and exits 0 once its requests in flight are done; a node's
concurrency changed while it runs; a node with spare capacity takes shards from a
node with hosts waiting (FRONTIER_DISPATCH=least-load). Every page is fetched once,
never by two nodes at once."""

from __future__ import annotations

import itertools
import json
import time
from typing import TYPE_CHECKING

import pytest

from crawler.crawlstate.keys import CrawlKeys
from tests.integration.test_cluster_of_nodes import (
    EXIT_TIMEOUT,
    PREFIX,
    SHARDS,
    START_TIMEOUT,
    Crawl,
    cluster,
    node_ids,
    owners,
    stat,
)
from tests.integration.test_frontier_commands import frontier as run_frontier
from tests.integration.test_node_failures import page_fetches
from tests.servers import running_site, wait_for
from tests.site import bfs_depths

if TYPE_CHECKING:
    import subprocess

    from tests.servers import RunningSite

pytestmark = pytest.mark.integration

DELAY = 0.5  # CLUSTER_SETTINGS' DOWNLOAD_DELAY


def frontier(redis_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`scrapy frontier ARGS` on the cluster's crawl, as an operator runs it."""
    return run_frontier(redis_url, *args, shards=SHARDS)


def crawl_of(site: RunningSite, nodes, settled_at: float) -> Crawl:
    return Crawl(
        site.pages(),
        {label: node.output() for label, node in nodes.nodes.items()},
        {label: node.process.returncode for label, node in nodes.nodes.items()},
        settled_at,
        killed_at=float("inf"),
        orphaned=0,
    )


def assert_polite(crawl: Crawl) -> None:
    """Two fetches of a host, whichever nodes made them, are never closer than the
    delay (so never at once), as the site saw them."""
    for host, rows in crawl.by_host().items():
        gaps = [b[0] - a[0] for a, b in itertools.pairwise(rows)]
        assert min(gaps, default=DELAY) >= DELAY, (host, rows)


def test_a_drained_node_hands_its_shards_over_at_once_and_exits_0(
    redis, redis_url, tmp_path
):
    with (
        running_site(hosts=30, pages=20, links=4, latency=0.05) as site,
        cluster(redis_url, tmp_path) as nodes,
    ):
        total = len(bfs_depths(site.spec, [(0, 0)]))
        nodes.start("n1", seeds=site.seeds[0])
        assert wait_for(site.pages, START_TIMEOUT)
        nodes.start("n2")
        assert wait_for(
            lambda: {r["node"] for r in site.pages()} >= {"n1", "n2"}, START_TIMEOUT
        )
        ids = node_ids(redis, list(nodes.nodes.values()))
        assert len(site.pages()) < total // 2  # mid-crawl
        drained = frontier(redis_url, "drain", ids["n2"])
        told_at = time.time()
        assert drained.returncode == 0, drained.stderr
        assert ids["n2"] not in owners(redis)  # at once, not at a heartbeat
        nodes.nodes["n2"].process.wait(EXIT_TIMEOUT)
        exited_after = time.time() - told_at
        assert nodes.wait_all(EXIT_TIMEOUT), "n1 did not finish the crawl"
        crawl = crawl_of(site, nodes, told_at)
        fetches = page_fetches(site)
    assert crawl.exits == {"n1": 0, "n2": 0}, crawl.outputs["n2"][-3000:]
    assert stat(crawl.outputs["n2"], "finish_reason") == "drained"
    assert exited_after < 10  # its in-flight requests, then one heartbeat or two
    late = [r for r in crawl.pages if r["node"] == "n2" and r["t"] > told_at + 1.0]
    assert late == []  # nothing new after the drain but what was in flight
    # Nothing lost, nothing fetched twice, no host by two nodes at once, delays kept.
    assert set(fetches) == set(bfs_depths(site.spec, [(0, 0)]))
    assert max(fetches.values()) == 1
    assert_polite(crawl)


def arrivals_within(times: list[float], window: float) -> int:
    """The most requests that arrived within any *window* seconds."""
    ordered = sorted(times)
    most, start = 0, 0
    for end, t in enumerate(ordered):
        while t - ordered[start] >= window:
            start += 1
        most = max(most, end - start + 1)
    return most


def test_a_nodes_concurrency_changes_while_it_runs(redis, redis_url, tmp_path):
    latency = 0.4
    with (
        running_site(hosts=40, pages=12, links=4, latency=latency) as site,
        cluster(redis_url, tmp_path) as nodes,
    ):
        nodes.start("n1", seeds=",".join(site.seeds))
        assert wait_for(lambda: len(site.pages()) >= 40, START_TIMEOUT)
        node = node_ids(redis, list(nodes.nodes.values()))["n1"]
        result = frontier(redis_url, "set", "--node", node, "CONCURRENT_REQUESTS=2")
        assert result.returncode == 0, result.stderr
        told_at = time.time()
        keys = CrawlKeys(PREFIX)

        def applied() -> bool:
            entry = json.loads(redis.hget(keys.nodes, node) or b"{}")
            return entry.get("concurrency") == 2

        assert wait_for(applied, 10)
        applied_at = time.time()
        assert nodes.wait_all(EXIT_TIMEOUT)
        rows = site.pages()
    before = [r["t"] for r in rows if r["t"] < told_at]
    after = [r["t"] for r in rows if r["t"] > applied_at + latency]
    assert arrivals_within(before, latency * 0.9) > 2  # it had more in flight
    assert after, "the crawl ended before the change could be seen"
    assert arrivals_within(after, latency * 0.9) <= 2


def test_a_node_with_spare_capacity_takes_shards_from_a_saturated_one(
    redis, redis_url, tmp_path
):
    """n-small has 2 download slots, n-big 16; hosts answer in 0.3 s. Under plain
    rendezvous each would own about half the hosts; under least-load n-big takes
    shards whose hosts wait on n-small once its own run dry."""
    with (
        running_site(hosts=60, pages=6, links=3, latency=0.3) as site,
        cluster(redis_url, tmp_path) as nodes,
    ):
        seeds = ",".join(site.seeds)
        nodes.start(
            "small",
            seeds=seeds,
            extra=("CONCURRENT_REQUESTS=2", "FRONTIER_DISPATCH=least-load"),
        )
        assert wait_for(site.pages, START_TIMEOUT)
        nodes.start(
            "big", extra=("CONCURRENT_REQUESTS=16", "FRONTIER_DISPATCH=least-load")
        )
        assert nodes.wait_all(EXIT_TIMEOUT)
        crawl = crawl_of(site, nodes, 0.0)
        fetches = page_fetches(site)
    assert crawl.exits == {"small": 0, "big": 0}
    assert stat(crawl.outputs["big"], "dispatch/pulled") >= 1
    assert stat(crawl.outputs["small"], "dispatch/given") >= 1
    share = sum(1 for r in crawl.pages if r["node"] == "small") / len(crawl.pages)
    assert share < 0.4, share  # rendezvous alone would give it about half
    assert set(fetches) == {(h, p) for h in range(60) for p in range(6)}
    assert max(fetches.values()) == 1
    assert_polite(crawl)
