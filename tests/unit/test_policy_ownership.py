"""Unit tests for crawler/policy/ownership.py: rendezvous hashing of shards to nodes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from crawler.policy.ownership import owner_of, shards_of
from tests.unit.properties import PROPERTY

SHARDS = 64
node_ids = st.lists(
    st.text(min_size=1, max_size=20), min_size=1, max_size=8, unique=True
)


@PROPERTY
@given(nodes=node_ids)
def test_every_shard_has_exactly_one_owner_among_the_nodes(nodes):
    shares = [shards_of(node, nodes, SHARDS) for node in nodes]
    assert sum(len(share) for share in shares) == SHARDS
    assert frozenset().union(*shares) == frozenset(range(SHARDS))


@PROPERTY
@given(nodes=node_ids, newcomer=st.text(min_size=1, max_size=20))
def test_a_joining_node_takes_shards_only_from_others_never_moves_the_rest(
    nodes, newcomer
):
    if newcomer in nodes:
        return
    for shard in range(SHARDS):
        before, after = owner_of(shard, nodes), owner_of(shard, [*nodes, newcomer])
        assert after in (before, newcomer)


@PROPERTY
@given(nodes=node_ids.filter(lambda n: len(n) >= 2))
def test_a_leaving_node_gives_away_only_its_own_shards(nodes):
    leaver, rest = nodes[0], nodes[1:]
    for shard in range(SHARDS):
        before = owner_of(shard, nodes)
        if before != leaver:
            assert owner_of(shard, rest) == before


def test_the_answer_does_not_depend_on_the_order_nodes_are_listed():
    nodes = ["a-1", "b-2", "c-3", "d-4"]
    assert [owner_of(s, nodes) for s in range(SHARDS)] == [
        owner_of(s, list(reversed(nodes))) for s in range(SHARDS)
    ]


def test_shards_spread_over_nodes_roughly_evenly():
    nodes = [f"node-{i}" for i in range(4)]
    sizes = [len(shards_of(node, nodes, 1024)) for node in nodes]
    assert min(sizes) > 1024 / 4 * 0.8  # 256 each on average


def test_no_nodes_no_owner():
    assert owner_of(3, []) is None
    assert shards_of("alone", [], SHARDS) == frozenset(range(SHARDS))
