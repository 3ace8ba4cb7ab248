"""Unit tests for crawler/policy/tiers.py: timeout tiers and what a host's history says.

The expected values come from the requirement (issue 4): TIMEOUTS_TIERS defaults to
[10, 30, 90]; a timeout at tier k goes to tier k+1 and one at the last tier is given
up; TIMEOUTS_SLOW_AFTER escalations within TIMEOUTS_SLOW_WINDOW mark a host slow (its
requests start at tier 1); TIMEOUTS_SLOW_RECOVER_AFTER successes at tier 0 or 1
unmark it; TIMEOUTS_HOST_DEAD_AFTER give-ups in a row pause a host for
TIMEOUTS_HOST_PAUSE seconds; far hosts start at tier 1.
"""

from __future__ import annotations

import itertools
import json
import math
from typing import Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy.settings import Settings

import crawler.defaults as project
from crawler.policy.order import TIERS_PER_DEPTH, level_of
from crawler.policy.tiers import (
    MAX_REMEMBERED_ESCALATIONS,
    BadHealthRecordError,
    HostHealth,
    TiersConfig,
    after_escalation,
    after_give_up,
    after_success,
)
from tests.unit.properties import PROPERTY

NORMAL = HostHealth()
SLOW = HostHealth(slow=True)


def project_settings(**values: object) -> Settings:
    settings = Settings()
    settings.setmodule("crawler.defaults", priority="project")
    settings.setdict(values, priority="cmdline")
    return settings


def config(**values: object) -> TiersConfig:
    """The policy from the project defaults plus *values*."""
    return TiersConfig.from_settings(project_settings(**values))


# --- Settings -----------------------------------------------------------------------


def test_project_defaults_make_the_required_policy() -> None:
    policy = config()
    assert policy.tiers == (10.0, 30.0, 90.0)
    assert policy.slow_after == 3
    assert policy.slow_window == project.TIMEOUTS_SLOW_WINDOW
    assert policy.slow_recover_after == project.TIMEOUTS_SLOW_RECOVER_AFTER
    assert policy.dead_after == project.TIMEOUTS_HOST_DEAD_AFTER
    assert policy.pause == project.TIMEOUTS_HOST_PAUSE


@pytest.mark.parametrize(
    "value",
    [
        pytest.param([0.5, 2, 4], id="list"),
        pytest.param((0.5, 2.0, 4.0), id="tuple"),
        pytest.param("[0.5, 2, 4]", id="json"),
        pytest.param("  [0.5,2,4]\n", id="json-padded"),
        pytest.param("0.5,2,4", id="comma"),
        pytest.param(" 0.5 , 2 , 4 ", id="comma-padded"),
        pytest.param(["0.5", "2", "4"], id="list-of-strings"),
    ],
)
def test_tiers_are_read_from_a_list_json_or_commas(value: object) -> None:
    assert config(TIMEOUTS_TIERS=value).tiers == (0.5, 2.0, 4.0)


@pytest.mark.parametrize(
    ("value", "tiers"),
    [
        ("7", (7.0,)),
        ([7], (7.0,)),
        ("[1e-3]", (0.001,)),
        (list(range(1, TIERS_PER_DEPTH + 1)), tuple(map(float, range(1, 17)))),
    ],
)
def test_one_tier_and_the_most_tiers_are_allowed(
    value: object, tiers: tuple[float, ...]
) -> None:
    assert config(TIMEOUTS_TIERS=value).tiers == tiers


BAD_TIERS = [
    pytest.param([], id="empty-list"),
    pytest.param("", id="empty-string"),
    pytest.param("  ", id="blank-string"),
    pytest.param("[]", id="empty-json"),
    pytest.param([10, 10, 30], id="repeated"),
    pytest.param("10,30,30", id="repeated-at-end"),
    pytest.param([30, 10], id="decreasing"),
    pytest.param("[10, 90, 30]", id="not-sorted"),
    pytest.param([0, 10], id="zero"),
    pytest.param("0", id="only-zero"),
    pytest.param([-10, 10], id="negative"),
    pytest.param("-1,2", id="negative-commas"),
    pytest.param([math.nan], id="nan"),
    pytest.param("1,nan", id="nan-string"),
    pytest.param("[1, NaN]", id="nan-json"),
    pytest.param([10, math.inf], id="inf"),
    pytest.param("[1, Infinity]", id="inf-json"),
    pytest.param("1,1e400", id="overflowing-float"),
    pytest.param("[1, " + "9" * 400 + "]", id="huge-json-int"),
    pytest.param([1, 10**400], id="huge-int"),
    pytest.param(["ten"], id="word"),
    pytest.param("ten,thirty", id="words"),
    pytest.param('[1, "x"]', id="json-word"),
    pytest.param([None], id="none-in-list"),
    pytest.param([[10]], id="nested-list"),
    pytest.param([True, 2], id="bool"),
    pytest.param("[true, 2]", id="json-bool"),
    pytest.param("1,,2", id="empty-item"),
    pytest.param("[1, 2", id="broken-json"),
    pytest.param("[" * 50_000, id="deep-json"),
    pytest.param('{"0": 10}', id="json-object"),
    pytest.param({"0": 10}, id="dict"),
    pytest.param(None, id="none"),
    pytest.param(list(range(1, TIERS_PER_DEPTH + 2)), id="too-many"),
    pytest.param(",".join(map(str, range(1, 18))), id="too-many-commas"),
]


@pytest.mark.parametrize("value", BAD_TIERS)
def test_bad_tiers_are_named_in_one_line(value: object) -> None:
    with pytest.raises(ValueError, match=r"^TIMEOUTS_TIERS ") as info:
        config(TIMEOUTS_TIERS=value)
    assert "\n" not in str(info.value)


COUNTS = [
    "TIMEOUTS_SLOW_AFTER",
    "TIMEOUTS_SLOW_RECOVER_AFTER",
    "TIMEOUTS_HOST_DEAD_AFTER",
]
BAD_SETTINGS = [
    *[(name, value) for name in COUNTS for value in [0, -1, "0", "-3", "ten", "", "9" * 5000]],
    ("TIMEOUTS_SLOW_AFTER", MAX_REMEMBERED_ESCALATIONS + 1),
    *[("TIMEOUTS_SLOW_WINDOW", value) for value in [0, -1, "0", "soon", math.nan, math.inf]],
    *[("TIMEOUTS_HOST_PAUSE", value) for value in [-1, "-0.5", "long", math.nan, math.inf]],
]  # fmt: skip


@pytest.mark.parametrize(("name", "value"), BAD_SETTINGS)
def test_a_bad_setting_is_named_in_one_line(name: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"^{name} ") as info:
        config(**{name: value})
    assert "\n" not in str(info.value)


def test_command_line_strings_are_parsed() -> None:
    policy = config(
        TIMEOUTS_TIERS="5,15",
        TIMEOUTS_SLOW_AFTER="2",
        TIMEOUTS_SLOW_WINDOW="60.5",
        TIMEOUTS_SLOW_RECOVER_AFTER="4",
        TIMEOUTS_HOST_DEAD_AFTER="5",
        TIMEOUTS_HOST_PAUSE="30",
    )
    assert policy == TiersConfig(
        tiers=(5.0, 15.0),
        slow_after=2,
        slow_window=60.5,
        slow_recover_after=4,
        dead_after=5,
        pause=30.0,
    )


def test_slow_after_may_use_every_remembered_escalation() -> None:
    slow_after = MAX_REMEMBERED_ESCALATIONS
    assert config(TIMEOUTS_SLOW_AFTER=slow_after).slow_after == slow_after


# --- Tiers --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tier", "timeout", "next_tier"),
    [(0, 10.0, 1), (1, 30.0, 2), (2, 90.0, None)],
)
def test_each_default_tier_has_its_timeout_and_successor(
    tier: int, timeout: float, next_tier: int | None
) -> None:
    policy = config()
    assert policy.timeout_of(tier) == timeout
    assert policy.next_tier(tier) == next_tier


@pytest.mark.parametrize(
    "tiers",
    [[7.0], [1.0, 2.0], [0.5, 2.0, 4.0, 8.0, 60.0], [float(t) for t in range(1, 17)]],
)
def test_a_request_climbs_every_tier_once_and_is_given_up_after_the_last(
    tiers: list[float],
) -> None:
    policy = config(TIMEOUTS_TIERS=tiers)
    timeouts: list[float] = []
    tier: int | None = 0
    while tier is not None:
        timeouts.append(policy.timeout_of(tier))
        level_of(0, tier)  # every tier fits in one depth of the queue
        tier = policy.next_tier(tier)
    assert timeouts == tiers


@pytest.mark.parametrize(
    ("tiers", "health", "far", "start"),
    [
        ([10, 30, 90], NORMAL, False, 0),
        ([10, 30, 90], SLOW, False, 1),
        ([10, 30, 90], NORMAL, True, 1),
        ([10, 30, 90], SLOW, True, 1),
        ([10, 30], SLOW, True, 1),
        ([10], NORMAL, False, 0),
        ([10], SLOW, False, 0),
        ([10], NORMAL, True, 0),
        ([10], SLOW, True, 0),
    ],
)
def test_slow_and_far_hosts_start_one_tier_down_if_there_is_one(
    tiers: list[int], health: HostHealth, far: bool, start: int
) -> None:
    assert config(TIMEOUTS_TIERS=tiers).start_tier(health, far=far) == start


# --- Slow hosts ---------------------------------------------------------------------


def escalate(
    policy: TiersConfig, health: HostHealth, times: list[float]
) -> tuple[HostHealth, list[str | None]]:
    events: list[str | None] = []
    for now in times:
        health, event = after_escalation(policy, health, now=now)
        events.append(event)
    return health, events


def test_the_nth_escalation_within_the_window_marks_the_host_slow() -> None:
    policy = config(TIMEOUTS_SLOW_AFTER=3, TIMEOUTS_SLOW_WINDOW=100)
    health, events = escalate(policy, NORMAL, [1000, 1040, 1080])
    assert events == [None, None, "slow"]
    assert health.slow
    assert policy.start_tier(health, far=False) == 1


def test_two_escalations_do_not_make_a_host_slow() -> None:
    policy = config(TIMEOUTS_SLOW_AFTER=3, TIMEOUTS_SLOW_WINDOW=100)
    health, events = escalate(policy, NORMAL, [1000, 1001])
    assert events == [None, None]
    assert not health.slow
    assert policy.start_tier(health, far=False) == 0


def test_escalations_that_aged_out_of_the_window_do_not_count() -> None:
    policy = config(TIMEOUTS_SLOW_AFTER=3, TIMEOUTS_SLOW_WINDOW=100)
    # 1000 is more than 100 s before 1110 and 1120; only two are within the window.
    health, events = escalate(policy, NORMAL, [1000, 1060, 1110])
    assert events == [None, None, None]
    health, events = escalate(policy, health, [1170])  # 1060 is now out as well
    assert events == [None]
    assert not health.slow
    health, events = escalate(policy, health, [1180])  # 1110, 1170, 1180
    assert events == ["slow"]


def test_a_slow_host_is_marked_once() -> None:
    policy = config(TIMEOUTS_SLOW_AFTER=2, TIMEOUTS_SLOW_WINDOW=100)
    health, events = escalate(policy, NORMAL, [0, 1, 2, 3, 4])
    assert events == [None, "slow", None, None, None]
    assert health.slow


def test_one_escalation_is_enough_when_slow_after_is_one() -> None:
    policy = config(TIMEOUTS_SLOW_AFTER=1)
    _, events = escalate(policy, NORMAL, [5.0])
    assert events == ["slow"]


def slow_host(policy: TiersConfig) -> HostHealth:
    times = [1000.0 + i for i in range(policy.slow_after)]
    health, events = escalate(policy, NORMAL, times)
    assert events[-1] == "slow"
    return health


def succeed(
    policy: TiersConfig, health: HostHealth, tiers: list[int]
) -> tuple[HostHealth, list[str | None]]:
    events: list[str | None] = []
    for tier in tiers:
        health, event = after_success(policy, health, tier=tier)
        events.append(event)
    return health, events


@pytest.mark.parametrize("tiers", [[0, 0, 0, 0], [1, 1, 1, 1], [0, 1, 1, 0]])
def test_exactly_n_quick_successes_make_a_slow_host_normal(tiers: list[int]) -> None:
    policy = config(TIMEOUTS_SLOW_RECOVER_AFTER=4)
    health, events = succeed(policy, slow_host(policy), tiers[:-1])
    assert events == [None, None, None]
    assert health.slow
    health, events = succeed(policy, health, tiers[-1:])
    assert events == ["recovered"]
    assert not health.slow
    assert policy.start_tier(health, far=False) == 0
    assert policy.start_tier(health, far=True) == 1  # a far host stays far


def test_successes_at_tier_two_do_not_make_a_slow_host_normal() -> None:
    policy = config(TIMEOUTS_SLOW_RECOVER_AFTER=4)
    health, events = succeed(policy, slow_host(policy), [2] * 50)
    assert events == [None] * 50
    assert health.slow
    # They do not count, but neither do they undo the quick ones around them.
    health, events = succeed(policy, health, [0, 2, 1, 2, 2, 0, 2])
    assert events == [None] * 7
    assert health.slow
    _, events = succeed(policy, health, [1])
    assert events == ["recovered"]


def test_successes_before_the_host_was_slow_do_not_count() -> None:
    policy = config(TIMEOUTS_SLOW_RECOVER_AFTER=3)
    health, events = succeed(policy, NORMAL, [0] * 10)
    assert events == [None] * 10
    health, _ = escalate(policy, health, [1000.0 + i for i in range(policy.slow_after)])
    assert health.slow
    health, events = succeed(policy, health, [0, 0])
    assert events == [None, None]
    assert health.slow


# --- Dead hosts ---------------------------------------------------------------------


def give_up(
    policy: TiersConfig, health: HostHealth, times: list[float]
) -> tuple[HostHealth, list[str | None]]:
    events: list[str | None] = []
    for now in times:
        health, event = after_give_up(policy, health, now=now)
        events.append(event)
    return health, events


def test_exactly_n_give_ups_in_a_row_pause_the_host() -> None:
    policy = config(TIMEOUTS_HOST_DEAD_AFTER=3, TIMEOUTS_HOST_PAUSE=600)
    health, events = give_up(policy, NORMAL, [1000, 1200])
    assert events == [None, None]
    assert health.paused_until == NORMAL.paused_until  # not paused yet
    health, events = give_up(policy, health, [1500.5])
    assert events == ["paused"]
    assert health.paused_until == 1500.5 + 600


@pytest.mark.parametrize("host", [NORMAL, SLOW], ids=["normal", "slow"])
@pytest.mark.parametrize("tier", [0, 1, 2])
def test_a_success_ends_the_dead_streak(host: HostHealth, tier: int) -> None:
    policy = config(TIMEOUTS_HOST_DEAD_AFTER=3, TIMEOUTS_SLOW_RECOVER_AFTER=100)
    health, _ = give_up(policy, host, [10, 20])
    health, _ = succeed(policy, health, [tier])
    health, events = give_up(policy, health, [30, 40])
    assert events == [None, None]
    assert health.paused_until == host.paused_until
    _, events = give_up(policy, health, [50])
    assert events == ["paused"]


def test_after_a_pause_it_takes_n_more_give_ups_to_pause_again() -> None:
    policy = config(TIMEOUTS_HOST_DEAD_AFTER=2, TIMEOUTS_HOST_PAUSE=60)
    health, events = give_up(policy, NORMAL, [100, 110])
    assert events == [None, "paused"]
    health, events = give_up(policy, health, [200])
    assert events == [None]
    assert health.paused_until == 110 + 60
    health, events = give_up(policy, health, [210])
    assert events == ["paused"]
    assert health.paused_until == 210 + 60


def test_one_give_up_pauses_when_dead_after_is_one() -> None:
    policy = config(TIMEOUTS_HOST_DEAD_AFTER=1, TIMEOUTS_HOST_PAUSE=5)
    health, events = give_up(policy, NORMAL, [7])
    assert events == ["paused"]
    assert health.paused_until == 12


def test_the_policy_changes_nothing_it_was_given() -> None:
    policy = config()
    health = HostHealth(escalations=(1.0, 2.0), slow=True, successes=2, dead_streak=1)
    before = health.to_json()
    after_escalation(policy, health, now=3.0)
    after_success(policy, health, tier=0)
    after_give_up(policy, health, now=3.0)
    assert health.to_json() == before


# --- Records ------------------------------------------------------------------------


def is_valid(health: HostHealth) -> bool:
    return (
        isinstance(health.escalations, tuple)
        and len(health.escalations) <= MAX_REMEMBERED_ESCALATIONS
        and all(type(t) is float and math.isfinite(t) for t in health.escalations)
        and type(health.slow) is bool
        and type(health.successes) is int
        and health.successes >= 0
        and type(health.dead_streak) is int
        and health.dead_streak >= 0
        and type(health.paused_until) is float
        and math.isfinite(health.paused_until)
    )


finite = st.floats(allow_nan=False, allow_infinity=False)
healths = st.builds(
    HostHealth,
    escalations=st.lists(finite, max_size=MAX_REMEMBERED_ESCALATIONS).map(tuple),
    slow=st.booleans(),
    successes=st.integers(0, 10**6),
    dead_streak=st.integers(0, 10**6),
    paused_until=finite,
)


@PROPERTY
@given(healths)
def test_a_record_survives_json(health: HostHealth) -> None:
    assert HostHealth.from_json(health.to_json()) == health
    assert HostHealth.from_json(health.to_json().encode()) == health


def test_a_record_of_a_real_history_survives_json() -> None:
    policy = config()
    health, _ = escalate(policy, NORMAL, [1.5, 2.5, 3.5])
    health, _ = succeed(policy, health, [0, 1])
    health, _ = give_up(policy, health, [4.0])
    assert health == HostHealth(
        escalations=(1.5, 2.5, 3.5), slow=True, successes=2, dead_streak=1
    )
    assert HostHealth.from_json(health.to_json()) == health


def test_a_long_stored_history_keeps_its_newest_escalations() -> None:
    times = [float(t) for t in range(MAX_REMEMBERED_ESCALATIONS + 10)]
    data = json.dumps({"e": times, "s": False, "ok": 0, "d": 0, "p": 0})
    health = HostHealth.from_json(data)
    assert health.escalations == tuple(times[-MAX_REMEMBERED_ESCALATIONS:])


def good_json(**changes: object) -> str:
    value: dict[str, object] = {"e": [1.0, 2.0], "s": True, "ok": 1, "d": 2, "p": 9.0}
    value.update(changes)
    return json.dumps(value)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"\x80\x04\x95cos\nsystem\n.", id="pickle"),
        pytest.param(b"\xff\xfe\xfa", id="not-utf8"),
        pytest.param("", id="empty"),
        pytest.param("null", id="null"),
        pytest.param("[1, 2]", id="list"),
        pytest.param('"e"', id="string"),
        pytest.param("[" * 50_000, id="deep"),
        pytest.param("9" * 5000, id="huge-int"),
        pytest.param("{}", id="no-fields"),
        pytest.param('{"e": [], "s": false, "ok": 0, "d": 0}', id="missing-field"),
        pytest.param(good_json(e="123"), id="text-escalations"),
        pytest.param(good_json(e={"1": 2}), id="object-escalations"),
        pytest.param(good_json(e=5), id="number-escalations"),
        pytest.param(good_json(e=["1"]), id="text-time"),
        pytest.param(good_json(e=[True]), id="bool-time"),
        pytest.param(good_json(e=[None]), id="null-time"),
        pytest.param(good_json(e=[math.nan]), id="nan-time"),
        pytest.param(good_json(e=[math.inf]), id="infinite-time"),
        pytest.param('{"e":[1e400],"s":false,"ok":0,"d":0,"p":0}', id="overflow-time"),
        pytest.param(good_json(e=[10**400]), id="huge-int-time"),
        pytest.param(good_json(s=1), id="number-slow"),
        pytest.param(good_json(s="false"), id="text-slow"),
        pytest.param(good_json(ok=-1), id="negative-successes"),
        pytest.param(good_json(d=-1), id="negative-streak"),
        pytest.param(good_json(ok=1.5), id="fractional-successes"),
        pytest.param(good_json(d="2"), id="text-streak"),
        pytest.param(good_json(ok=True), id="bool-successes"),
        pytest.param(good_json(d=math.inf), id="infinite-streak"),
        pytest.param(good_json(p="soon"), id="text-pause"),
        pytest.param(good_json(p=False), id="bool-pause"),
        pytest.param(good_json(p=math.nan), id="nan-pause"),
        pytest.param(good_json(p=None), id="null-pause"),
    ],
)
def test_a_malformed_record_is_rejected(data: str | bytes) -> None:
    with pytest.raises(BadHealthRecordError):
        HostHealth.from_json(data)


def test_a_malformed_record_is_still_a_value_error() -> None:
    with pytest.raises(ValueError, match="not"):
        HostHealth.from_json("{")


def parsed_or_rejected(data: str | bytes) -> HostHealth | None:
    """The record *data* holds if it is one, checked to be valid; None if rejected."""
    try:
        health = HostHealth.from_json(data)
    except BadHealthRecordError:
        return None
    assert is_valid(health)
    assert HostHealth.from_json(health.to_json()) == health
    return health


@PROPERTY
@given(st.binary(max_size=2000) | st.text(max_size=2000) | st.text().map(str.encode))
def test_any_bytes_are_a_record_or_rejected(data: str | bytes) -> None:
    parsed_or_rejected(data)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=12), inner, max_size=8)
    ),
    max_leaves=10,
)


@PROPERTY
@given(json_values)
def test_any_json_value_is_a_record_or_rejected(value: object) -> None:
    parsed_or_rejected(json.dumps(value))


@PROPERTY
@given(
    st.fixed_dictionaries(
        {},
        optional={
            "e": st.lists(st.floats() | st.integers() | json_values, max_size=80)
            | json_values,
            "s": st.booleans() | json_values,
            "ok": st.integers() | json_values,
            "d": st.integers() | json_values,
            "p": st.floats() | st.integers() | json_values,
            "extra": json_values,
        },
    )
)
def test_any_record_shaped_object_is_a_record_or_rejected(
    value: dict[str, Any],
) -> None:
    health = parsed_or_rejected(json.dumps(value))
    if health is not None:  # what was stored is what was read
        assert health.slow is value["s"]
        assert health.successes == value["ok"]
        assert health.dead_streak == value["d"]
        assert health.paused_until == value["p"]
        kept = value["e"][-MAX_REMEMBERED_ESCALATIONS:]
        assert list(health.escalations) == kept


# --- Any history --------------------------------------------------------------------

Kind = Literal["escalation", "success", "give_up"]
steps = st.lists(
    st.tuples(
        st.sampled_from(["escalation", "success", "give_up"]),
        st.integers(0, 400),  # seconds since the previous event
        st.integers(0, 2),  # the tier of a success
    ),
    max_size=300,
)
policies = st.builds(
    TiersConfig,
    slow_after=st.integers(1, MAX_REMEMBERED_ESCALATIONS),
    slow_window=st.sampled_from([1.0, 100.0, 1000.0, 1e9]),
    slow_recover_after=st.integers(1, 20),
    dead_after=st.integers(1, 5),
    pause=st.sampled_from([0.0, 60.0, 600.0]),
)


class Model:
    """What the requirement says of a host, from its events alone."""

    def __init__(self, policy: TiersConfig) -> None:
        self.policy = policy
        self.slow = False
        self.escalations: list[float] = []
        self.normal_since = 0  # escalations before a recovery may or may not count
        self.quick = 0  # successes at tier 0 or 1 since the host was marked slow
        self.streak = 0  # give-ups in a row since the last success or pause

    def escalation(self, now: float, event: str | None) -> None:
        self.escalations.append(now)
        window = self.policy.slow_window
        certain = self.escalations[self.normal_since :]
        inside = sum(t > now - window for t in certain)
        on_edge = sum(t >= now - window for t in self.escalations)
        if self.slow:
            assert event is None
        elif inside >= self.policy.slow_after:
            assert event == "slow"
        elif on_edge < self.policy.slow_after:
            assert event is None
        if event == "slow":
            self.slow, self.quick = True, 0

    def success(self, tier: int, event: str | None) -> None:
        self.streak = 0
        if self.slow and tier <= 1:
            self.quick += 1
        if self.slow and self.quick == self.policy.slow_recover_after:
            assert event == "recovered"
            self.slow, self.normal_since = False, len(self.escalations)
        else:
            assert event is None

    def give_up(self, now: float, event: str | None, paused_until: float) -> float:
        """When the host is paused until after this give-up."""
        self.streak += 1
        if self.streak == self.policy.dead_after:
            assert event == "paused"
            self.streak = 0
            return now + self.policy.pause
        assert event is None
        return paused_until


@PROPERTY
@given(policies, steps)
def test_any_history_follows_the_requirement_and_stays_bounded(
    policy: TiersConfig, history: list[tuple[Kind, int, int]]
) -> None:
    model, health, now = Model(policy), NORMAL, 1_700_000_000.0
    for kind, elapsed, tier in history:
        now += elapsed
        paused_until = health.paused_until
        if kind == "escalation":
            health, event = after_escalation(policy, health, now=now)
            model.escalation(now, event)
        elif kind == "success":
            health, event = after_success(policy, health, tier=tier)
            model.success(tier, event)
        else:
            health, event = after_give_up(policy, health, now=now)
            paused_until = model.give_up(now, event, paused_until)
        assert health.slow == model.slow
        assert health.paused_until == paused_until
        assert len(health.escalations) <= MAX_REMEMBERED_ESCALATIONS
        assert is_valid(health)
        assert HostHealth.from_json(health.to_json()) == health


@PROPERTY
@given(
    policies,
    st.lists(st.integers(0, 3), min_size=1, max_size=8),  # seconds between timeouts
    st.integers(MAX_REMEMBERED_ESCALATIONS, 4 * MAX_REMEMBERED_ESCALATIONS),
)
def test_a_storm_of_escalations_keeps_the_record_bounded(
    policy: TiersConfig, rhythm: list[int], count: int
) -> None:
    health, now = NORMAL, 0.0
    for gap in itertools.islice(itertools.cycle(rhythm), count):
        now += gap
        health, _ = after_escalation(policy, health, now=now)
        assert len(health.escalations) <= MAX_REMEMBERED_ESCALATIONS
        assert health.escalations[-1] == now  # the newest is never the one dropped
    # A record read back from Redis is bounded the same way.
    assert HostHealth.from_json(health.to_json()) == health
