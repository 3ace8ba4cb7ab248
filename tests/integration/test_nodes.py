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
from crawler.frontier.node.handover import hand_over, read_loans, ready_by_shard
from crawler.frontier.node.membership import Membership, NodeReport
from crawler.frontier.store.store import FrontierStore
from crawler.policy.dispatch import homes
from tests.servers import wait_for

if TYPE_CHECKING:
    import redis as redis_py

pytestmark = pytest.mark.integration

SHARDS = 16
TTL = 1.0


def member(
    redis: redis_py.Redis, node_id: str, dispatch: str = FRONTIER_DISPATCH
) -> Membership:
    settings = Settings()
    settings.setmodule("crawler.defaults")
    settings.update(
        {
            "FRONTIER_SHARDS": SHARDS,
            "FRONTIER_NODE_TTL": TTL,
            "FRONTIER_MAINTENANCE_INTERVAL": 0.1,
            "FRONTIER_LEASE_TIMEOUT": 5,
            "FRONTIER_DISPATCH": dispatch,
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


def test_a_joining_node_takes_its_share_at_its_first_heartbeat(redis):
    a, b = member(redis, "a"), member(redis, "b")
    a.beat(time.time(), NodeReport(pages=0))
    home = homes({"a": 1.0, "b": 1.0}, SHARDS, FRONTIER_DISPATCH)
    b_share = frozenset(s for s, node in home.items() if node == "b")
    assert b.beat(time.time(), NodeReport(pages=0)) == b_share  # taken from a
    assert {s for s, owner in enumerate(owners(redis)) if owner == b"b"} == b_share
    assert b.resumed == frozenset()  # a's requests in flight stay a's
    a.beat(time.time(), NodeReport(pages=0))  # a sees b alive and lets its share be
    assert a.owned == frozenset(range(SHARDS)) - b_share
    assert b.beat(time.time(), NodeReport(pages=0)) == b_share


def test_a_joining_node_takes_nothing_from_a_dead_holder_before_its_ttl(redis):
    a = member(redis, "a")
    a.beat(time.time(), NodeReport(pages=0))
    redis.delete(CrawlKeys("nodes").heartbeat("a"))  # a died; its owner keys remain
    b = member(redis, "b")
    assert b.beat(time.time(), NodeReport(pages=0)) == frozenset()
    assert set(owners(redis)) == {b"a"}


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


# --- work moved to free capacity, and drained nodes ----------------------------------


def make_ready(redis: redis_py.Redis, shards: dict[int, int]) -> None:
    """Put *count* hosts in each shard's ready set, as the push script would."""
    keys = CrawlKeys("nodes")
    for shard, count in shards.items():
        hosts = {f"h{shard}-{i}.example": i for i in range(count)}
        redis.zadd(keys.shard(shard).ready, hosts)


def loan_holders(redis: redis_py.Redis) -> dict[int, str]:
    keys = CrawlKeys("nodes")
    return {shard: loan.node for shard, loan in read_loans(redis, keys, SHARDS).items()}


PULLING = "least-load"  # the tests of work moved to free capacity
SATURATED = NodeReport(concurrency=16, in_flight=16)  # every slot busy
IDLE = NodeReport(concurrency=16, in_flight=0)


def homes_of(node: str, a: NodeReport = SATURATED, b: NodeReport = IDLE) -> list[int]:
    """The shards whose home is *node* among nodes a and b, neither measured yet:
    weighed by their concurrency."""
    weights = {"a": float(a.concurrency), "b": float(b.concurrency)}
    home = homes(weights, SHARDS, PULLING)
    return sorted(s for s, owner in home.items() if owner == node)


def test_an_idle_node_takes_shards_with_waiting_hosts_from_a_saturated_one(redis):
    a, b = member(redis, "a", PULLING), member(redis, "b", PULLING)
    a.beat(time.time(), SATURATED)  # alone: every shard
    busy = dict(zip(homes_of("a")[:4], (6, 5, 4, 3), strict=True))
    make_ready(redis, busy)
    a.beat(time.time(), SATURATED)  # its entry now says: 18 hosts ready, 0 free
    joined = b.beat(time.time(), IDLE)  # the first heartbeat takes its share
    assert joined == frozenset(homes_of("b"))
    taken = b.beat(time.time(), IDLE) - joined
    assert taken
    assert taken <= set(busy)
    assert sum(busy[s] for s in taken) <= 16  # about its free slots
    assert all(owners(redis)[s] == b"b" for s in taken)  # at once: a cannot pop them
    assert loan_holders(redis) == dict.fromkeys(taken, "b")
    assert b.moves["pulled"] == len(taken)
    # a lets them go at its next heartbeat, and counts them given.
    a.beat(time.time(), SATURATED)
    assert not a.owned & taken
    assert a.moves["given"] == len(taken)


def test_keys_of_the_wrong_type_do_not_fail_a_heartbeat(redis):
    """Damage met between two repairs does not fail the heartbeat: a ready set
    that is not one counts as no hosts ready (the shard's own scripts repair it),
    a loan key that is not a string as no loan."""
    make_ready(redis, {0: 3, 1: 2})
    ready = CrawlKeys("nodes").shard(1).ready
    redis.delete(ready)
    redis.set(ready, b"not a sorted set")
    redis.rpush(CrawlKeys("nodes").shard(2).loan, b"not a loan")
    assert ready_by_shard(redis, CrawlKeys("nodes"), [0, 1], time.time()) == {
        0: 3,
        1: 0,
    }
    assert read_loans(redis, CrawlKeys("nodes"), SHARDS) == {}
    alone = member(redis, "a")
    assert alone.beat(time.time(), NodeReport(pages=0)) == frozenset(range(SHARDS))


def test_a_moved_shard_stays_put_for_the_hold(redis):
    a, b = member(redis, "a", PULLING), member(redis, "b", PULLING)
    a.beat(time.time(), SATURATED)
    make_ready(redis, dict(zip(homes_of("a")[:2], (6, 5), strict=True)))
    a.beat(time.time(), SATURATED)
    joined = b.beat(time.time(), IDLE)
    taken = b.beat(time.time(), IDLE) - joined
    assert taken
    # Now b is the saturated one and a idles: a may not take them back yet.
    b.beat(time.time(), SATURATED)
    a.beat(time.time(), IDLE)
    assert not a.beat(time.time(), IDLE) & taken
    assert all(owners(redis)[s] == b"b" for s in taken)


def test_no_shard_moves_while_no_node_is_saturated(redis):
    a, b = member(redis, "a", PULLING), member(redis, "b", PULLING)
    a.beat(time.time(), IDLE)
    make_ready(
        redis, dict.fromkeys(homes_of("a", a=IDLE)[:2], 2)
    )  # fewer than a's slots
    a.beat(time.time(), IDLE)
    b.beat(time.time(), IDLE)
    b.beat(time.time(), IDLE)
    assert loan_holders(redis) == {}
    assert b.moves["pulled"] == 0


def test_a_drained_node_hands_its_shards_over_at_once_and_takes_none(redis):
    a, b = member(redis, "a"), member(redis, "b")
    for node in (a, b, a, b):
        node.beat(time.time(), IDLE)
    held_by_b = b.owned
    assert held_by_b
    store = FrontierStore.on(redis, a.config)
    assert hand_over(store.shards, "b") == len(held_by_b)
    assert set(owners(redis)) == {b"a"}  # before either heartbeat
    assert b.beat(time.time(), NodeReport(draining=True)) == frozenset()
    assert a.beat(time.time(), IDLE) == frozenset(range(SHARDS))
    entry = json.loads(redis.hget(CrawlKeys("nodes").nodes, "b"))
    assert (entry["state"], entry["weight"]) == ("draining", 0.0)
    # The drained node stays out while it is still alive.
    assert a.beat(time.time(), IDLE) == frozenset(range(SHARDS))


def test_the_entry_publishes_capacity_weight_and_load(redis):
    a = member(redis, "a")
    start = time.time()
    make_ready(redis, {0: 10})
    a.beat(start, NodeReport(pages=0, concurrency=4, in_flight=4))
    a.beat(start + 5.0, NodeReport(pages=100, concurrency=4, in_flight=4))
    entry = json.loads(redis.hget(CrawlKeys("nodes").nodes, "a"))
    assert entry["capacity"] == pytest.approx(20.0)  # saturated: 100 pages in 5 s
    assert (entry["weight"], entry["weight_from"]) == (pytest.approx(20.0), "measured")
    assert entry["ready_hosts"] == 10
    assert entry["load"] == pytest.approx((4 + 10) / 4)
    assert entry["state"] == "saturated"
    assert (entry["concurrency"], entry["in_flight"]) == (4, 4)
    assert entry["dispatch"] == FRONTIER_DISPATCH
    weighted = member(redis, "w")
    weighted.beat(start, NodeReport(weight_setting=3.0))
    entry = json.loads(redis.hget(CrawlKeys("nodes").nodes, "w"))
    assert (entry["weight"], entry["weight_from"]) == (3.0, "setting")
