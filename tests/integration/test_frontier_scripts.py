"""The frontier's Lua scripts on a real Redis, with explicit times."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from scrapy.settings import Settings

from crawler.frontier.dedup import BLOCK_BITS, bloom_hashes, layout_fields
from crawler.frontier.frontierconfig import FrontierConfig
from crawler.frontier.store.store import FrontierStore, Lease, Pending, PopOrder
from crawler.policy.order import level_of, queue_class

if TYPE_CHECKING:
    import redis as redis_py

pytestmark = pytest.mark.integration

T0 = 1_000_000.0  # an arbitrary "now", in seconds
NODE = "test-node"


def make_store(redis: redis_py.Redis, **overrides: Any) -> FrontierStore:
    settings = Settings()
    settings.setmodule("crawler.defaults")
    settings.update({"FRONTIER_SHARDS": 1, **overrides})
    store = FrontierStore.on(redis, FrontierConfig.from_settings(settings, "test"))
    store.prepare(T0)
    for keys in store.shards.keys:  # this test's node owns every shard
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
    assert store.shards.summaries[0].wake == pytest.approx(T0 + 10)
    assert drain(store, T0 + 9.9) == []
    assert drain(store, T0 + 10) == ["a1"]


def sweep(store: FrontierStore, now: float) -> int:
    """Sweep the shard's politeness fields (a few hashes' worth); hosts forgotten."""
    return sum(store.forget_idle([0], now) for _ in range(3))


def test_a_host_done_for_now_is_forgotten_once_its_delay_has_passed(redis):
    store = make_store(redis)
    keys = store.shards.keys[0]
    store.flush([pending("done", 0, "d0"), pending("more", 0, "m0")], [], T0)
    store.flush([pending("more", 0, "m1"), pending("busy", 0, "b0")], [], T0)
    leased = {}
    for _ in range(3):  # d0, m0 and b0, one a host
        lease, entry = store.pop(PopOrder(0, NODE, 0.0), T0)
        leased[entry.decode().split('"u":"')[1][0]] = lease
    store.flush([], [(leased["d"], 10.0), (leased["m"], 10.0)], T0)  # b0 in flight
    hosts = {b"done", b"more", b"busy"}
    assert set(redis.hkeys(keys.ready_at)) == hosts
    assert sweep(store, T0 + 9) == 0  # "done" must still wait out its delay
    assert sweep(store, T0 + 11) == 1
    assert set(redis.hkeys(keys.ready_at)) == {b"more", b"busy"}
    assert set(redis.hkeys(keys.delays)) == {b"more"}  # "busy" was never acked
    assert drain(store, T0 + 11) == ["m1"]  # what is queued goes on as before
    store.flush([], [(leased["b"], 10.0)], T0 + 11)
    assert sweep(store, T0 + 22) == 2
    assert redis.hlen(keys.ready_at) == redis.hlen(keys.delays) == 0
    # A host forgotten and found again is fetched at once, then waits again.
    store.flush([pending("done", 1, "d1"), pending("done", 1, "d2")], [], T0 + 22)
    lease, _ = store.pop(PopOrder(0, NODE, 0.0), T0 + 22)  # d1, no wait
    store.flush([], [(lease, 10.0)], T0 + 22)
    assert sweep(store, T0 + 23) == 0  # d2 queued: the host is not done
    assert drain(store, T0 + 31) == []
    assert drain(store, T0 + 32) == ["d2"]


def test_the_sweep_goes_on_where_it_stopped_over_a_large_shard(redis):
    store = make_store(redis)
    keys = store.shards.keys[0]
    redis.hset(keys.ready_at, mapping={f"h{i}": T0 * 1000 for i in range(1500)})
    calls = [store.forget_idle([0], T0 + 1) for _ in range(30)]
    assert sum(calls) == 1500
    assert max(calls) < 1500  # in steps, each a bounded HSCAN
    assert redis.hlen(keys.ready_at) == 0


def test_an_expired_lease_goes_back_to_the_head_of_its_queue(redis):
    store = make_store(redis, FRONTIER_LEASE_TIMEOUT=30)
    store.flush([pending("a", 0, "a0"), pending("a", 0, "a1")], [], T0)
    store.pop(PopOrder(0, NODE, 0.0), T0)  # a0 leased, never acked
    assert store.requeue(T0 + 29) == 0
    assert store.requeue(T0 + 31) == 1
    assert drain(store, T0 + 31) == ["a0", "a1"]
    assert store.shards.totals() == (0, 0)


def test_acking_an_expired_and_requeued_lease_changes_nothing(redis):
    store = make_store(redis, FRONTIER_LEASE_TIMEOUT=30)
    store.flush([pending("a", 0, "a0")], [], T0)
    lease, _ = store.pop(PopOrder(0, NODE, 0.0), T0)
    store.requeue(T0 + 31)
    held = store.flush([], [(lease, 0.0)], T0 + 32).acked
    assert held == 0
    assert store.shards.totals() == (1, 0)
    assert drain(store, T0 + 32) == ["a0"]


def test_renewed_leases_do_not_expire(redis):
    store = make_store(redis, FRONTIER_LEASE_TIMEOUT=30)
    store.flush([pending("a", 0, "a0")], [], T0)
    lease, _ = store.pop(PopOrder(0, NODE, 0.0), T0)
    store.shards.renew([lease], T0 + 20)
    assert store.requeue(T0 + 40) == 0
    assert store.requeue(T0 + 51) == 1


def test_releasing_named_leases_requeues_only_those(redis):
    store = make_store(redis)
    store.flush([pending("a", 0, "a0"), pending("b", 0, "b0")], [], T0)
    lease_a, _ = store.pop(PopOrder(0, NODE, 0.0), T0)
    store.pop(PopOrder(0, NODE, 0.0), T0)
    assert store.requeue(T0, [lease_a]) == 1
    assert store.shards.totals() == (1, 1)


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
    assert store.shards.totals() == (2, 0)


def test_a_full_bloom_filter_grows_and_keeps_what_it_saw(redis):
    store = make_store(redis, FRONTIER_DEDUP_CAPACITY=20)
    batch = [
        pending("a", 1, f"u{i}", bloom_hashes(str(i).encode(), 80)) for i in range(200)
    ]
    new = store.flush(batch, [], T0).new
    assert sum(new) >= 199  # at most a false positive or so at this error rate
    filters = int(redis.hget(store.shards.keys[0].seen, "filters"))
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
    assert store.shards.summaries[0].lowest_level == level_of(0)  # a0 is still leased
    store.flush([], [(lease, 0.0)], T0)
    assert store.shards.summaries[0].lowest_level == level_of(1)
    assert store.pop(PopOrder(0, NODE, 0.0, deepest_level=level_of(1)), T0) is not None


def test_a_node_that_does_not_own_the_shard_cannot_pop_from_it(redis):
    store = make_store(redis)
    store.flush([pending("a", 0, "a0")], [], T0)
    redis.set(store.shards.keys[0].owner, "another-node")
    refused = store.flush([], [], T0, PopOrder(0, NODE, 0.0))
    assert refused.fenced
    assert refused.popped is None
    assert drain(store, T0) == []  # still queued, for its owner
    redis.set(store.shards.keys[0].owner, NODE)
    assert drain(store, T0) == ["a0"]


# --- damaged state: values the crawler did not write --------------------------------


def queue_key(store: FrontierStore, host: str, depth: int) -> str:
    return store.shards.keys[0].queue(host, queue_class(level_of(depth)))


def test_an_entry_without_a_sequence_prefix_is_set_aside(redis):
    store = make_store(redis)
    store.flush([pending("a", 0, f"a{i}") for i in range(3)], [], T0)
    store.flush([pending("b", 0, "b0")], [], T0)
    redis.lpush(queue_key(store, "a", 0), b"\x80\x03cos\nsystem\n")  # a pickle, head
    redis.lset(queue_key(store, "a", 0), 2, b"no prefix at all")  # a1 replaced
    assert drain(store, T0) == ["a0", "a2", "b0"]  # a2 went in before b0
    assert store.shards.bad_entries == 2
    assert redis.hget(store.shards.keys[0].counters, "bad_entries") == b"2"
    assert store.shards.totals() == (0, 0)
    assert (
        store.shards.summaries.lowest_level() is None
    )  # the barrier does not wait for them


def test_a_ready_host_without_a_queue_is_dropped_and_others_go(redis):
    store = make_store(redis)
    store.flush([pending("a", 0, "a0")], [], T0)
    redis.zadd(store.shards.keys[0].ready, {"ghost": 0, "pickled\x80": 1})
    assert drain(store, T0) == ["a0"]
    assert redis.zcard(store.shards.keys[0].ready) == 0
    assert store.shards.bad_entries == 2


def test_a_stranded_host_is_scheduled_again(redis):
    store = make_store(redis)
    store.flush([pending("a", 0, "a0"), pending("a", 0, "a1")], [], T0)
    store.flush([pending("b", 1, "b1")], [], T0)
    redis.zrem(
        store.shards.keys[0].ready, "a"
    )  # host a: queued, neither ready nor waiting
    assert drain(store, T0) == ["b1"]
    store.requeue(T0)  # refreshes the summary: level 0 outstanding, nothing ready
    assert store.repair_stuck({0}, T0) == 1
    assert drain(store, T0) == ["a0", "a1"]
    assert store.repair_stuck({0}, T0 + 100) == 0  # nothing stuck any more


def test_a_shard_found_damaged_is_scanned_for_stranded_hosts_at_once(redis):
    """A shard scanned a moment ago is not scanned again for 30 s, unless damage is
    found in it since: the end of a crawl is decided after that scan, and the
    damage may have stranded a host (a crawl ended with a page unfetched)."""
    store = make_store(redis)
    store.flush([pending("a", 0, "a0")], [], T0)
    assert store.rescue(T0) == 0  # every shard scanned now
    ready = store.shards.keys[0].ready
    redis.delete(ready)
    redis.set(ready, b"\x80garbage")  # host a stranded, by damage in its shard
    store.shards.totals()  # the read meets the damage; the shard is repaired
    assert store.shards.bad_entries >= 1
    assert store.rescue(T0 + 1) == 1
    assert drain(store, T0 + 1) == ["a0"]


def test_a_damaged_shard_s_counts_wait_for_a_scan_without_leases(redis):
    """An entry this crawler did not write, popped or set aside, was never counted:
    its shard's queued count may be short, so the end of the crawl waits until a
    scan has set the count from the queues, which it cannot while a lease is held
    there (the scan is then due again a second later, not thirty)."""
    store = make_store(redis)
    store.flush([pending("a", 0, "a0"), pending("b", 0, "b0")], [], T0)
    redis.hset(store.shards.keys[0].counters, "queued", 0)  # short by two
    assert store.counts_trusted
    popped = store.pop(PopOrder(0, NODE, 0.0), T0)
    assert popped is not None
    store.suspect(0)  # as the exchange does when an entry is not a request
    assert not store.counts_trusted
    store.rescue(T0)  # a lease is held: counts not set
    assert not store.counts_trusted
    store.rescue(T0 + 0.5)  # not due yet: no scan
    assert not store.counts_trusted
    store.flush([], [(popped[0], 0.0)], T0 + 0.5)
    store.rescue(T0 + 1.0)
    assert store.counts_trusted
    assert store.shards.totals() == (1, 0)  # b0 is counted again


def test_stale_counts_left_without_entries_are_set_from_the_queues(redis):
    store = make_store(redis)
    store.flush([pending("a", 1, "a1")], [], T0)
    redis.hincrby(
        store.shards.keys[0].outstanding, str(level_of(0)), 5
    )  # no such requests
    redis.hincrby(store.shards.keys[0].counters, "queued", 5)
    store.promote([0], T0)
    assert store.shards.summaries.lowest_level() == level_of(0)
    assert store.repair_stuck({0}, T0) == 0  # host a is ready: nothing to schedule
    assert store.shards.summaries.lowest_level() == level_of(1)
    assert store.shards.totals() == (1, 0)
    assert drain(store, T0) == ["a1"]


@pytest.mark.parametrize(
    "key",
    ["ready", "waiting", "ready_at", "inflight", "leases", "leased", "sequence",
     "counters", "seen", "delays", "outstanding", "owner", "held", "failed",
     "superseded", "reparse"],
)  # fmt: skip
def test_a_fixed_key_of_the_wrong_type_is_repaired_and_nothing_is_lost(redis, key):
    """A request caught in a call that failed half-way comes back when its lease
    expires; a host the damage stranded is scheduled again when the shard is stuck."""
    store = make_store(redis, FRONTIER_LEASE_TIMEOUT=30)
    store.flush([pending("a", 0, "a0"), pending("b", 0, "b0")], [], T0)
    name = getattr(store.shards.keys[0], key)
    redis.delete(name)
    redis.rpush(name, b"\x80\x04garbage")  # a list: no fixed key is one
    store.flush([pending("c", 0, "c0", bloom_hashes(b"c0", 80))], [], T0)
    names = drain(store, T0)
    redis.set(
        store.shards.keys[0].owner, NODE
    )  # the owner key was deleted: claimed again
    store.requeue(T0 + 31)
    store.rescue(T0 + 31)  # as a node does before it calls the crawl drained
    names += drain(store, T0 + 31)
    assert sorted(names) == ["a0", "b0", "c0"]
    assert store.shards.bad_entries >= 1
    assert redis.type(name) != b"list"
    assert store.shards.totals() == (0, 0)


def test_the_first_error_does_not_stop_the_other_shards(redis):
    store = make_store(redis, FRONTIER_SHARDS=2)
    for shard in (0, 1):
        redis.set(store.shards.keys[shard].owner, NODE)
    store.flush(
        [Pending(s, f"h{s}", 0, "", f'{{"v":1,"u":"{s}"}}') for s in (0, 1)], [], T0
    )
    redis.delete(store.shards.keys[0].waiting)
    redis.set(store.shards.keys[0].waiting, b"not a zset")
    store.promote([0, 1], T0)  # one pipeline, shard 0 fails first
    assert store.shards.summaries[0].best is not None
    assert store.shards.summaries[1].best is not None
    assert store.shards.bad_entries == 1


def test_non_numeric_counters_and_times_are_repaired(redis):
    store = make_store(redis)
    store.flush([pending("a", 0, "a0"), pending("a", 0, "a1")], [], T0)
    keys = store.shards.keys[0]
    redis.hset(keys.counters, "queued", "lots")
    redis.hset(keys.ready_at, "a", "soon")
    redis.hset(keys.delays, "a", "\x80")
    redis.hset(keys.outstanding, "zero", "1")
    redis.set(keys.sequence, "many")
    assert drain(store, T0) == ["a0", "a1"]
    assert store.shards.bad_entries >= 4
    store.flush([pending("c", 0, "c0")], [], T0)  # seq counts on
    assert drain(store, T0) == ["c0"]


def test_a_damaged_lease_is_set_aside_and_an_orphan_lease_forgotten(redis):
    store = make_store(redis)
    store.flush([pending("a", 0, "a0")], [], T0)
    keys = store.shards.keys[0]
    redis.hset(keys.leased, "77", b"cos\nsystem\n")
    redis.zadd(keys.leases, {"77": 0, "78": 0})  # 78: no payload
    assert store.requeue(T0) == 0
    assert store.shards.totals() == (1, 0)
    assert drain(store, T0) == ["a0"]


@pytest.mark.parametrize(
    ("field", "value", "at_start"),
    [
        ("bits:0", "0", False),  # a call fails on it: repaired mid-crawl
        ("hashes:0", "1000", False),
        ("filters", "99", False),
        ("cap:0", "-3", True),  # no call fails on it: repaired at start
        ("hashes:0", "x", True),
    ],
)
def test_a_bloom_layout_out_of_range_is_written_again(redis, field, value, at_start):
    store = make_store(redis, FRONTIER_DEDUP_CAPACITY=1000)
    seen = store.shards.keys[0].seen
    good = redis.hgetall(seen)
    redis.hset(seen, field, value)
    if at_start:
        store = make_store(redis, FRONTIER_DEDUP_CAPACITY=1000)
    fingerprint = bloom_hashes(b"fp-1", 80)
    assert store.flush([pending("a", 0, "a0", fingerprint)], [], T0).new == [True]
    assert store.flush([pending("a", 0, "a1", fingerprint)], [], T0).new == [False]
    assert redis.hgetall(seen) | {b"count:0": b"0"} == good | {b"count:0": b"0"}
    assert store.shards.bad_entries == 1


def plain_shard(redis, store: FrontierStore) -> None:
    """Make shard 0's seen filter as a crawl before blocked filters made it."""
    config = store.shards.config
    seen = store.shards.keys[0].seen
    redis.delete(seen)
    redis.hset(seen, mapping=layout_fields(config.dedup, 1, blocked=False))


def test_a_new_shard_gets_a_blocked_filter_and_one_made_plain_stays_plain(redis):
    """A crawl made before blocked filters keeps reading its bits as they were set:
    its URLs stay seen after a restart, even after its seen hash was lost."""
    store = make_store(redis, FRONTIER_DEDUP_CAPACITY=1000)
    seen = store.shards.keys[0].seen
    assert redis.hget(seen, "block:0") == str(BLOCK_BITS).encode()
    plain_shard(redis, store)
    batch = [pending("a", 0, f"u{i}", bloom_hashes(b"%d" % i, 80)) for i in range(50)]
    assert all(store.flush(batch, [], T0).new)

    store = make_store(redis, FRONTIER_DEDUP_CAPACITY=1000)  # a restart
    assert redis.hget(seen, "block:0") is None
    assert not any(store.flush(batch, [], T0).new)
    redis.delete(seen)  # damage: the repair writes the layout again
    redis.set(store.shards.keys[0].sequence, "x")
    assert not any(store.flush(batch, [], T0).new)
    assert redis.hget(seen, "block:0") is None


def test_a_blocked_filter_keeps_what_it_saw_after_its_layout_is_lost(redis):
    store = make_store(redis, FRONTIER_DEDUP_CAPACITY=1000)
    batch = [pending("a", 0, f"u{i}", bloom_hashes(b"%d" % i, 80)) for i in range(50)]
    assert all(store.flush(batch, [], T0).new)
    seen = store.shards.keys[0].seen
    redis.hset(seen, "block:0", "7")  # a block size the crawler never writes
    assert not any(store.flush(batch, [], T0).new)
    assert redis.hget(seen, "block:0") == str(BLOCK_BITS).encode()
    redis.delete(seen)
    store = make_store(redis, FRONTIER_DEDUP_CAPACITY=1000)
    assert not any(store.flush(batch, [], T0).new)
