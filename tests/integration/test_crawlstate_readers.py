"""The readers nodes and commands share, on a real Redis: totals, live nodes, delete."""

from __future__ import annotations

import pytest

from crawler.crawlstate.keys import CrawlKeys
from crawler.crawlstate.readers import (
    crawl_key_count,
    delete_crawl,
    live_nodes,
    registry_entry,
    totals,
)
from crawler.frontier.store.store import PopOrder
from tests.integration.test_frontier_scripts import NODE, T0, make_store, pending

pytestmark = pytest.mark.integration


def test_totals_count_queued_and_leased_requests(redis):
    store = make_store(redis, FRONTIER_SHARDS=1)
    keys = CrawlKeys("test")
    assert totals(redis, keys, 1) == (0, 0)
    store.flush(
        [pending("a", 0, "a0"), pending("a", 1, "a1"), pending("b", 0, "b0")], [], T0
    )
    assert totals(redis, keys, 1) == (3, 0)
    store.pop(PopOrder(0, NODE, 0.0), T0)
    assert totals(redis, keys, 1) == (2, 1)


def test_totals_never_count_fewer_queued_than_hosts_with_requests(redis):
    keys = CrawlKeys("test").shard(0)
    redis.hset(keys.counters, "queued", "not a number")
    redis.zadd(keys.ready, {"a": 1, "b": 2})
    redis.zadd(keys.waiting, {"c": 1})
    redis.zadd(keys.held, {"entry": 1})
    assert totals(redis, CrawlKeys("test"), 1) == (4, 0)


def test_live_nodes_are_those_whose_heartbeat_exists(redis):
    keys = CrawlKeys("test")
    redis.hset(keys.nodes, mapping={"n1": "{}", "n2": "{}", "n3": "{}"})
    redis.set(keys.heartbeat("n1"), "1", ex=60)
    redis.set(keys.heartbeat("n3"), "1", ex=60)
    assert live_nodes(redis, keys) == ["n1", "n3"]


@pytest.mark.parametrize(
    ("raw", "entry"),
    [
        (b'{"heartbeat": 12.5}', {"heartbeat": 12.5}),
        (b"[1, 2]", None),
        (b"\x80\x04pickle", None),
        (b"[" * 100_000, None),
    ],
)
def test_a_registry_entry_no_node_wrote_reads_as_none(raw, entry):
    assert registry_entry(raw) == entry


def test_deleting_a_crawl_leaves_other_crawls_alone(redis):
    keys = CrawlKeys("bfs")
    for i in range(2500):  # more than one SCAN batch
        redis.set(f"bfs:{{s00}}:k{i}", "1")
    redis.set("bfs2:meta", "1")
    redis.set("other:bfs:meta", "1")
    assert crawl_key_count(redis, keys) == 2500
    assert delete_crawl(redis, keys) == 2500
    assert crawl_key_count(redis, keys) == 0
    assert sorted(redis.keys("*")) == [b"bfs2:meta", b"other:bfs:meta"]


def test_a_crawl_whose_prefix_is_a_glob_is_never_deleted(redis):
    redis.set("bfs:meta", "1")
    with pytest.raises(ValueError, match="glob"):
        delete_crawl(redis, CrawlKeys("b*"))
    assert redis.exists("bfs:meta")
