"""Scrapy's own scheduler tests, ported to FrontierScheduler against a real Redis.

From scrapy/tests/test_scheduler.py and tests/test_scheduler_base.py, every test
that applies to any scheduler (the list of those left out, and why, is in
docs/architecture.md, "Scrapy's scheduler contract"). Scrapy's tests enqueue their
URLs on one host; the frontier hands out one request per host at a time until the
engine is through with it, so these put each URL on a host of its own. The
"on disk" variants reopen a scheduler on the same Redis (``FRONTIER_PERSIST``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import pytest
from scrapy import Request, Spider, signals
from scrapy.core.scheduler import BaseScheduler
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from crawler.frontier.node import drain
from tests.integration.openscheduler import opened
from tests.servers import RestartableRedis

if TYPE_CHECKING:
    from collections.abc import Callable

    from crawler.frontier.scheduler import FrontierScheduler

pytestmark = pytest.mark.integration

URLS = {f"http://127.0.0.{i}:9/{path}" for i, path in ((2, "a"), (3, "b"), (4, "c"))}
# Enough calls to hand out every request; a scheduler that never runs dry fails.
MOST_CALLS = 50


class ContractSpider(Spider):
    name = "spider"


@pytest.fixture
def scheduler_settings(settings) -> Callable[..., dict[str, Any]]:
    def make(**overrides: Any) -> dict[str, Any]:
        return settings(LOG_LEVEL="DEBUG", FRONTIER_NODE_NAME="contract", **overrides)

    return make


def dequeue_all(scheduler: FrontierScheduler) -> list[Request]:
    requests = []
    for _ in range(MOST_CALLS):
        if not scheduler.has_pending_requests():
            return requests
        if (request := scheduler.next_request()) is not None:
            requests.append(request)
    raise AssertionError(f"still pending after {MOST_CALLS} calls: {requests}")


# --- test_scheduler_base.py -----------------------------------------------------------


@deferred_f_from_coro_f
async def test_scheduler_class(scheduler_settings):
    async with opened(ContractSpider, scheduler_settings()) as scheduler:
        assert isinstance(scheduler, BaseScheduler)
        assert issubclass(scheduler.__class__, BaseScheduler)


@deferred_f_from_coro_f
async def test_enqueue_dequeue(scheduler_settings, monkeypatch):
    monkeypatch.setattr(drain, "CHECK_INTERVAL", 0.0)  # Redis asked at every call
    async with opened(ContractSpider, scheduler_settings()) as scheduler:
        assert not scheduler.has_pending_requests()
        for url in URLS:
            assert scheduler.enqueue_request(Request(url))
            assert not scheduler.enqueue_request(Request(url))
        assert scheduler.has_pending_requests()
        assert len(scheduler) == len(URLS)
        dequeued = [request.url for request in dequeue_all(scheduler)]
        assert set(dequeued) == URLS
        assert not scheduler.has_pending_requests()
        assert len(scheduler) == 0


class PathsSpider(Spider):
    name = "paths"

    def parse(self, response):
        yield {"path": response.url}


@deferred_f_from_coro_f
async def test_crawl(site, settings, caplog):
    """TestMinimalSchedulerCrawl/TestSimpleSchedulerCrawl: a crawl through it."""
    crawler = get_crawler(PathsSpider, settings(BFS_SCOPE="seed-hosts"))
    with caplog.at_level(logging.DEBUG):
        await crawler.crawl_async(start_urls=site.seeds)
    for url in site.seeds:
        assert f"{{'path': '{url}'}}" in caplog.text
    assert crawler.stats.get_value("item_scraped_count") == len(site.seeds)


# --- test_scheduler.py (SchedulerTestMixin, in memory and reopened) --------------------


@deferred_f_from_coro_f
@pytest.mark.parametrize("reopen", [False, True], ids=["in_memory", "reopened"])
async def test_length(scheduler_settings, reopen):
    async with opened(ContractSpider, scheduler_settings()) as scheduler:
        assert not scheduler.has_pending_requests()
        assert len(scheduler) == 0
        for url in URLS:
            scheduler.enqueue_request(Request(url))
        if not reopen:
            assert scheduler.has_pending_requests()
            assert len(scheduler) == len(URLS)
    if reopen:
        async with opened(ContractSpider, scheduler_settings()) as scheduler:
            assert scheduler.has_pending_requests()
            assert len(scheduler) == len(URLS)


@deferred_f_from_coro_f
@pytest.mark.parametrize("reopen", [False, True], ids=["in_memory", "reopened"])
async def test_dequeue(scheduler_settings, reopen):
    async with opened(ContractSpider, scheduler_settings()) as scheduler:
        for url in URLS:
            scheduler.enqueue_request(Request(url))
        if not reopen:
            assert {r.url for r in dequeue_all(scheduler)} == URLS
    if reopen:
        async with opened(ContractSpider, scheduler_settings()) as scheduler:
            assert {r.url for r in dequeue_all(scheduler)} == URLS


# --- duplicates: the contract Scrapy's engine relies on ---------------------------------


def dropped_requests(scheduler: FrontierScheduler) -> list[Request]:
    found: list[Request] = []
    crawler = scheduler._crawler
    crawler.signals.connect(
        lambda request, spider: found.append(request),
        signal=signals.request_dropped,
        weak=False,
    )
    return found


@deferred_f_from_coro_f
async def test_a_duplicate_redis_finds_in_the_call_is_refused(scheduler_settings):
    url = "http://127.0.0.2:9/a"
    async with opened(ContractSpider, scheduler_settings()) as scheduler:
        assert scheduler.enqueue_request(Request(url))
    async with opened(
        ContractSpider, scheduler_settings(FRONTIER_PUSH_BATCH=1)
    ) as scheduler:
        dropped = dropped_requests(scheduler)
        assert not scheduler.enqueue_request(Request(url))  # a new local cache
        assert dropped == []  # the engine sends request_dropped for a False
        assert scheduler._crawler.stats.get_value("dupefilter/filtered") == 1


@deferred_f_from_coro_f
async def test_a_duplicate_redis_finds_later_is_dropped_loudly(scheduler_settings):
    url = "http://127.0.0.2:9/a"
    async with opened(ContractSpider, scheduler_settings()) as scheduler:
        assert scheduler.enqueue_request(Request(url))
    async with opened(
        ContractSpider, scheduler_settings(FRONTIER_PUSH_BATCH=100)
    ) as scheduler:
        dropped = dropped_requests(scheduler)
        request = Request(url)
        assert scheduler.enqueue_request(request)  # buffered: Redis not asked yet
        assert dropped == []
        scheduler.next_request()  # the buffer goes with this pop
        assert dropped == [request]
        assert scheduler._crawler.stats.get_value("dupefilter/filtered") == 1


@deferred_f_from_coro_f
@pytest.mark.parametrize("debug", [False, True])
async def test_duplicates_are_logged_as_scrapy_logs_them(
    scheduler_settings, caplog, debug
):
    async with opened(
        ContractSpider, scheduler_settings(DUPEFILTER_DEBUG=debug)
    ) as scheduler:
        with caplog.at_level(logging.DEBUG, logger="crawler.frontier.duplicates"):
            for url in sorted(URLS):
                scheduler.enqueue_request(Request(url))
                scheduler.enqueue_request(Request(url))
    lines = [r.getMessage() for r in caplog.records if "duplicate" in r.getMessage()]
    assert all(r.levelno == logging.DEBUG for r in caplog.records if r.msg in lines)
    if debug:
        assert lines == [
            f"Filtered duplicate request: <GET {url}> (referer: None)"
            for url in sorted(URLS)
        ]
    else:
        shown = (
            f"Filtered duplicate request: <GET {min(URLS)}> - no more duplicates will "
            "be shown (see DUPEFILTER_DEBUG to show all duplicates)"
        )
        assert lines == [shown]


@deferred_f_from_coro_f
async def test_length_while_redis_is_away_is_the_last_known(
    scheduler_settings, tmp_path
):
    server = RestartableRedis(tmp_path)
    server.start()
    try:
        settings = scheduler_settings(REDIS_URL=server.url, FRONTIER_PUSH_BATCH=1)
        async with opened(ContractSpider, settings) as scheduler:
            for url in URLS:
                scheduler.enqueue_request(Request(url))
            assert len(scheduler) == len(URLS)  # in Redis, none buffered
            server.stop()
            assert len(scheduler) == len(URLS)
            scheduler.enqueue_request(Request("http://127.0.0.5:9/d"))
            assert len(scheduler) == len(URLS) + 1  # one more, buffered
            server.start()
    finally:
        server.stop()
