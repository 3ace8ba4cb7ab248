"""Unit tests for crawler/policy/dispatch.py: which node owns which shard, and when
work moves to free capacity."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler.policy.dispatch import (
    POLICIES,
    Loan,
    NodeLoad,
    donor_for,
    homes,
    published_weight,
    quotas,
    shards_to_take,
    state_of,
    wanted_shards,
    weights_in_force,
)
from tests.unit.properties import PROPERTY

SHARDS = 64
node_ids = st.lists(
    st.text(min_size=1, max_size=20), min_size=1, max_size=8, unique=True
)
HASHED = ("rendezvous", "weighted", "least-load", "pick-2")


def equal(nodes: list[str]) -> dict[str, float]:
    return dict.fromkeys(nodes, 1.0)


@PROPERTY
@given(nodes=node_ids, policy=st.sampled_from(POLICIES))
def test_every_shard_has_exactly_one_home_among_the_nodes(nodes, policy):
    home = homes(equal(nodes), SHARDS, policy)
    assert sorted(home) == list(range(SHARDS))
    assert set(home.values()) <= set(nodes)
    for node in nodes:
        mine = wanted_shards(node, equal(nodes), SHARDS, policy, loans={}, live=nodes)
        assert mine == {s for s, owner in home.items() if owner == node}


QUOTAS = ("weighted", "least-load", "pick-2")


def moved(before: dict[int, str], after: dict[int, str]) -> int:
    return sum(
        1
        for shard in before.keys() | after.keys()
        if before.get(shard) != after.get(shard)
    )


def share(home: dict[int, str], node: str) -> int:
    return sum(1 for owner in home.values() if owner == node)


@PROPERTY
@given(nodes=node_ids, newcomer=st.text(min_size=1, max_size=20))
def test_under_plain_rendezvous_a_join_moves_only_the_newcomers_shards(nodes, newcomer):
    if newcomer in nodes:
        return
    before = homes(equal(nodes), SHARDS, "rendezvous")
    after = homes(equal([*nodes, newcomer]), SHARDS, "rendezvous")
    assert all(after[s] in (before[s], newcomer) for s in range(SHARDS))


@PROPERTY
@given(nodes=node_ids, newcomer=st.text(min_size=1, max_size=20))
def test_a_joining_node_gets_exactly_its_quota(nodes, newcomer):
    if newcomer in nodes:
        return
    weights = {node: 1.0 + index % 3 for index, node in enumerate([*nodes, newcomer])}
    home = homes(weights, SHARDS, "weighted")
    assert share(home, newcomer) == quotas(weights, SHARDS)[newcomer]


def test_a_join_moves_little_more_than_the_newcomers_share():
    """3 nodes to 4, 64 shards, 300 random sets of names: the newcomer needs 16; the
    quotas' cascade adds a few (plain rendezvous moves 16 on average, but gives
    shares from 9 to 26)."""
    rng = random.Random(5)
    counts = []
    for _ in range(300):
        names = [f"node-{rng.getrandbits(40):x}" for _ in range(4)]
        before = homes(equal(names[:3]), SHARDS, "weighted")
        after = homes(equal(names), SHARDS, "weighted")
        assert share(after, names[3]) == SHARDS // 4
        counts.append(moved(before, after))
    assert sum(counts) / len(counts) <= 1.2 * SHARDS / 4
    assert max(counts) <= 1.5 * SHARDS / 4


@PROPERTY
@given(nodes=node_ids.filter(lambda n: len(n) >= 2), policy=st.sampled_from(HASHED))
def test_a_draining_node_gets_nothing_and_its_shards_go_as_if_it_had_left(
    nodes, policy
):
    leaver, rest = nodes[0], nodes[1:]
    draining = homes(equal(nodes) | {leaver: 0.0}, SHARDS, policy)
    assert leaver not in draining.values()
    assert draining == homes(equal(rest), SHARDS, policy)


@PROPERTY
@given(nodes=node_ids.filter(lambda n: len(n) >= 2))
def test_under_plain_rendezvous_a_leaver_gives_away_only_its_own_shards(nodes):
    leaver, rest = nodes[0], nodes[1:]
    before = homes(equal(nodes), SHARDS, "rendezvous")
    after = homes(equal(rest), SHARDS, "rendezvous")
    assert all(after[s] == owner for s, owner in before.items() if owner != leaver)


def test_the_answer_does_not_depend_on_the_order_nodes_are_listed():
    nodes = ["a-1", "b-2", "c-3", "d-4"]
    for policy in POLICIES:
        forward = homes(equal(nodes), SHARDS, policy)
        assert forward == homes(equal(list(reversed(nodes))), SHARDS, policy)


@pytest.mark.parametrize("policy", POLICIES)
def test_equal_nodes_get_about_equal_shares(policy):
    nodes = [f"node-{i}" for i in range(4)]
    home = homes(equal(nodes), 1024, policy)
    sizes = [share(home, node) for node in nodes]
    assert min(sizes) > 1024 / 4 * 0.85


@pytest.mark.parametrize("policy", QUOTAS)
def test_equal_nodes_get_exactly_equal_shares_under_quotas(policy):
    nodes = [f"node-{i}" for i in range(3)]
    sizes = sorted(share(homes(equal(nodes), SHARDS, policy), node) for node in nodes)
    assert sizes == [21, 21, 22]


def test_round_robin_deals_shards_in_turn():
    home = homes(equal(["b", "a", "c"]), 6, "round-robin")
    assert home == {0: "a", 1: "b", 2: "c", 3: "a", 4: "b", 5: "c"}


@pytest.mark.parametrize("policy", QUOTAS)
def test_weighted_shares_follow_the_weights_exactly(policy):
    weights = {"big-1": 4.0, "big-2": 4.0, "big-3": 4.0, "small": 1.0}
    home = homes(weights, SHARDS, policy)
    # 64 x 4/13 = 19.69 (three of them), 64 x 1/13 = 4.92: remainders 0.69 x 3, 0.92.
    assert [share(home, node) for node in sorted(weights)] == [20, 20, 19, 5]


def test_quotas_sum_to_the_shards_and_round_by_largest_remainder():
    assert quotas({"a": 1.0, "b": 1.0, "c": 1.0}, 64) == {"a": 22, "b": 21, "c": 21}
    assert quotas({"a": 2.0, "b": 1.0, "gone": 0.0}, 3) == {"a": 2, "b": 1}
    assert quotas({"x": 0.1, "y": 0.1, "z": 9.8}, 16) == {"x": 0, "y": 0, "z": 16}


@PROPERTY
@given(
    weights=st.dictionaries(
        st.text(min_size=1, max_size=8),
        st.floats(min_value=0.0, max_value=1e6, allow_nan=False),
        min_size=1,
        max_size=8,
    ),
    shards=st.sampled_from([1, 2, 64, 256]),
)
def test_quotas_are_proportional_within_one_shard(weights, shards):
    total = sum(weights.values())
    if total <= 0:
        return
    due = quotas(weights, shards)
    assert sum(due.values()) == shards
    for node, count in due.items():
        assert abs(count - shards * weights[node] / total) < 1


def test_plain_rendezvous_ignores_weights():
    weights = {"big-1": 4.0, "big-2": 4.0, "big-3": 4.0, "small": 1.0}
    home = homes(weights, 4096, "rendezvous")
    assert share(home, "small") > 4096 / 4 * 0.85


def test_a_new_weight_moves_little_more_than_the_shares_that_change():
    before = {"a": 1.0, "b": 1.0, "c": 1.0}
    after = before | {"c": 2.0}
    old, new = homes(before, 1024, "weighted"), homes(after, 1024, "weighted")
    must = quotas(after, 1024)["c"] - quotas(before, 1024)["c"]  # 171
    assert must <= moved(old, new) <= 1.2 * must


def test_no_nodes_no_home():
    assert homes({}, SHARDS, "weighted") == {}
    assert homes({"draining": 0.0}, SHARDS, "rendezvous") == {}
    assert homes({}, SHARDS, "round-robin") == {}


# --- loans -----------------------------------------------------------------------


def test_a_shard_lent_to_a_live_node_is_its_and_not_its_homes():
    nodes = equal(["a", "b"])
    home = homes(nodes, SHARDS, "least-load")
    lent = next(s for s, owner in home.items() if owner == "a")
    loans = {lent: Loan("b", 100.0)}
    a = wanted_shards("a", nodes, SHARDS, "least-load", loans=loans, live=["a", "b"])
    b = wanted_shards("b", nodes, SHARDS, "least-load", loans=loans, live=["a", "b"])
    assert lent in b
    assert lent not in a
    assert a | b == frozenset(range(SHARDS))
    assert not a & b


def test_a_loan_to_a_dead_or_draining_node_returns_the_shard_home():
    nodes = equal(["a", "b"])
    lent = next(
        s for s, owner in homes(nodes, SHARDS, "pick-2").items() if owner == "a"
    )
    loans = {lent: Loan("b", 100.0)}
    dead = wanted_shards("a", nodes, SHARDS, "pick-2", loans=loans, live=["a"])
    draining = wanted_shards(
        "a", nodes | {"b": 0.0}, SHARDS, "pick-2", loans=loans, live=["a", "b"]
    )
    assert lent in dead
    assert lent in draining


def test_policies_that_do_not_pull_ignore_loans():
    nodes = equal(["a", "b"])
    home = homes(nodes, SHARDS, "weighted")
    lent = next(s for s, owner in home.items() if owner == "a")
    loans = {lent: Loan("b", 100.0)}
    a = wanted_shards("a", nodes, SHARDS, "weighted", loans=loans, live=["a", "b"])
    assert lent in a


# --- who gives work to whom ------------------------------------------------------


def load(node, concurrency, in_flight, ready, shards=()):
    return NodeLoad(node, concurrency, in_flight, ready, frozenset(shards))


def test_load_free_waiting_idle_and_saturated():
    busy = load("busy", 4, 4, 10)
    assert (busy.free, busy.waiting, busy.load) == (0, 10, 3.5)
    assert busy.saturated
    assert not busy.idle
    idle = load("idle", 16, 3, 0)
    assert (idle.free, idle.waiting, idle.load) == (13, 0, 3 / 16)
    assert idle.idle
    assert not idle.saturated
    working = load("working", 16, 10, 4)  # all its ready hosts fit its free slots
    assert not working.idle
    assert not working.saturated
    assert state_of(busy, draining=False) == "saturated"
    assert state_of(idle, draining=False) == "idle"
    assert state_of(working, draining=False) == "working"
    assert state_of(busy, draining=True) == "draining"


def test_least_load_takes_from_the_most_loaded_saturated_node():
    me = load("me", 16, 0, 0)
    others = [load("a", 16, 16, 20), load("b", 4, 4, 30), load("c", 16, 2, 0)]
    donor = donor_for(me, others, "least-load", random.Random(1))
    assert donor is not None
    assert donor.node == "b"  # (4 + 30) / 4 beats (16 + 20) / 16


def test_no_pull_without_idle_capacity_or_a_saturated_node_or_a_pulling_policy():
    rng = random.Random(1)
    saturated = [load("a", 4, 4, 30)]
    assert donor_for(load("me", 16, 16, 0), saturated, "least-load", rng) is None
    assert donor_for(load("me", 16, 2, 1), saturated, "least-load", rng) is None
    assert donor_for(load("me", 16, 0, 0), [load("a", 16, 3, 5)], "pick-2", rng) is None
    for policy in ("rendezvous", "round-robin", "weighted"):
        assert donor_for(load("me", 16, 0, 0), saturated, policy, rng) is None


def test_pick_2_takes_from_the_more_loaded_of_the_two_it_picks():
    me = load("me", 16, 0, 0)
    others = [load("a", 16, 16, 20), load("b", 16, 16, 40)]
    donor = donor_for(me, others, "pick-2", random.Random(7))
    assert donor is not None
    assert donor.node == "b"
    # With more nodes than two, only the pair picked is compared.
    many = [load(f"n{i}", 16, 16, 17 + i) for i in range(10)]
    chosen = {
        donor.node
        for seed in range(200)
        if (donor := donor_for(me, many, "pick-2", random.Random(seed)))
    }
    assert "n0" not in chosen  # the least loaded never wins a pair
    assert len(chosen) > 3  # not always the most loaded


def test_shards_taken_bring_about_the_free_slots_and_leave_the_donor_half():
    me = load("me", 8, 0, 0)
    donor = load("donor", 4, 4, 40, shards=range(8))
    ready = {0: 10, 1: 6, 2: 5, 3: 5, 4: 4, 5: 4, 6: 3, 7: 3}
    # The largest first: 10 ready hosts for 8 free slots (a first shard may bring
    # up to twice the slots, so shards of many hosts still move), then none.
    assert shards_to_take(me, donor, ready, pinned=()) == [0]
    # Without it: 6 fits, then 2 slots are left and no shard is that small.
    assert shards_to_take(me, donor, ready, pinned={0}) == [1]
    greedy = shards_to_take(load("me", 16, 0, 0), donor, ready, pinned=())
    assert sum(ready[s] for s in greedy) <= min(16, donor.waiting // 2)


def test_pinned_shards_and_shards_with_nothing_ready_stay():
    me = load("me", 8, 0, 0)
    donor = load("donor", 4, 4, 12, shards=range(4))
    ready = {0: 4, 1: 0, 2: 4}
    assert shards_to_take(me, donor, ready, pinned={0, 2}) == []
    assert shards_to_take(me, donor, ready, pinned={0}) == [2]


# --- weights ---------------------------------------------------------------------


def test_a_measured_weight_is_published_again_only_when_it_drifts():
    assert published_weight(None, None) is None
    assert published_weight(None, 40.0) == 40.0
    assert published_weight(40.0, 45.0) == 40.0  # within 25%: kept
    assert published_weight(40.0, 10.0) == 10.0
    assert published_weight(40.0, None) == 40.0
    assert published_weight(40.0, 0.0) == 40.0


def test_unmeasured_nodes_weigh_their_slots_at_the_measured_pace_of_a_slot():
    slots = {"a": 16, "b": 4, "c": 16, "d": 8, "e": 16}
    assert weights_in_force({"a": None, "b": None}, slots) == {"a": 16.0, "b": 4.0}
    published = {"a": 40.0, "b": 5.0, "c": 32.0, "d": None, "e": 0.0}
    weights = weights_in_force(published, slots)
    # Paces a slot: 2.5, 1.25, 2.0 (e drains): the median is 2.0.
    assert weights == {"a": 40.0, "b": 5.0, "c": 32.0, "d": 16.0, "e": 0.0}
