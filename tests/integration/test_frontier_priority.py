"""Request.priority in the frontier's order, through the real store and scripts on a
real Redis (explicit times): within a level in ``bfs``, across levels in
``priority``, and kept by leases, holds, failures, repair and depth repair."""

from __future__ import annotations

import argparse
import io
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest
from scrapy.settings import Settings

from crawler.commands.retry import retry
from crawler.frontier.store.store import Ack, Pending, PopOrder, SchemaMismatchError
from crawler.policy.order import level_of
from tests.integration.test_frontier_scripts import NODE, T0, drain, make_store

if TYPE_CHECKING:
    import redis as redis_py

    from crawler.frontier.store.store import FrontierStore

pytestmark = pytest.mark.integration

POP = PopOrder(0, NODE, 0.0)
PRIORITY = {"FRONTIER_ORDER": "priority"}


def request(
    host: str, depth: int, name: str, priority: int, dedup: str = "", **fields: Any
) -> Pending:
    entry = f'{{"v":1,"u":"{name}"}}'
    return Pending(0, host, level_of(depth), dedup, entry, priority=priority, **fields)


def push(store: FrontierStore, *requests: Pending) -> None:
    """Push each request in its own round trip: the order they were queued in."""
    for pending in requests:
        store.flush([pending], [], T0)


@pytest.mark.parametrize("order", [{}, PRIORITY])
def test_higher_priority_first_and_fifo_among_equals_within_a_host(redis, order):
    store = make_store(redis, **order)
    priorities = [("p0a", 0), ("p5a", 5), ("m3", -3), ("p5b", 5), ("p0b", 0)]
    push(store, *(request("a", 1, name, p) for name, p in [*priorities, ("p10", 10)]))
    assert drain(store, T0) == ["p10", "p5a", "p5b", "p0a", "p0b", "m3"]


def test_bfs_order_never_lets_priority_jump_a_level(redis):
    store = make_store(redis)
    push(
        store,
        request("a", 2, "a2-high", 100),
        request("a", 1, "a1-low", -100),
        request("b", 1, "b1-mid", 3),
        request("a", 0, "a0-low", -500),
    )
    assert drain(store, T0) == ["a0-low", "b1-mid", "a1-low", "a2-high"]


def test_priority_order_puts_priority_first_then_depth_then_fifo(redis):
    store = make_store(redis, **PRIORITY)
    push(
        store,
        request("a", 0, "a0-low", -1),
        request("a", 3, "a3-high", 50),
        request("b", 2, "b2-mid", 1),
        request("b", 0, "b0-mid", 1),
        request("a", 1, "a1-mid", 1),
        request("a", 0, "a0-mid", 1),
    )
    assert drain(store, T0) == [
        "a3-high",
        "b0-mid",
        "a0-mid",
        "a1-mid",
        "b2-mid",
        "a0-low",
    ]


@pytest.mark.parametrize("order", [{}, PRIORITY])
def test_across_hosts_the_best_head_goes_first(redis, order):
    store = make_store(redis, **order)
    push(
        store,
        request("a", 0, "a-first", 0),
        request("b", 0, "b-later", 7),
        request("c", 0, "c-last", 0),
    )
    assert drain(store, T0) == ["b-later", "a-first", "c-last"]


@pytest.mark.parametrize("order", [{}, PRIORITY])
def test_hostile_priorities_still_order(redis, order):
    store = make_store(redis, **order)
    push(
        store,
        request("a", 0, "bound", 511),
        request("a", 0, "huge", 10**30),
        request("a", 0, "zero", 0),
        request("a", 0, "tiny", -(10**30)),
        request("a", 0, "bottom", -512),
        request("a", 0, "above-bottom", -511),
    )
    # Beyond -512..511 a priority is clamped: it ties with the bound, FIFO.
    assert drain(store, T0) == [
        "bound",
        "huge",
        "zero",
        "above-bottom",
        "tiny",
        "bottom",
    ]


@pytest.mark.parametrize("order", [{}, PRIORITY])
def test_an_expired_lease_goes_back_before_lower_priorities(redis, order):
    store = make_store(redis, FRONTIER_LEASE_TIMEOUT=30, **order)
    push(store, request("a", 0, "high", 9), request("a", 0, "high2", 9))
    push(store, request("a", 0, "low", 0))
    store.pop(POP, T0)  # "high" leased, never acked
    assert store.requeue(T0 + 31) == 1
    assert drain(store, T0 + 31) == ["high", "high2", "low"]
    assert store.shards.totals() == (0, 0)


@pytest.mark.parametrize("order", [{}, PRIORITY])
def test_a_held_request_keeps_its_priority_when_released(redis, order):
    store = make_store(redis, **order)
    push(store, replace(request("a", 1, "held-high", 20), hold_until=T0 + 30))
    push(store, request("a", 1, "low", 0), request("a", 1, "lower", -1))
    push(store, request("b", 0, "b0", 0))
    assert drain(store, T0) == ["b0", "low", "lower"]
    push(store, request("a", 1, "low-again", 0))
    assert drain(store, T0 + 30) == ["held-high", "low-again"]


@pytest.mark.parametrize("order", [{}, PRIORITY])
def test_a_retried_failure_keeps_its_priority(redis, order):
    store = make_store(redis, **order)
    push(store, request("a", 0, "failing", 30))
    lease, _ = store.pop(POP, T0)
    store.flush([], [Ack(lease, 0.0, "http_error", "f" * 32)], T0)
    push(store, request("a", 0, "plain", 0))
    assert store.shards.retry_failed(store.shards.failed(), T0) == 1
    assert drain(store, T0) == ["failing", "plain"]


def test_the_barrier_counts_levels_whatever_the_priorities(redis):
    store = make_store(redis)
    push(store, request("a", 1, "a1-high", 400), request("b", 0, "b0-low", -400))
    assert store.shards.summaries.lowest_level() == level_of(0)
    barrier = PopOrder(0, NODE, 0.0, deepest_level=level_of(0))
    lease, entry = store.pop(barrier, T0)
    assert b"b0-low" in entry
    assert store.pop(barrier, T0) is None  # depth 1 waits for depth 0
    store.flush([], [(lease, 0.0)], T0)
    assert store.shards.summaries.lowest_level() == level_of(1)


def test_priority_order_counts_levels_while_deep_requests_go_first(redis):
    store = make_store(redis, **PRIORITY)
    push(store, request("a", 0, "a0", 0), request("b", 2, "b2", 5))
    assert store.shards.summaries.lowest_level() == level_of(0)
    lease, entry = store.pop(POP, T0)
    assert b"b2" in entry
    store.flush([], [(lease, 0.0)], T0)
    assert store.shards.summaries.lowest_level() == level_of(0)
    assert drain(store, T0) == ["a0"]
    assert store.shards.summaries.lowest_level() is None


@pytest.mark.parametrize("order", [{}, PRIORITY])
def test_repair_recounts_levels_from_prioritised_queues(redis, order):
    store = make_store(redis, **order)
    push(store, request("a", 0, "a0", 7), request("a", 0, "a0b", -7))
    push(store, request("a", 1, "a1", 99), request("b", 1, "b1", 0))
    keys = store.shards.keys[0]
    redis.delete(keys.outstanding, keys.ready)  # stranded hosts, counts lost
    assert store.rescue(T0) == 2
    counts = {int(k): int(v) for k, v in redis.hgetall(keys.outstanding).items()}
    assert counts == {level_of(0): 2, level_of(1): 2}
    expected = ["a0", "a0b", "a1", "b1"] if not order else ["a1", "a0", "b1", "a0b"]
    assert drain(store, T0) == expected


@pytest.mark.parametrize("order", [{}, PRIORITY])
def test_depth_repair_drops_the_deeper_copy_whatever_its_priority(redis, order):
    store = make_store(redis, FRONTIER_DEDUP="exact", **order)
    seed = request("s", 0, "seed", 0)
    deep = request("x", 3, "x-deep", 90, dedup="fp-x", depth_key="k-x")
    push(store, seed, deep)
    found = store.flush([replace(deep, level=level_of(1), priority=0)], [], T0)
    assert found.shortened == 1
    assert drain(store, T0) == ["seed", "x-deep"]  # the depth 1 copy: same entry
    assert store.shards.totals() == (0, 0)
    assert store.shards.summaries.lowest_level() is None


def test_a_crawl_queued_in_one_order_refuses_the_other(redis):
    make_store(redis)
    with pytest.raises(SchemaMismatchError, match="FRONTIER_ORDER=bfs, not priority"):
        make_store(redis, **PRIORITY)
    make_store(redis)  # the same order resumes


def test_a_crawl_of_the_previous_schema_is_refused(redis: redis_py.Redis):
    store = make_store(redis)
    redis.hset(
        store.shards.crawl_keys.meta, "schema_version", "3"
    )  # levels, not classes
    with pytest.raises(SchemaMismatchError, match="schema version b'3'"):
        make_store(redis)


def test_the_retry_command_queues_as_the_crawl_ranks(redis):
    """``scrapy frontier retry`` run with the other order's settings still writes
    the crawl's ranks (a retried shallow low-priority request stays behind a deep
    urgent one in a ``priority`` crawl)."""
    store = make_store(redis, **PRIORITY)
    push(store, request("a", 0, "failing", -5))
    lease, _ = store.pop(POP, T0)
    store.flush([], [Ack(lease, 0.0, "http_error", "e" * 32)], T0)
    push(store, request("a", 2, "deep-urgent", 50))
    settings = Settings()
    settings.setmodule("crawler.defaults")
    settings.setmodule("crawler.settings")
    settings.set("FRONTIER_SHARDS", 1)  # FRONTIER_ORDER: the default, bfs
    opts = argparse.Namespace(
        failed=True, host=None, settings=settings, redis_shown="the test Redis"
    )
    assert retry(redis, store.shards.crawl_keys, opts, io.StringIO()) == 0
    assert drain(store, T0) == ["deep-urgent", "failing"]
