"""The crawl's state as status and the dashboard both name it, from what Redis
held: finished whenever nothing is left to do, whoever is alive."""

from __future__ import annotations

import pytest

from crawler.crawlstate.controls import Control
from crawler.crawlstate.status import CrawlStatus, NodeStatus


def crawl(
    *, alive: int = 0, acked: int = 0, paused: bool = False, **work: int
) -> CrawlStatus:
    status = CrawlStatus("crawl", 8, control=Control(paused=paused), acked=acked)
    status.nodes = [NodeStatus(f"n{i}", alive=True) for i in range(alive)]
    status.nodes.append(NodeStatus("gone", alive=False))
    for name, count in work.items():
        setattr(status, name, count)
    return status


@pytest.mark.parametrize(
    ("status", "state"),
    [
        (crawl(acked=5), "finished"),
        (crawl(alive=1, acked=5), "finished"),  # idle node: not "running"
        (crawl(alive=2, acked=5, paused=True), "finished"),
        (crawl(alive=1), "running"),  # starting: nothing done yet
        (crawl(alive=1, acked=5, queued=1), "running"),
        (crawl(alive=1, acked=5, in_flight=1), "running"),
        (crawl(alive=1, acked=5, held=1), "running"),
        (crawl(alive=1, acked=5, seeds=1), "running"),
        (crawl(alive=1, acked=5, queued=1, paused=True), "paused"),
        (crawl(acked=5, queued=1, paused=True), "paused"),
        (crawl(acked=5, queued=1), "stopped"),
        (crawl(held=2), "stopped"),
        (crawl(), "finished"),
    ],
)
def test_the_state(status, state):
    assert status.state == state


def test_no_such_crawl_whatever_else():
    status = crawl(alive=1, queued=3)
    status.exists = False
    assert status.state == "no such crawl"


def test_totals_split_done_by_fate():
    status = crawl(acked=10, held=2, queued=4, in_flight=1, seeds=3)
    status.fates = {"fetched": 6, "redirected": 1, "http_error": 2, "ignored": 1}
    totals = status.totals()
    assert (totals.done, totals.fetched, totals.redirected) == (10, 6, 1)
    assert totals.failed == 3
    assert totals.failed_by_fate == {"http_error": 2, "ignored": 1}
    assert (totals.held, totals.queued, totals.in_flight, totals.seeds) == (2, 4, 1, 3)
    assert totals.by_fate


def test_totals_of_nodes_that_kept_no_fate_counters():
    totals = crawl(acked=7).totals()
    assert not totals.by_fate
    assert totals.done == 7
