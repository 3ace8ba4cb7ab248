"""The end of the crawl as a node reads it, against a real Redis: an answer that
the crawl is drained holds only until the node's next round trip."""

from __future__ import annotations

import pytest

from crawler.frontier.node.drain import DrainWatch
from crawler.frontier.node.membership import Membership
from crawler.frontier.store.store import PopOrder
from tests.integration.test_frontier_scripts import NODE, T0, make_store, pending

pytestmark = pytest.mark.integration


def test_a_drained_answer_does_not_outlive_the_nodes_next_round_trip(redis):
    """Read while the node's only lease was in its engine, the crawl was drained
    but for that lease; the lease's links, written by the next trip, queue work.
    A cached "drained" ended crawls with their spilled queues still waiting."""
    store = make_store(redis)
    shards = store.shards
    membership = Membership(redis, shards.crawl_keys, shards.config, node_id=NODE)
    watch = DrainWatch(shards, membership, opened_at=T0)
    store.flush([pending("127.0.0.2", 0, "seed")], [], T0)
    assert store.pop(PopOrder(0, NODE, 0.0), T0) is not None
    assert watch.drained(T0, own_leases=1, trips=2)

    store.flush([pending("127.0.0.2", 1, "link")], [], T0)  # the seed's link

    assert not watch.drained(T0 + 0.1, own_leases=1, trips=3)
    assert not watch.drained(T0 + 0.2, own_leases=0, trips=4)
