"""FRONTIER_ORDER = importance at the scheduler, against a real Redis: the most
important URL goes first, within a host and across hosts, and a queued URL moves up
when in-links raise its importance; the request handed out carries its importance
and in-links, and the depth it was first queued at.

Requests carry the credit their link passes (``meta[LINK_CREDIT]``), as
``LinkCreditMiddleware`` or the ``bfs`` spider give it; hosts are loopback addresses
nothing listens on (nothing is downloaded). IMPORTANCE_BETA=0 unless a test says:
the order is then the credits' alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
import redis
from scrapy import Request, Spider
from scrapy.utils.defer import deferred_f_from_coro_f

from crawler.context.crawl import CrawlContext
from crawler.crawlstate.keys import CrawlKeys
from crawler.frontier import importance
from crawler.meta import IMPORTANCE, INLINKS, LINK_CREDIT
from crawler.policy.importance import BAND_OF_ONE, LinkCredit, band_floor
from crawler.policy.sharding import shard_of
from tests.integration.openscheduler import opened
from tests.integration.test_scheduler_priority import take_all

if TYPE_CHECKING:
    from collections.abc import Callable


pytestmark = pytest.mark.integration


class ImportanceSpider(Spider):
    name = "importance"


@pytest.fixture
def importance_settings(settings, monkeypatch) -> Callable[..., dict[str, Any]]:
    # In-links go to Redis with every round trip (not every half second).
    monkeypatch.setattr(importance, "IN_LINKS_DELAY", 0.0)

    def make(**overrides: Any) -> dict[str, Any]:
        values: dict[str, Any] = {
            "FRONTIER_NODE_NAME": "importance-queue",
            "FRONTIER_ORDER": "importance",
            "IMPORTANCE_BETA": 0.0,
            # One host hands out every request at once: the order is the queue's.
            "FRONTIER_HOST_CONCURRENCY": 10,
            "CONCURRENT_REQUESTS_PER_DOMAIN": 10,
            "FRONTIER_PUSH_BATCH": 1,
        }
        return settings(**(values | overrides))

    return make


def link(url: str, credit: float, depth: int = 1) -> Request:
    return Request(url, meta={LINK_CREDIT: credit, "depth": depth})


def one_host(name: str) -> str:
    return f"http://127.0.0.2:9/{name}"


def host_each(name: str) -> str:
    return f"http://127.0.0.{2 + 'abcdefgh'.index(name)}:9/{name}"


def names(requests: list[Request]) -> list[str]:
    return [request.url.rsplit("/", 1)[1] for request in requests]


@deferred_f_from_coro_f
@pytest.mark.parametrize("url", [one_host, host_each])
async def test_the_most_important_url_goes_first(importance_settings, url):
    credits = {"a": 0.01, "b": 1.0, "c": 0.1, "d": 0.5, "e": 0.02}
    async with opened(ImportanceSpider, importance_settings()) as scheduler:
        for name, credit in credits.items():
            assert scheduler.enqueue_request(link(url(name), credit))
        taken = take_all(scheduler, len(credits))
    assert names(taken) == ["b", "d", "c", "e", "a"]
    assert [r.meta[IMPORTANCE] for r in taken] == pytest.approx(
        [1.0, 0.5, 0.1, 0.02, 0.01], rel=1e-5
    )


@deferred_f_from_coro_f
@pytest.mark.parametrize("url", [one_host, host_each])
async def test_a_queued_url_moves_up_as_in_links_arrive(importance_settings, url):
    async with opened(ImportanceSpider, importance_settings()) as scheduler:
        for name, credit in (("a", 0.01), ("b", 0.02), ("c", 0.03)):
            assert scheduler.enqueue_request(link(url(name), credit))
        # Two more pages link to a: duplicates, yet in-links. They go with the
        # next round trip (here d's push; the scheduler picks the shard to pop
        # from by what the last replies said).
        assert not scheduler.enqueue_request(link(url("a"), 0.05))
        assert not scheduler.enqueue_request(link(url("a"), 0.05))
        assert scheduler.enqueue_request(link(url("d"), 0.001))
        taken = take_all(scheduler, 4)
        stats = scheduler._crawler.stats.get_stats()
    assert names(taken) == ["a", "c", "b", "d"]
    assert taken[0].meta[IMPORTANCE] == pytest.approx(0.11, rel=1e-5)
    assert taken[0].meta[INLINKS] == 3
    assert stats.get("frontier/in_links") == 2
    assert stats.get("dupefilter/filtered") == 2


@deferred_f_from_coro_f
async def test_without_enough_in_links_a_url_keeps_its_place(importance_settings):
    async with opened(ImportanceSpider, importance_settings()) as scheduler:
        for name, credit in (("a", 0.01), ("b", 0.5), ("c", 0.03)):
            assert scheduler.enqueue_request(link(one_host(name), credit))
        assert not scheduler.enqueue_request(link(one_host("a"), 0.01))
        taken = take_all(scheduler, 3)
    assert names(taken) == ["b", "c", "a"]
    assert taken[2].meta[IMPORTANCE] == pytest.approx(0.02, rel=1e-5)
    assert taken[2].meta[INLINKS] == 2


@deferred_f_from_coro_f
async def test_a_url_moved_up_keeps_the_depth_it_was_queued_at(importance_settings):
    async with opened(ImportanceSpider, importance_settings()) as scheduler:
        assert scheduler.enqueue_request(link(one_host("a"), 0.01, depth=1))
        assert scheduler.enqueue_request(link(one_host("b"), 0.02, depth=1))
        assert not scheduler.enqueue_request(link(one_host("a"), 1.0, depth=5))
        taken = take_all(scheduler, 2)
    assert names(taken) == ["a", "b"]
    assert taken[0].meta["depth"] == 1


@deferred_f_from_coro_f
async def test_the_url_score_counts_with_its_weight(importance_settings):
    settings = importance_settings(IMPORTANCE_ALPHA=0.0, IMPORTANCE_BETA=1.0)
    urls = [
        "http://127.0.0.2:9/a/b/c/d/e/deep.html?x=1",
        "http://127.0.0.2:9/",
        "http://127.0.0.2:9/docs/page.html",
    ]
    async with opened(ImportanceSpider, settings) as scheduler:
        for url in urls:
            assert scheduler.enqueue_request(link(url, 1.0))
        taken = take_all(scheduler, 3)
    assert [r.url for r in taken] == [urls[1], urls[2], urls[0]]


@deferred_f_from_coro_f
async def test_a_lease_put_back_keeps_its_rank(importance_settings):
    """A node that closes gives its leases back: they are queued again at their
    importance band, ahead of less important URLs."""
    settings = importance_settings()
    async with opened(ImportanceSpider, settings) as scheduler:
        for name, credit in (("a", 0.01), ("b", 1.0), ("c", 0.1)):
            assert scheduler.enqueue_request(link(one_host(name), credit))
        first = scheduler.next_request()
        assert first is not None
        assert names([first]) == ["b"]
    async with opened(ImportanceSpider, settings) as scheduler:
        taken = take_all(scheduler, 3)
    assert names(taken) == ["b", "c", "a"]


@deferred_f_from_coro_f
async def test_a_url_at_its_band_floor_keeps_its_band_when_put_back(
    importance_settings,
):
    """Redis ranks a lease put back by its band's floor: a URL whose importance is
    that floor exactly ranks in its band, before and after (Lua's log2 of the
    floor came out a hair low, and the URL sank behind the rest of its band)."""
    floor = band_floor(BAND_OF_ONE - 1)
    settings = importance_settings()
    async with opened(ImportanceSpider, settings) as scheduler:
        assert scheduler.enqueue_request(link(one_host("a"), floor))
        assert scheduler.enqueue_request(link(one_host("b"), floor * 1.01))
        first = scheduler.next_request()
        assert first is not None
        assert names([first]) == ["a"]
    async with opened(ImportanceSpider, settings) as scheduler:
        taken = take_all(scheduler, 2)
    assert names(taken) == ["a", "b"]


@deferred_f_from_coro_f
async def test_in_links_the_spider_did_not_yield_again_move_a_url_up(
    importance_settings,
):
    """The bfs spider gives the links it yielded before to the crawl's
    LinkCredits; the frontier credits them with its next round trip."""
    async with opened(ImportanceSpider, importance_settings()) as scheduler:
        for name, credit in (("a", 0.01), ("b", 0.02), ("c", 0.03)):
            assert scheduler.enqueue_request(link(one_host(name), credit))
        inbox = CrawlContext.of(scheduler._crawler).link_credits
        inbox.add(one_host("a"), LinkCredit(0.1))
        taken = take_all(scheduler, 3)
    assert names(taken) == ["a", "c", "b"]
    assert taken[0].meta[INLINKS] == 2
    assert taken[0].meta[IMPORTANCE] == pytest.approx(0.11, rel=1e-4)


@deferred_f_from_coro_f
async def test_a_damaged_index_is_set_aside_and_nothing_is_lost(importance_settings):
    """A host's importance index that is not a hash (state the crawler did not
    write) is set aside and counted; its URLs are queued and handed out."""
    values = importance_settings()
    host = "127.0.0.2"
    shard = shard_of(host, values["FRONTIER_SHARDS"])
    key = CrawlKeys(ImportanceSpider.name).shard(shard).importance(host)
    client = redis.Redis.from_url(values["REDIS_URL"])
    client.delete(*client.keys(f"{ImportanceSpider.name}:*") or ["-"])
    async with opened(ImportanceSpider, values) as scheduler:
        client.set(key, "not a hash")
        for name, credit in (("a", 0.01), ("b", 1.0)):
            assert scheduler.enqueue_request(link(one_host(name), credit))
        assert not scheduler.enqueue_request(link(one_host("a"), 0.01))
        taken = take_all(scheduler, 2)
        stats = scheduler._crawler.stats.get_stats()
    assert names(taken) == ["b", "a"]
    assert stats.get("frontier/bad_entries", 0) >= 1
    client.close()


@deferred_f_from_coro_f
@pytest.mark.parametrize("host_credit", [0.0, 1.0])
async def test_a_host_linked_from_other_hosts_goes_first(
    importance_settings, host_credit
):
    """Hosts are compared by their best URL's importance plus their host term,
    which links from other hosts raise, even links to pages fetched already (the
    control: without it, the more important URL goes first)."""
    async with opened(ImportanceSpider, importance_settings()) as scheduler:
        assert scheduler.enqueue_request(link(host_each("a"), 0.1))
        assert scheduler.enqueue_request(link(host_each("b"), 0.08))
        inbox = CrawlContext.of(scheduler._crawler).link_credits
        inbox.add(host_each("b") + "-fetched-long-ago", LinkCredit(0.0, host_credit))
        # The credit goes with the next round trip (here a push); the scheduler
        # picks a shard by what the last replies said.
        assert scheduler.enqueue_request(link(host_each("c"), 0.001))
        taken = take_all(scheduler, 3)
    assert names(taken) == (["b", "a", "c"] if host_credit else ["a", "b", "c"])
