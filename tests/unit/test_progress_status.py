"""`scrapy frontier status` leads with progress, says why a live node is idle, and
shows no shards-without-owner list once nothing is left to do."""

from __future__ import annotations

from crawler.crawlstate.status import CrawlStatus, NodeStatus, ShardFigures
from crawler.reports.status import render_status

NOW = 1_800_000_000.0


def test_a_running_crawl_says_its_progress_and_why_a_node_idles():
    status = CrawlStatus("bfs", 2, queued=30, in_flight=0, acked=10, started=NOW - 90)
    status.fates = {"fetched": 10}
    status.waiting = 2
    status.by_shard = [ShardFigures(waiting=2, owner="a"), ShardFigures(owner="b")]
    status.nodes = [
        NodeStatus("a", alive=True, heartbeat=NOW, shards=(0,), pages_per_min=60.0),
        NodeStatus("b", alive=True, heartbeat=NOW, shards=(1,), pages_per_min=0.0),
    ]
    out = render_status(status, now=NOW)
    assert (
        "Progress: 25% of the 40 URLs known (done + queued + held + in flight); "
        "elapsed 1m30s; 60 pages/min; time to drain what is queued now: ~30s\n"
    ) in out
    assert (
        "Node b is idle: owns 0 of 2 hosts with work: all are in shards of other "
        "nodes\n"
    ) in out
    assert "Node a is idle: waiting on host delays: next host ready\n" in out
    assert "Shards without a live owner: none\n" in out


def test_a_finished_crawl_lists_no_shards_without_owner():
    status = CrawlStatus("bfs", 4, acked=5)
    status.fates = {"fetched": 5}
    out = render_status(status, now=NOW)
    assert out.startswith("Crawl 'bfs': finished, 4 shards\n")
    assert "Progress: 100% of the 5 URLs known" in out
    assert "time to drain what is queued now: no node alive" in out
    assert "Shards without a live owner" not in out
