"""The wording of progress: the estimate of the time to drain the queue, the share
done, why a node is idle, and the periodic log line."""

from __future__ import annotations

import pytest

from crawler.policy.progress import (
    CrawlWork,
    Figures,
    NodeWork,
    duration,
    eta_seconds,
    eta_text,
    fraction_done,
    idle_reason,
    per_minute,
    progress_line,
)

NOW = 1_800_000_000.0  # 2027-01-15 08:00:00 UTC
WORK = CrawlWork(hosts=4, held=0, work_left=True, paused=False)


@pytest.mark.parametrize(
    ("left", "rate", "growing", "seconds"),
    [
        (120, 60.0, False, 120.0),  # 120 URLs at 60 pages/min: two minutes
        (0, 0.0, False, 0.0),  # nothing left: nothing to wait for
        (0, 0.0, True, 0.0),
        (10, 0.0, False, None),  # no pages done lately: no estimate
        (10, 60.0, True, None),  # the queue grows: the rate says nothing
    ],
)
def test_the_eta_is_what_is_left_over_the_rate(left, rate, growing, seconds):
    assert eta_seconds(left, rate, growing=growing) == seconds


@pytest.mark.parametrize(
    ("left", "rate", "growing", "text"),
    [
        (150, 60.0, False, "~2m30s"),
        (0, 0.0, False, "nothing queued"),
        (5, 0.0, False, "unknown (no pages done lately)"),
        (5, 30.0, True, "unknown (queue growing)"),
    ],
)
def test_the_eta_is_worded_as_an_estimate_or_unknown(left, rate, growing, text):
    assert eta_text(left, rate, growing=growing) == text


def test_the_eta_is_never_before_the_next_held_request_is_due():
    assert eta_seconds(10, 60.0, growing=False, held_wait=600.0) == 600.0
    assert eta_seconds(10, 60.0, growing=False, held_wait=-5.0) == 10.0


def test_rates_and_shares():
    assert per_minute(20, 10.0) == 120.0
    assert per_minute(20, 0.0) == 0.0
    assert fraction_done(30, 10) == 0.75
    assert fraction_done(0, 0) == 1.0  # nothing known: a full bar, not a division
    assert duration(3700) == "1h01m"


@pytest.mark.parametrize(
    ("node", "crawl", "reason"),
    [
        (NodeWork(shards=8, ready=1, waiting=2), WORK, None),
        (NodeWork(shards=8, in_flight=1), WORK, None),
        (
            NodeWork(shards=8, waiting=2),
            CrawlWork(hosts=4, held=0, work_left=True, paused=True),
            "paused (scrapy frontier resume)",
        ),
        (
            NodeWork(shards=8),
            CrawlWork(hosts=0, held=0, work_left=False, paused=False),
            "nothing left to do",
        ),
        (
            NodeWork(shards=32),
            WORK,
            "owns 0 of 4 hosts with work: all are in shards of other nodes",
        ),
        (NodeWork(), WORK, "owns no shard (other nodes hold them all)"),
        (
            NodeWork(shards=32),
            CrawlWork(hosts=0, held=3, work_left=True, paused=False),
            "its shards hold no work: the held URLs are in other nodes' shards",
        ),
        (
            NodeWork(shards=8, waiting=3, next_ready=NOW + 4.2),
            WORK,
            "waiting on host delays: next host ready in 4s",
        ),
        (
            NodeWork(shards=8, held=2, next_held=NOW + 3600),
            WORK,
            "waiting on held URLs: next retry at 09:00:00 UTC, in 1h00m",
        ),
    ],
)
def test_an_idle_node_says_why(node, crawl, reason):
    assert idle_reason(node, crawl, now=NOW) == reason


def figures(**changes: object) -> Figures:
    values: dict[str, object] = {
        "done": 120,
        "failed": 3,
        "queued": 49,
        "held": 4,
        "in_flight": 2,
        "next_held": NOW + 125,
        "crawl_rate": 110.0,
        "node_rate": 55.0,
        "elapsed": 750.0,
        "growing": False,
        "idle": None,
    }
    return Figures(**(values | changes))  # type: ignore[arg-type]


def test_the_progress_line_says_every_figure():
    assert progress_line(figures(), now=NOW) == (
        "Progress: done 120 (3 failed for good), queued 49, held 4 (next due at "
        "08:02:05 UTC, in 2m05s), in flight 2; 110 pages/min in the crawl, 55 on "
        "this node; elapsed 12m30s; time to drain what is queued now: ~2m05s"
    )


def test_the_progress_line_of_an_idle_node_ends_with_why():
    line = progress_line(
        figures(crawl_rate=0.0, elapsed=None, idle="nothing left to do"), now=NOW
    )
    assert "elapsed ?;" in line
    assert "time to drain what is queued now: unknown (no pages done lately)" in line
    assert line.endswith("; this node idle: nothing left to do")
