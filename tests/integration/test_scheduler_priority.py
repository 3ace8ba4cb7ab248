"""Scrapy's scheduler tests whose expected order depends on Request.priority, ported
to FrontierScheduler against a real Redis.

From scrapy/tests/test_scheduler.py: ``SchedulerTestMixin.test_dequeue_priorities``,
which Scrapy runs in memory, on disk (``reopen``: enqueue, close, open another
scheduler on the same state, dequeue) and again with its downloader-aware queue.
Here: in memory and reopened (``FRONTIER_PERSIST``), in both ``FRONTIER_ORDER``
values, with Scrapy's URLs on one host (as Scrapy's test: the frontier may hand out
as many requests of the host at once as ``FRONTIER_HOST_CONCURRENCY`` allows, so it
is set to the number of requests) and on a host each (the downloader-aware variant's
point: requests of several slots; the shard's ready set ranks hosts by their head).
Scrapy drains with ``while has_pending_requests()``; the frontier keeps pending
requests it handed out until the engine is through with them (none is here), so the
port takes requests until it has them all, in a bounded loop, then checks that none
is left. Depth-dependent cases (not in Scrapy's tests) pin the two orders apart.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from scrapy import Request, Spider
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.integration.openscheduler import opened
from tests.integration.test_honest_exits import assert_one_line_stop, scrapy_crawl

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from crawler.frontier.scheduler import FrontierScheduler

pytestmark = pytest.mark.integration

# Scrapy's _PRIORITIES, on a loopback host nothing listens to (never downloaded).
PRIORITIES = [("a", -2), ("d", 1), ("b", -1), ("c", 0), ("e", 2)]
# Enough calls to hand out every request; more means the scheduler withholds one.
MOST_CALLS = 50


def one_host(path: str) -> str:
    return f"http://127.0.0.2:9/{path}"


def host_each(path: str) -> str:
    return f"http://127.0.0.{2 + 'abcde'.index(path)}:9/{path}"


class PrioritySpider(Spider):
    name = "priority"


@pytest.fixture
def scheduler_settings(settings) -> Callable[..., dict[str, Any]]:
    def make(**overrides: Any) -> dict[str, Any]:
        return settings(
            FRONTIER_NODE_NAME="priority-port",
            FRONTIER_HOST_CONCURRENCY=len(PRIORITIES),
            CONCURRENT_REQUESTS_PER_DOMAIN=len(PRIORITIES),
            **overrides,
        )

    return make


async def dequeued_after(
    settings: dict[str, Any], requests: Sequence[Request], *, reopen: bool
) -> list[Request]:
    """Enqueue *requests*, reopen the scheduler if asked, and take them all."""
    async with opened(PrioritySpider, settings) as scheduler:
        for request in requests:
            assert scheduler.enqueue_request(request)
        if not reopen:
            return take_all(scheduler, len(requests))
    async with opened(PrioritySpider, settings) as scheduler:
        return take_all(scheduler, len(requests))


def take_all(scheduler: FrontierScheduler, count: int) -> list[Request]:
    taken: list[Request] = []
    for _ in range(MOST_CALLS):
        if len(taken) == count:
            break
        if (request := scheduler.next_request()) is not None:
            taken.append(request)
    assert len(taken) == count, f"handed out {taken} of {count}"
    assert scheduler.next_request() is None
    return taken


@deferred_f_from_coro_f
@pytest.mark.parametrize("reopen", [False, True], ids=["in_memory", "reopened"])
@pytest.mark.parametrize("order", ["bfs", "priority"])
@pytest.mark.parametrize("url", [one_host, host_each])
async def test_dequeue_priorities(scheduler_settings, reopen, order, url):
    settings = scheduler_settings(FRONTIER_ORDER=order)
    requests = [Request(url(path), priority=p) for path, p in PRIORITIES]
    dequeued = await dequeued_after(settings, requests, reopen=reopen)
    priorities = [request.priority for request in dequeued]
    assert priorities == sorted([x[1] for x in PRIORITIES], key=lambda x: -x)


def at_depth(url: str, depth: int, priority: int) -> Request:
    return Request(url, priority=priority, meta={"depth": depth})


@deferred_f_from_coro_f
@pytest.mark.parametrize("reopen", [False, True], ids=["in_memory", "reopened"])
@pytest.mark.parametrize("url", [one_host, host_each])
async def test_bfs_order_takes_depth_first_then_priority(
    scheduler_settings, reopen, url
):
    requests = [
        at_depth(url("a"), 1, 50),
        at_depth(url("b"), 0, -5),
        at_depth(url("c"), 1, 60),
        at_depth(url("d"), 0, 5),
        at_depth(url("e"), 2, 100),
    ]
    dequeued = await dequeued_after(scheduler_settings(), requests, reopen=reopen)
    assert [r.url[-1] for r in dequeued] == ["d", "b", "c", "a", "e"]


@deferred_f_from_coro_f
@pytest.mark.parametrize("reopen", [False, True], ids=["in_memory", "reopened"])
@pytest.mark.parametrize("url", [one_host, host_each])
async def test_priority_order_takes_priority_first_then_depth(
    scheduler_settings, reopen, url
):
    requests = [
        at_depth(url("a"), 1, 50),
        at_depth(url("b"), 0, -5),
        at_depth(url("c"), 2, 50),
        at_depth(url("d"), 0, 50),
        at_depth(url("e"), 2, 100),
    ]
    settings = scheduler_settings(FRONTIER_ORDER="priority")
    dequeued = await dequeued_after(settings, requests, reopen=reopen)
    assert [r.url[-1] for r in dequeued] == ["e", "d", "a", "c", "b"]


@pytest.mark.parametrize(
    ("options", "words"),
    [
        (["FRONTIER_ORDER=dfo"], ["FRONTIER_ORDER must be one of bfs, priority"]),
        (
            ["FRONTIER_ORDER=priority", "FRONTIER_BFS_LOOKAHEAD=0"],
            ["FRONTIER_ORDER=priority needs FRONTIER_BFS_LOOKAHEAD=-1"],
        ),
    ],
)
def test_a_bad_order_stops_start_up_with_one_line(tmp_path, options, words):
    settings = [word for option in options for word in ("-s", option)]
    result = scrapy_crawl(tmp_path, "-a", "seeds=http://127.0.0.2:9/", *settings)
    assert_one_line_stop(result, *words)
