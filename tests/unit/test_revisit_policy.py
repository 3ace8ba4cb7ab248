"""crawler/policy/revisitconfig.py, changehistory.py, freshness.py, revisitpace.py and
revisit.py: settings, the change-rate estimator, the optimal intervals, the pace and
the three policies."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy.settings import Settings

from crawler.policy.changehistory import WINDOW, History, decision_rate
from crawler.policy.freshness import (
    age,
    freshness,
    interval_for_rate,
    multiplier_for,
    target_interval,
)
from crawler.policy.revisit import next_interval
from crawler.policy.revisitconfig import Bounds, RevisitConfig, revisits_on
from crawler.policy.revisitpace import Pace
from tests.unit.properties import PROPERTY

DAY = 86400.0
DEFAULTS = {
    "REVISIT_POLICY": "adaptive",
    "REVISIT_INTERVAL": 86400.0,
    "REVISIT_MIN_INTERVAL": 3600.0,
    "REVISIT_MAX_INTERVAL": 1209600.0,
    "REVISIT_OVERRIDES": {},
    "REVISIT_GONE_AFTER": 3,
    "REVISIT_FEED_INTERVAL": 2.0,
    "REVISIT_FEED_BATCH": 1000,
    "REVISIT_CLAIM_TIMEOUT": 3600.0,
    "REVISIT_CONDITIONAL": True,
    "REVISIT_CHANGE_THRESHOLD": 3,
    "REVISIT_SITE_MIN_FACTOR": 0.5,
    "REVISIT_SITE_MAX_FACTOR": 4.0,
    "REVISIT_SITE_MIN_VISITS": 20,
}
WIDE = Bounds(interval=DAY, min_interval=1.0, max_interval=1e12)


def config(**changes: object) -> RevisitConfig:
    return RevisitConfig.from_settings({**DEFAULTS, **changes})


def test_defaults_read() -> None:
    built = config()
    assert built.enabled
    assert built.bounds == Bounds(86400.0, 3600.0, 1209600.0)
    assert (built.gone_after, built.feed_batch, built.conditional) == (3, 1000, True)
    assert not config(REVISIT_POLICY="off").enabled


def test_an_unset_floor_and_ceiling_follow_the_interval() -> None:
    unset = {"REVISIT_MIN_INTERVAL": None, "REVISIT_MAX_INTERVAL": ""}
    assert config(**unset).bounds == Bounds(DAY, 3600.0, 14 * DAY)
    # A test site's minute: 2.5 s and 14 minutes, not a start-up error.
    assert config(**unset, REVISIT_INTERVAL="60").bounds == Bounds(60.0, 2.5, 840.0)
    # Unset ones follow an override's own interval; set ones are kept.
    week = {"interval": 7 * DAY}
    relative = config(**unset, REVISIT_OVERRIDES={".gov": week})
    assert relative.bounds_for("x.gov") == Bounds(7 * DAY, 7 * 3600.0, 98 * DAY)
    kept = config(REVISIT_MAX_INTERVAL=None, REVISIT_OVERRIDES={".gov": week})
    assert kept.bounds_for("x.gov") == Bounds(7 * DAY, 3600.0, 98 * DAY)


def test_an_unset_feed_interval_keeps_to_the_shortest_floor() -> None:
    assert config(REVISIT_FEED_INTERVAL=None).feed_interval == 2.0
    assert config(REVISIT_FEED_INTERVAL="", REVISIT_MIN_INTERVAL=1).feed_interval == 0.5
    fast = {"news.example": {"min_interval": 3.0}}
    built = config(REVISIT_FEED_INTERVAL=None, REVISIT_OVERRIDES=fast)
    assert built.feed_interval == 1.5
    assert config(REVISIT_FEED_INTERVAL="7").feed_interval == 7.0


def test_strings_from_the_command_line_read() -> None:
    built = config(
        REVISIT_POLICY="Uniform",
        REVISIT_INTERVAL="7200",
        REVISIT_GONE_AFTER="5",
        REVISIT_CONDITIONAL="false",
        REVISIT_OVERRIDES='{".gov": {"interval": 604800}}',
    )
    assert built.policy == "uniform"
    assert built.bounds.interval == 7200.0
    assert (built.gone_after, built.conditional) == (5, False)
    assert built.bounds_for("x.gov").interval == 604800.0


def test_scrapy_settings_from_the_command_line_read() -> None:
    settings = Settings(DEFAULTS)
    settings.set("REVISIT_OVERRIDES", '{"gov": {"max_interval": 2419200}}', "cmdline")
    settings.set("REVISIT_CONDITIONAL", "0", "cmdline")
    settings.set("REVISIT_FEED_BATCH", "500", "cmdline")
    built = RevisitConfig.from_settings(settings)
    assert built.bounds_for("a.gov").max_interval == 2419200.0
    assert (built.conditional, built.feed_batch) == (False, 500)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, True),
        (False, False),
        (1, True),
        (0, False),
        ("1", True),
        ("0", False),
        ("True", True),
        ("false", False),
    ],
)
def test_conditional_flag(value: object, expected: bool) -> None:
    assert config(REVISIT_CONDITIONAL=value).conditional is expected


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("REVISIT_POLICY", "sometimes"),
        ("REVISIT_POLICY", None),
        ("REVISIT_INTERVAL", 0),
        ("REVISIT_INTERVAL", "nan"),
        ("REVISIT_INTERVAL", "inf"),
        ("REVISIT_INTERVAL", True),
        ("REVISIT_INTERVAL", 100.0),  # below REVISIT_MIN_INTERVAL
        ("REVISIT_INTERVAL", 2e6),  # above REVISIT_MAX_INTERVAL
        ("REVISIT_MIN_INTERVAL", -1),
        ("REVISIT_MIN_INTERVAL", 3e6),  # above REVISIT_MAX_INTERVAL
        ("REVISIT_MAX_INTERVAL", 60.0),  # below REVISIT_MIN_INTERVAL
        ("REVISIT_MAX_INTERVAL", "two weeks"),
        ("REVISIT_GONE_AFTER", 0),
        ("REVISIT_GONE_AFTER", 2.5),
        ("REVISIT_FEED_INTERVAL", 0),
        ("REVISIT_FEED_BATCH", "many"),
        ("REVISIT_CLAIM_TIMEOUT", -5),
        ("REVISIT_CONDITIONAL", "maybe"),
        ("REVISIT_CONDITIONAL", 2),
        ("REVISIT_OVERRIDES", "{not json"),
        ("REVISIT_OVERRIDES", "[1, 2]"),
        ("REVISIT_OVERRIDES", {".gov": {"every": 5}}),
        ("REVISIT_OVERRIDES", {".gov": {"interval": -5}}),
        ("REVISIT_OVERRIDES", {".gov": {"interval": float("inf")}}),
        ("REVISIT_OVERRIDES", {".gov": {"interval": "5"}}),
        ("REVISIT_OVERRIDES", {".gov": {"min_interval": 10, "max_interval": 5}}),
        ("REVISIT_OVERRIDES", {".gov": {"interval": 30 * DAY}}),  # above the max
        ("REVISIT_OVERRIDES", {".gov": 5}),
        ("REVISIT_OVERRIDES", {"": {"interval": 5000}}),
        ("REVISIT_OVERRIDES", {".gov": {}, "gov": {}}),
    ],
)
def test_bad_setting_is_one_line_naming_it(name: str, value: object) -> None:
    with pytest.raises(ValueError, match=name) as raised:
        config(**{name: value})
    assert "\n" not in str(raised.value)


def test_longest_suffix_wins_on_label_boundaries() -> None:
    built = config(
        REVISIT_OVERRIDES={
            ".gov": {"interval": 7 * DAY},
            "example.com": {"min_interval": 60, "interval": 600},
            "news.example.com": {"interval": 3600, "max_interval": DAY},
        }
    )
    default = built.bounds
    assert built.bounds_for("www.x.gov").interval == 7 * DAY
    assert built.bounds_for("GOV.").interval == 7 * DAY
    assert built.bounds_for("xgov") == default
    assert built.bounds_for("example.com") == Bounds(600, 60, default.max_interval)
    assert built.bounds_for("a.example.com").interval == 600
    assert built.bounds_for("badexample.com") == default
    assert built.bounds_for("a.news.example.com") == Bounds(3600, 3600, DAY)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
BOUND_FIELDS = st.dictionaries(
    st.sampled_from(["interval", "min_interval", "max_interval", "other"]),
    st.integers(-10, 10**7) | st.floats() | st.text(max_size=4),
    max_size=3,
)


@PROPERTY
@given(st.one_of(JSON, st.dictionaries(st.text(max_size=12), BOUND_FIELDS)))
def test_any_json_override_is_a_config_or_a_value_error(value: object) -> None:
    for form in (value, json.dumps(value)):
        try:
            built: RevisitConfig | str = config(REVISIT_OVERRIDES=form)
        except ValueError as error:
            built = str(error)
        if isinstance(built, str):
            assert "REVISIT_OVERRIDES" in built
        else:
            for _, bounds in built.overrides:
                assert bounds.min_interval <= bounds.interval <= bounds.max_interval


def test_estimator_on_a_hand_computed_history() -> None:
    # n = 10 checks, X = 3 changes over 10 days: mean interval 1 day and
    # r = -ln((10 - 3 + 0.5) / 10.5) / day = ln(1.4) / day = 0.3364722 a day.
    history = History(checks=10, changes=3, observed=10 * DAY)
    assert history.change_rate() == pytest.approx(0.3364722366 / DAY)
    # Changed at every check: ln(2n + 1) / mean interval = ln 21 / day.
    assert History(10, 10, 10 * DAY).change_rate() == pytest.approx(3.0445224 / DAY)
    assert History(10, 0, 10 * DAY).change_rate() == 0.0
    assert History().change_rate() is None


def test_a_page_with_no_change_yet_is_planned_with_a_quarter_change() -> None:
    # n = 4 checks over 4 days, none changed: -ln((4 - 0.25 + 0.5) / 4.5) a day.
    assert decision_rate(History(4, 0, 4 * DAY)) == pytest.approx(0.0571584 / DAY)
    # With a change seen, Cho's estimate: -ln((4 - 1 + 0.5) / 4.5) a day.
    assert decision_rate(History(4, 1, 4 * DAY)) == pytest.approx(0.2513144 / DAY)
    assert decision_rate(History()) is None


def test_history_counts_checks_and_fades_old_ones() -> None:
    history = (
        History().observe(changed=True, elapsed=100).observe(changed=False, elapsed=-5)
    )
    assert history == History(checks=2, changes=1, observed=100)
    for index in range(200):
        history = history.observe(changed=index % 4 == 0, elapsed=DAY)
    assert history.checks == WINDOW
    assert history.changes / history.checks == pytest.approx(0.25, abs=0.02)
    assert history.observed / history.checks == pytest.approx(DAY, rel=1e-3)


@pytest.mark.parametrize(
    ("x", "psi_per_lambda"),
    # ψ(T) = (1 - e^{-x})/λ - T e^{-x} with x = λT: λψ = 1 - (1 + x) e^{-x}.
    [
        (1.0, 1 - 2 / math.e),
        (2.0, 1 - 3 / math.e**2),
        (0.01, 1 - 1.01 * math.exp(-0.01)),
    ],
)
def test_interval_solves_psi_at_known_points(x: float, psi_per_lambda: float) -> None:
    rate = 1 / 1000
    assert interval_for_rate(rate, psi_per_lambda / rate, WIDE) == pytest.approx(
        x * 1000, rel=1e-6
    )


@pytest.mark.parametrize(
    ("rate", "multiplier", "expected"),
    [
        (0.0, 100.0, 1e12),  # static: lazy, the ceiling
        (1 / 1000, 1000.0, 1e12),  # μ >= 1/λ: not worth chasing
        (1 / 1000, 2000.0, 1e12),
        (1 / 1000, 0.0, 1.0),  # spend freely: the floor
    ],
)
def test_interval_extremes(rate: float, multiplier: float, expected: float) -> None:
    assert interval_for_rate(rate, multiplier, WIDE) == expected


def _brute_force_two_pages(rates: tuple[float, float], budget: float) -> float:
    """The first page's interval maximizing F1 + F2 with 1/T1 + 1/T2 = budget."""

    def total(f1: float) -> float:
        f2 = budget - f1
        return sum(
            (1 - math.exp(-r / f)) * f / r for r, f in zip(rates, (f1, f2), strict=True)
        )

    grid = [budget * i / 20000 for i in range(1, 20000)]
    return 1 / max(grid, key=total)


def test_multiplier_and_intervals_match_a_brute_force_optimum() -> None:
    bounds = Bounds(interval=DAY, min_interval=1.0, max_interval=1e12)
    slow = History(checks=10, changes=3, observed=10 * DAY)  # ln 1.4 a day
    fast = History(checks=10, changes=8, observed=10 * DAY)  # ln 4.2 a day
    rates = (math.log(1.4) / DAY, math.log(4.2) / DAY)
    mu = multiplier_for([(slow, bounds), (fast, bounds)])
    assert mu is not None
    expected = _brute_force_two_pages(rates, 2 / DAY)
    assert interval_for_rate(rates[0], mu, bounds) == pytest.approx(expected, rel=2e-3)
    spent = sum(1 / interval_for_rate(rate, mu, bounds) for rate in rates)
    assert spent == pytest.approx(2 / DAY, rel=1e-4)


def test_multiplier_without_rates_and_with_a_budget_too_large() -> None:
    bounds = Bounds(DAY, 3600, 14 * DAY)
    assert multiplier_for([(History(), bounds)]) is None
    # A budget of one fetch an hour a page is spent only with every page at its
    # floor: the smallest μ, at which a changing page is at its floor.
    tight = Bounds(3600, 3600, 14 * DAY)
    pages = [(History(5, 0, 5 * 3600), tight), (History(5, 2, 5 * 3600), tight)]
    mu = multiplier_for(pages)
    assert mu is not None
    assert interval_for_rate(math.log(5.5 / 3.5) / 3600, mu, tight) == 3600


@PROPERTY
@given(
    st.lists(
        st.tuples(
            st.floats(0, 100),
            st.floats(-5, 100),
            st.floats(0, 1e12),
            st.sampled_from([1.0, 3600.0, DAY, 14 * DAY]),
        ),
        max_size=8,
    )
)
def test_multiplier_never_overspends_the_budget(
    rows: list[tuple[float, float, float, float]],
) -> None:
    bounds = Bounds(DAY, 3600, 14 * DAY)
    pages = [
        (History(checks, changes, observed), Bounds(interval, 1.0, 14 * DAY))
        for checks, changes, observed, interval in rows
    ] + [(History(), bounds)]
    mu = multiplier_for(pages)
    known = [(h, b) for h, b in pages if h.change_rate() is not None]
    if not known:
        assert mu is None
        return
    assert mu is not None
    assert 0 < mu < math.inf
    spent = sum(1 / (target_interval(h, mu, b) or b.interval) for h, b in known)
    budget = sum(1 / b.interval for _, b in known)
    assert spent <= budget * (1 + 1e-9)


RATES = st.floats(0, 1, allow_nan=False) | st.just(0.0)
POSITIVE = st.floats(1e-3, 1e9, allow_nan=False)


@st.composite
def bounds_strategy(draw: st.DrawFn) -> Bounds:
    low, middle, high = sorted(draw(st.lists(POSITIVE, min_size=3, max_size=3)))
    return Bounds(middle, low, high)


@PROPERTY
@given(RATES, st.floats(allow_nan=True), bounds_strategy())
def test_interval_always_within_bounds(
    rate: float, multiplier: float, bounds: Bounds
) -> None:
    interval = interval_for_rate(rate, multiplier, bounds)
    assert bounds.min_interval <= interval <= bounds.max_interval


@st.composite
def histories(draw: st.DrawFn) -> History:
    checks = draw(st.integers(0, 40))
    changes = draw(st.integers(0, checks))
    return History(checks, changes, draw(st.floats(0, 1e9)))


VISITS = st.tuples(
    st.floats(allow_nan=True),  # the current interval
    st.none() | st.booleans(),  # changed
    st.none() | st.floats(0, 1e12),  # the multiplier
)


@PROPERTY
@given(
    st.sampled_from(["uniform", "adaptive", "halving", "off"]),
    histories(),
    VISITS,
    bounds_strategy(),
)
def test_next_interval_always_within_bounds(
    policy: str,
    history: History,
    visit: tuple[float, bool | None, float | None],
    bounds: Bounds,
) -> None:
    current, changed, multiplier = visit
    interval = next_interval(
        policy,
        current=current,
        history=history,
        changed=changed,
        bounds=bounds,
        multiplier=multiplier,
    )
    assert bounds.min_interval <= interval <= bounds.max_interval


@PROPERTY
@given(
    histories(),
    st.integers(0, 40),
    st.floats(60, 1e7),
    st.floats(1, 1e6),
)
def test_more_changes_never_lengthen_the_adaptive_interval_below_the_peak(
    history: History, more: int, current: float, multiplier: float
) -> None:
    bounds = Bounds(3600, 60, 1e7)
    more = int(history.changes) + more
    intervals = []
    for changes in (history.changes, min(more, history.checks)):
        page = History(history.checks, changes, max(history.observed, 60.0))
        rate = decision_rate(page)
        if rate is None or rate * multiplier > 0.5348:  # the optimum lengthens
            return
        intervals.append(
            next_interval(
                "adaptive",
                current=current,
                history=page,
                changed=True,
                bounds=bounds,
                multiplier=multiplier,
            )
        )
    assert intervals[1] <= intervals[0]


def test_a_page_changed_at_every_check_past_the_peak_gets_the_ceiling() -> None:
    bounds = Bounds(DAY, 3600, 14 * DAY)
    history = History(checks=24, changes=24, observed=24 * 6 * 3600)
    # ln(49) / 6 h = 0.65 an hour; with μ = 1 h, λμ = 0.65 > the peak 0.535.
    assert (
        next_interval(
            "adaptive",
            current=8 * DAY,
            history=history,
            changed=True,
            bounds=bounds,
            multiplier=3600.0,
        )
        == 14 * DAY
    )


@pytest.mark.parametrize(
    ("policy", "current", "changed", "checks", "expected"),
    [
        ("uniform", 5000.0, True, 3, DAY),
        ("off", 5000.0, True, 3, DAY),
        ("halving", 8 * 3600.0, True, 3, 4 * 3600.0),
        ("halving", 8 * 3600.0, False, 3, 16 * 3600.0),
        ("halving", 5000.0, True, 3, 3600.0),  # the floor
        ("halving", 10 * DAY, False, 3, 14 * DAY),  # the ceiling
        ("halving", 5 * DAY, None, 0, DAY),  # a first visit
        ("halving", 5 * DAY, None, 3, 5 * DAY),  # a failure keeps the interval
        ("adaptive", 5 * DAY, None, 0, DAY),
        ("adaptive", 5 * DAY, None, 3, 5 * DAY),
        ("adaptive", 5 * DAY, True, 3, 5 * DAY),  # no multiplier yet
        ("adaptive", 30 * DAY, False, 3, 14 * DAY),
    ],
)
def test_policies_by_hand(
    policy: str, current: float, changed: bool | None, checks: int, expected: float
) -> None:
    bounds = Bounds(DAY, 3600, 14 * DAY)
    history = History(checks, 1 if checks else 0, checks * DAY)
    assert (
        next_interval(
            policy,
            current=current,
            history=history,
            changed=changed,
            bounds=bounds,
            multiplier=None,
        )
        == expected
    )


def test_adaptive_moves_at_most_a_doubling_toward_its_target() -> None:
    bounds = Bounds(DAY, 3600, 14 * DAY)
    # A rate far past 1/μ: the target is the ceiling, two weeks away.
    history = History(checks=4, changes=2, observed=4 * DAY)
    interval = next_interval(
        "adaptive",
        current=DAY,
        history=history,
        changed=False,
        bounds=bounds,
        multiplier=1e9,
    )
    assert interval == 2 * DAY


def site_step(policy: str, current: float, factor: float) -> float:
    """One visit's interval for a page that never changed in 12 checks, under a
    multiplier that puts its own target at about 2.6 days."""
    return next_interval(
        policy,
        current=current,
        history=History(checks=12, changes=0, observed=12 * DAY),
        changed=False,
        bounds=Bounds(DAY, 3600, 14 * DAY),
        multiplier=0.05 * DAY,
        site_factor=factor,
    )


def test_the_site_factor_scales_adaptive_s_target_not_its_interval() -> None:
    """A lazy host's factor takes the page's interval to its own target times the
    factor and holds it there: applied to the target, it does not compound."""
    own = site_step("adaptive", 2 * DAY, 1.0)
    assert site_step("adaptive", own, 1.0) == pytest.approx(own)
    lazy = site_step("adaptive", own, 3.0)
    assert lazy == pytest.approx(2 * own)  # at most a doubling a visit
    settled = site_step("adaptive", lazy, 3.0)
    assert settled == pytest.approx(3 * own)
    assert site_step("adaptive", settled, 3.0) == pytest.approx(3 * own)
    assert site_step("adaptive", own, 0.5) == pytest.approx(own / 2)


@pytest.mark.parametrize("factor", [100.0, 0.01])
def test_the_site_factor_keeps_to_the_bounds(factor: float) -> None:
    interval = DAY
    for _ in range(20):
        interval = site_step("adaptive", interval, factor)
    assert interval == (14 * DAY if factor > 1 else 3600)


@pytest.mark.parametrize("policy", ["uniform", "halving"])
def test_uniform_and_halving_ignore_the_site_factor(policy: str) -> None:
    assert site_step(policy, 2 * DAY, 4.0) == site_step(policy, 2 * DAY, 1.0)


@pytest.mark.parametrize("factor", [0.0, -1.0, math.inf, math.nan])
def test_a_site_factor_that_cannot_be_is_neutral(factor: float) -> None:
    assert site_step("adaptive", 2 * DAY, factor) == site_step("adaptive", 2 * DAY, 1)


def test_unknown_policy_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="sometimes"):
        next_interval(
            "sometimes",
            current=DAY,
            history=History(),
            changed=None,
            bounds=WIDE,
            multiplier=None,
        )


@pytest.mark.parametrize(
    ("rate", "interval", "fresh", "mean_age"),
    [
        (0.0, 100.0, 1.0, 0.0),
        # λ = T = 1: F = 1 - 1/e; A = 1/2 - 1 + (1 - 1/e) = 0.1321206.
        (1.0, 1.0, 0.6321206, 0.1321206),
        # λ = 1/2, T = 4: F = (1 - e^-2)/2; A = 2 - 2 + (1 - e^-2)/(0.25 * 4).
        (0.5, 4.0, 0.4323324, 0.8646647),
        # λT = 1e-4: F ~ 1 - x/2, A ~ λT²/6 = 1e-4 * 100 / 6.
        (1e-5, 10.0, 0.99995, 1.666625e-4),
    ],
)
def test_freshness_and_age_closed_forms(
    rate: float, interval: float, fresh: float, mean_age: float
) -> None:
    assert freshness(rate, interval) == pytest.approx(fresh, rel=1e-6)
    assert age(rate, interval) == pytest.approx(mean_age, rel=1e-5, abs=1e-12)


def test_age_series_meets_the_closed_form() -> None:
    below, above = age(1.0, 0.000999999), age(1.0, 0.001000001)
    assert below == pytest.approx(above, rel=1e-4)


def test_pace_plans_for_the_fetches_the_crawl_makes_when_behind() -> None:
    first = Pace().update(now=100.0, visits=100, backlog=0, budget=10.0, lag=5.0)
    assert first.scale == 1.0  # one look tells no rate yet
    # 60 visits in 10 s: 6 a second, against uniform's 10; 100 due is more than
    # 5 s of fetching: behind, so adaptive plans for 6 a second.
    behind = first.update(now=110.0, visits=160, backlog=100, budget=10.0, lag=5.0)
    assert behind.scale == pytest.approx(0.6)
    # Caught up: the share grows back a tenth a look, never past all of it.
    caught_up = behind.update(now=120.0, visits=220, backlog=0, budget=10.0, lag=5.0)
    assert caught_up.scale == pytest.approx(0.66)
    full = Pace(scale=0.99, visits=0, at=0.0)
    assert full.update(now=1.0, visits=1, backlog=0, budget=10.0, lag=5.0).scale == 1.0
    # A small backlog (under lag seconds of fetching) is not behind.
    near = first.update(now=110.0, visits=160, backlog=29, budget=10.0, lag=5.0)
    assert near.scale == 1.0
    # Nothing fetched at all: no rate to plan for, the share is kept.
    stalled = behind.update(now=130.0, visits=160, backlog=500, budget=10.0, lag=5.0)
    assert stalled.scale == pytest.approx(0.66)


def test_a_smaller_pace_plans_longer_intervals() -> None:
    pages = [
        (History(checks=10, changes=changes, observed=10 * DAY), WIDE)
        for changes in (0, 1, 3, 5, 8)
    ]
    full, half = multiplier_for(pages), multiplier_for(pages, scale=0.5)
    assert full is not None
    assert half is not None
    spend = [
        sum(1 / (target_interval(h, mu, b) or b.interval) for h, b in pages)
        for mu in (full, half)
    ]
    budget = len(pages) / DAY
    assert spend[0] <= budget * 1.0001
    assert spend[1] <= budget * 0.5 * 1.0001
    assert spend[1] < spend[0]


@pytest.mark.parametrize(
    ("value", "on"),
    [(None, False), ("", False), ("off", False), (" Off ", False), ("Uniform", True)],
)
def test_revisits_are_on_as_the_config_reads_the_policy(value, on) -> None:
    assert revisits_on({"REVISIT_POLICY": value}) is on
    if value:
        assert config(REVISIT_POLICY=value).enabled is on
