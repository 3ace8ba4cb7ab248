"""The frontier's Lua scripts on a real Redis, with explicit times."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from scrapy.settings import Settings

from crawler.frontier.config import FrontierConfig
from crawler.frontier.dedup import bloom_hashes
from crawler.frontier.store import FrontierStore, Lease, Pending, PopOrder
from crawler.policy.order import level_of

if TYPE_CHECKING:
    import redis as redis_py

pytestmark = pytest.mark.integration

T0 = 1_000_000.0  # an arbitrary "now", in seconds
NODE = "test-node"


def make_store(redis: redis_py.Redis, **overrides: Any) -> FrontierStore:
    settings = Settings()
    settings.setmodule("crawler.settings")
    settings.update({"FRONTIER_SHARDS": 1, **overrides})
    store = FrontierStore(redis, FrontierConfig.from_settings(settings, "test"))
    store.prepare(T0)
    for keys in store.keys:  # this test's node owns every shard
        redis.set(keys.owner, NODE)
    return store


def pending(host: str, depth: int, name: str, dedup: str | bytes = "") -> Pending:
    return Pending(0, host, level_of(depth), dedup, f'{{"v":1,"u":"{name}"}}')


def drain(store: FrontierStore, now: float) -> list[str]:
    """Pop and ack every ready request, in order (bounded)."""
    names = []
    for _ in range(1000):
        popped = store.pop(PopOrder(0, NODE, 0.0), now)
        if popped is None:
            break
        lease, entry = popped
        names.append(entry.decode().split('"u":"')[1].rstrip('"}'))
        store.flush([], [(lease, 0.0)], now)
    return names


def test_requests_of_one_depth_come_out_in_the_order_they_went_in(redis):
    store = make_store(redis)
    names = [f"r{i:03d}" for i in range(200)]  # all share one level
    store.flush([pending(f"h{i % 7}", 1, n) for i, n in enumerate(names)], [], T0)
    assert drain(store, T0) == names


def test_a_shallower_request_of_any_ready_host_goes_first(redis):
    store = make_store(redis)
    batch = [pending("a", 2, "a2"), pending("b", 3, "b3"), pending("c", 1, "c1")]
    batch += [pending("a", 1, "a1"), pending("b", 0, "b0")]
    store.flush(batch, [], T0)
    assert drain(store, T0) == ["b0", "c1", "a1", "a2", "b3"]


def test_a_host_is_busy_until_its_lease_is_acked(redis):
    store = make_store(redis)
    store.flush([pending("a", 0, "a0"), pending("a", 0, "a1")], [], T0)
    first = store.pop(PopOrder(0, NODE, 0.0), T0)
    assert first is not None
    assert store.pop(PopOrder(0, NODE, 0.0), T0) is None  # host concurrency 1
    store.flush([], [(first[0], 0.0)], T0)
    assert store.pop(PopOrder(0, NODE, 0.0), T0) is not None


def test_a_host_waits_its_delay_after_the_ack_and_others_do_not(redis):
    store = make_store(redis)
    store.flush([pending("a", 0, "a0"), pending("a", 0, "a1")], [], T0)
    store.flush([pending("b", 1, "b1")], [], T0)
    lease, _ = store.pop(PopOrder(0, NODE, 0.0), T0)  # a0
    store.flush([], [(lease, 10.0)], T0)  # host a must wait 10 s
    assert drain(store, T0 + 1) == ["b1"]  # the deeper host b is not blocked
    assert store.summaries[0].wake == pytest.approx(T0 + 10)
    assert drain(store, T0 + 9.9) == []
    assert drain(store, T0 + 10) == ["a1"]


def test_an_expired_lease_goes_back_to_the_head_of_its_queue(redis):
    store = make_store(redis, FRONTIER_LEASE_TIMEOUT=30)
    store.flush([pending("a", 0, "a0"), pending("a", 0, "a1")], [], T0)
    store.pop(PopOrder(0, NODE, 0.0), T0)  # a0 leased, never acked
    assert store.requeue(T0 + 29) == 0
    assert store.requeue(T0 + 31) == 1
    assert drain(store, T0 + 31) == ["a0", "a1"]
    assert store.totals() == (0, 0)


def test_acking_an_expired_and_requeued_lease_changes_nothing(redis):
    store = make_store(redis, FRONTIER_LEASE_TIMEOUT=30)
    store.flush([pending("a", 0, "a0")], [], T0)
    lease, _ = store.pop(PopOrder(0, NODE, 0.0), T0)
    store.requeue(T0 + 31)
    held = store.flush([], [(lease, 0.0)], T0 + 32).acked
    assert held == 0
    assert store.totals() == (1, 0)
    assert drain(store, T0 + 32) == ["a0"]


def test_renewed_leases_do_not_expire(redis):
    store = make_store(redis, FRONTIER_LEASE_TIMEOUT=30)
    store.flush([pending("a", 0, "a0")], [], T0)
    lease, _ = store.pop(PopOrder(0, NODE, 0.0), T0)
    store.renew([lease], T0 + 20)
    assert store.requeue(T0 + 40) == 0
    assert store.requeue(T0 + 51) == 1


def test_releasing_named_leases_requeues_only_those(redis):
    store = make_store(redis)
    store.flush([pending("a", 0, "a0"), pending("b", 0, "b0")], [], T0)
    lease_a, _ = store.pop(PopOrder(0, NODE, 0.0), T0)
    store.pop(PopOrder(0, NODE, 0.0), T0)
    assert store.requeue(T0, [lease_a]) == 1
    assert store.totals() == (1, 1)


@pytest.mark.parametrize("mode", ["bloom", "exact"])
def test_a_fingerprint_is_accepted_once(redis, mode):
    store = make_store(redis, FRONTIER_DEDUP=mode, FRONTIER_DEDUP_CAPACITY=1000)
    fingerprint = bloom_hashes(b"fp-1", 80) if mode == "bloom" else b"fp-1"
    new = store.flush([pending("a", 0, "x", fingerprint)], [], T0).new
    again = store.flush(
        [pending("b", 0, "y", fingerprint), pending("b", 0, "z", "")], [], T0
    ).new
    assert new == [True]
    assert again == [False, True]  # the empty dedup value is dont_filter
    assert store.totals() == (2, 0)


def test_a_full_bloom_filter_grows_and_keeps_what_it_saw(redis):
    store = make_store(redis, FRONTIER_DEDUP_CAPACITY=20)
    batch = [
        pending("a", 1, f"u{i}", bloom_hashes(str(i).encode(), 80)) for i in range(200)
    ]
    new = store.flush(batch, [], T0).new
    assert sum(new) >= 199  # at most a false positive or so at this error rate
    filters = int(redis.hget(store.keys[0].seen, "filters"))
    assert filters >= 3  # 38, 76, 152 URLs (20 plus headroom, doubling)
    again = store.flush(batch, [], T0).new
    assert not any(again)


def test_scripts_survive_a_script_flush(redis):
    store = make_store(redis)
    store.flush([pending("a", 0, "a0")], [], T0)
    redis.script_flush()
    assert drain(store, T0) == ["a0"]


def test_an_unknown_lease_is_not_held(redis):
    store = make_store(redis)
    held = store.flush([], [(Lease(0, "999"), 0.0)], T0).acked
    assert held == 0


def test_one_round_trip_pushes_acks_then_pops(redis):
    store = make_store(redis)
    store.flush([pending("a", 0, "a0")], [], T0)
    lease, _ = store.pop(PopOrder(0, NODE, 0.0), T0)
    # a0's link a1 and a0's ack go with the next pop, which must see host a free.
    flushed = store.flush(
        [pending("a", 1, "a1")], [(lease, 0.0)], T0, PopOrder(0, NODE, 0.0)
    )
    assert flushed.new == [True]
    assert flushed.acked == 1
    assert flushed.popped is not None
    assert b'"u":"a1"' in flushed.popped[1]


def test_the_barrier_holds_back_deeper_requests(redis):
    store = make_store(redis)
    store.flush([pending("a", 0, "a0"), pending("b", 1, "b1")], [], T0)
    lease, _ = store.pop(PopOrder(0, NODE, 0.0, deepest_level=level_of(0)), T0)
    assert store.pop(PopOrder(0, NODE, 0.0, deepest_level=level_of(0)), T0) is None
    assert store.summaries[0].lowest_level == level_of(0)  # a0 is still leased
    store.flush([], [(lease, 0.0)], T0)
    assert store.summaries[0].lowest_level == level_of(1)
    assert store.pop(PopOrder(0, NODE, 0.0, deepest_level=level_of(1)), T0) is not None


def test_a_node_that_does_not_own_the_shard_cannot_pop_from_it(redis):
    store = make_store(redis)
    store.flush([pending("a", 0, "a0")], [], T0)
    redis.set(store.keys[0].owner, "another-node")
    refused = store.flush([], [], T0, PopOrder(0, NODE, 0.0))
    assert refused.fenced
    assert refused.popped is None
    assert drain(store, T0) == []  # still queued, for its owner
    redis.set(store.keys[0].owner, NODE)
    assert drain(store, T0) == ["a0"]
