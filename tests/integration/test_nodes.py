"""Node registry and shard ownership on a real Redis (explicit times, no crawl)."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

import pytest
from scrapy.settings import Settings

from crawler.crawlstate.keys import CrawlKeys
from crawler.defaults.frontier import FRONTIER_DISPATCH
from crawler.frontier.frontierconfig import FrontierConfig
from crawler.frontier.node.membership import Membership, NodeReport
from crawler.policy.dispatch import homes
from tests.servers import wait_for

if TYPE_CHECKING:
    import redis as redis_py

pytestmark = pytest.mark.integration

SHARDS = 16
TTL = 1.0


def member(redis: redis_py.Redis, node_id: str) -> Membership:
    settings = Settings()
    settings.setmodule("crawler.defaults")
    settings.update(
        {
            "FRONTIER_SHARDS": SHARDS,
            "FRONTIER_NODE_TTL": TTL,
            "FRONTIER_MAINTENANCE_INTERVAL": 0.1,
            "FRONTIER_LEASE_TIMEOUT": 5,
        }
    )
    config = FrontierConfig.from_settings(settings, "nodes")
    return Membership(redis, CrawlKeys(config.prefix), config, node_id)


def owners(redis: redis_py.Redis) -> list[bytes | None]:
    keys = CrawlKeys("nodes")
    return [redis.get(keys.shard(s).owner) for s in range(SHARDS)]


def test_a_lone_node_owns_every_shard(redis):
    alone = member(redis, "a")
    assert alone.beat(time.time(), NodeReport(pages=0)) == frozenset(range(SHARDS))
    assert owners(redis) == [b"a"] * SHARDS


def test_a_joining_node_gets_its_share_only_after_the_owner_lets_go(redis):
    a, b = member(redis, "a"), member(redis, "b")
    a.beat(time.time(), NodeReport(pages=0))
    home = homes({"a": 1.0, "b": 1.0}, SHARDS, FRONTIER_DISPATCH)
    b_share = frozenset(s for s, node in home.items() if node == "b")
    assert (
        b.beat(time.time(), NodeReport(pages=0)) == frozenset()
    )  # all still held by a
    a.beat(time.time(), NodeReport(pages=0))  # a sees b alive and releases b's share
    assert b.beat(time.time(), NodeReport(pages=0)) == b_share
    assert a.owned == frozenset(range(SHARDS)) - b_share
    assert set(owners(redis)) == {b"a", b"b"}


def test_a_clean_leave_hands_the_shards_over_at_once(redis):
    a, b = member(redis, "a"), member(redis, "b")
    for node in (a, b, a, b):
        node.beat(time.time(), NodeReport(pages=0))
    b.leave()
    assert a.beat(time.time(), NodeReport(pages=0)) == frozenset(range(SHARDS))
    assert redis.hkeys(CrawlKeys("nodes").nodes) == [b"a"]


def test_a_dead_nodes_shards_go_to_the_others_after_its_ttl(redis):
    a, b = member(redis, "a"), member(redis, "b")
    for node in (a, b, a, b):
        node.beat(time.time(), NodeReport(pages=0))
    assert b.owned  # then b dies: no leave, no more heartbeats
    taken = wait_for(
        lambda: a.beat(time.time(), NodeReport(pages=0)) == frozenset(range(SHARDS)),
        timeout=5 * TTL,
        interval=0.1,
    )
    assert taken
    assert owners(redis) == [b"a"] * SHARDS


def test_the_registry_entry_says_who_the_node_is_and_what_it_does(redis):
    a = member(redis, "a")
    start = time.time()
    a.beat(start, NodeReport(pages=0))
    a.beat(start + 1.0, NodeReport(pages=30))
    entry = json.loads(redis.hget(CrawlKeys("nodes").nodes, "a"))
    assert entry["id"] == "a"
    assert entry["shards"] == list(range(SHARDS))
    assert entry["pages"] == 30
    assert entry["pages_per_min"] == pytest.approx(1800.0)
    assert entry["heartbeat"] == start + 1.0
