"""Held (retry-later), failed and revived requests in the frontier's scripts, on a
real Redis with explicit times."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import pytest

from crawler.frontier.store.store import Ack, PopOrder
from crawler.policy.order import level_of
from tests.integration.test_frontier_scripts import NODE, T0, drain, make_store, pending

if TYPE_CHECKING:
    from crawler.frontier.store.store import FrontierStore

pytestmark = pytest.mark.integration

POP = PopOrder(0, NODE, 0.0)


def pop_name(store: FrontierStore, now: float) -> tuple[object, str] | None:
    popped = store.pop(POP, now)
    if popped is None:
        return None
    lease, entry = popped
    return lease, entry.decode().split('"u":"')[1].rstrip('"}')


def counters(redis, store: FrontierStore) -> dict[str, int]:
    raw = redis.hgetall(store.shards.keys[0].counters)
    return {k.decode(): int(v) for k, v in raw.items()}


def test_a_held_request_waits_for_its_time_then_goes_to_its_queue(redis):
    store = make_store(redis)
    store.flush([replace(pending("a", 0, "later"), hold_until=T0 + 30)], [], T0)
    store.flush([pending("b", 0, "now")], [], T0)
    assert drain(store, T0) == ["now"]
    assert drain(store, T0 + 29.9) == []
    assert store.shards.summaries[0].wake == pytest.approx(
        T0 + 30
    )  # the node wakes then
    assert drain(store, T0 + 30) == ["later"]
    assert counters(redis, store)["held"] == 0


def test_held_requests_are_work_to_do_but_never_hold_the_barrier(redis):
    store = make_store(redis)
    store.flush([replace(pending("a", 0, "held0"), hold_until=T0 + 60)], [], T0)
    store.flush([pending("b", 3, "b3")], [], T0)
    assert store.shards.totals() == (2, 0)  # the crawl is not over while one is held
    assert store.shards.summaries[0].lowest_level == level_of(3)
    deepest = PopOrder(0, NODE, 0.0, deepest_level=level_of(3))
    assert store.pop(deepest, T0) is not None  # depth 0 held: depth 3 may go


def test_a_hold_in_the_past_queues_at_once(redis):
    store = make_store(redis)
    store.flush([replace(pending("a", 0, "due"), hold_until=T0 - 1)], [], T0)
    assert drain(store, T0) == ["due"]


def test_an_ack_of_an_untouched_request_gives_the_host_its_time_back(redis):
    store = make_store(redis)
    store.flush([pending("a", 0, "a0"), pending("a", 0, "a1")], [], T0)
    lease, _ = pop_name(store, T0)
    store.flush([], [Ack(lease, 10.0, "robots_disallowed", "", untouched=True)], T0)
    assert pop_name(store, T0)[1] == "a1"  # no delay was spent on a0


def test_a_touched_ack_spends_the_delay(redis):
    """The control: the same ack without ``untouched`` makes the host wait."""
    store = make_store(redis)
    store.flush([pending("a", 0, "a0"), pending("a", 0, "a1")], [], T0)
    lease, _ = pop_name(store, T0)
    store.flush([], [Ack(lease, 10.0, "http_error", "")], T0)
    assert pop_name(store, T0) is None
    assert pop_name(store, T0 + 10)[1] == "a1"


def test_fates_are_counted_and_failures_kept_for_a_retry(redis):
    store = make_store(redis)
    store.flush([pending("a", 0, "ok"), pending("b", 0, "gone")], [], T0)
    first, _ = pop_name(store, T0)
    second, _ = pop_name(store, T0)
    store.flush(
        [], [Ack(first, 0.0, "fetched"), Ack(second, 0.0, "http_error", "ff")], T0
    )
    assert counters(redis, store)["fate:fetched"] == 1
    assert counters(redis, store)["fate:http_error"] == 1
    failed = store.shards.failed()
    assert failed == {0: [("ff", "http_error")]}
    assert store.shards.failed(host="a") == {}
    assert store.shards.retry_failed(failed, T0) == 1
    assert drain(store, T0) == ["gone"]
    assert counters(redis, store)["fate:http_error"] == 0
    assert store.shards.failed() == {}


@pytest.mark.parametrize(("revive", "queued"), [("ff", True), ("", False)])
def test_a_seed_that_failed_for_good_passes_the_seen_filter_again(
    redis, revive, queued
):
    store = make_store(redis, FRONTIER_DEDUP="exact")
    store.flush([pending("a", 0, "seed", b"fp")], [], T0)
    lease, _ = pop_name(store, T0)
    store.flush([], [Ack(lease, 0.0, "network_error", "ff")], T0)
    again = replace(pending("a", 0, "seed", b"fp"), revive=revive)
    assert store.flush([again], [], T0).new == [queued]
    assert drain(store, T0) == (["seed"] if queued else [])


def test_a_seed_that_was_fetched_is_not_revived(redis):
    store = make_store(redis, FRONTIER_DEDUP="exact")
    store.flush([pending("a", 0, "seed", b"fp")], [], T0)
    lease, _ = pop_name(store, T0)
    store.flush([], [Ack(lease, 0.0, "fetched")], T0)
    again = replace(pending("a", 0, "seed", b"fp"), revive="ff")
    assert store.flush([again], [], T0).new == [False]
