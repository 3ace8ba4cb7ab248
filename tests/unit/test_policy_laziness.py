"""Unit tests for crawler/policy/laziness.py (a host's factor on its revisit
intervals, the settings) and changehistory.small_change (a lazy page's revisit
that moved its text a few SimHash bits counts as unchanged)."""

from __future__ import annotations

import itertools
import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler import defaults
from crawler.policy.changehistory import CHANGE_THRESHOLD, small_change
from crawler.policy.laziness import (
    LazinessConfig,
    site_factors,
    site_interval_factor,
)
from tests.unit.properties import PROPERTY

CONFIG = LazinessConfig(
    change_threshold=6, site_min_factor=0.5, site_max_factor=4.0, site_min_visits=20
)
PAGES = st.lists(st.tuples(st.integers(-5, 200), st.integers(-5, 200)), max_size=30)


# --- small_change -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "threshold", "small"),
    [
        (0b0000, 0b0111, 3, True),  # three bits: within
        (0b0000, 0b1111, 3, False),  # four bits: a change
        (0xFF, 0xFF, 3, True),  # same text, other bytes
        (0xFF, 0xFF, 0, False),  # 0: every byte change counts
        (0b0, 0b1, 0, False),
        (None, 0xFF, 3, False),  # no fingerprint before: the body hash decides
    ],
)
def test_small_change(old: int | None, new: int, threshold: int, small: bool) -> None:
    assert small_change(old, new, threshold) is small


# --- site_interval_factor -----------------------------------------------------------


def test_too_few_revisits_are_neutral() -> None:
    assert site_interval_factor([(0, 10), (0, 9)], CONFIG) == 1.0
    assert site_interval_factor([], CONFIG) == 1.0


def test_a_host_whose_pages_never_change_drifts_to_the_maximum() -> None:
    assert site_interval_factor([(0, 10), (0, 10)], CONFIG) == 4.0


def test_a_host_whose_pages_change_at_every_revisit_comes_to_the_minimum() -> None:
    assert site_interval_factor([(10, 10), (10, 10)], CONFIG) == 0.5


def test_half_the_revisits_changed_is_a_little_longer() -> None:
    """X = 10 of n = 20: r = -ln(10.5 / 20.5) = 0.669 changes an interval, so the
    interval that sees one change a revisit is 1 / 0.669 = 1.4947 of it."""
    factor = site_interval_factor([(5, 10), (5, 10)], CONFIG)
    assert factor == pytest.approx(1 / math.log(20.5 / 10.5))
    assert factor == pytest.approx(1.4947, abs=1e-4)


def test_three_quarters_changed_is_shorter() -> None:
    """X = 15 of 20: r = ln(20.5 / 5.5) = 1.316, factor 0.760."""
    assert site_interval_factor([(15, 20)], CONFIG) == pytest.approx(0.7600, abs=1e-4)


def test_the_histories_are_pooled_not_averaged() -> None:
    """One busy page among lazy ones moves the host as its share of revisits."""
    pooled = site_interval_factor([(10, 10)] + [(0, 10)] * 3, CONFIG)
    assert pooled == pytest.approx(1 / math.log(40.5 / 30.5))


def test_impossible_counts_are_clamped() -> None:
    """More changes than visits is as many; negative counts are none."""
    assert site_interval_factor([(50, 20)], CONFIG) == site_interval_factor(
        [(20, 20)], CONFIG
    )
    assert site_interval_factor([(-3, 20), (4, -7)], CONFIG) == 4.0


@PROPERTY
@given(PAGES)
def test_the_factor_stays_within_its_bounds(pages: list[tuple[int, int]]) -> None:
    assert 0.5 <= site_interval_factor(pages, CONFIG) <= 4.0


@PROPERTY
@given(PAGES, st.data())
def test_more_changes_never_lengthen_the_interval(
    pages: list[tuple[int, int]], data: st.DataObject
) -> None:
    """Monotone in the change rate: one more change on one page (with the same
    visits) never gives a longer factor."""
    if not pages:
        return
    index = data.draw(st.integers(0, len(pages) - 1))
    changes, visits = pages[index]
    busier = [*pages]
    busier[index] = (changes + 1, visits)
    assert site_interval_factor(busier, CONFIG) <= site_interval_factor(pages, CONFIG)


def test_more_changes_shorten_strictly_between_the_bounds() -> None:
    """The control for the property: between the bounds the factor does fall."""
    factors = [site_interval_factor([(x, 20)], CONFIG) for x in range(6, 15)]
    assert all(a > b for a, b in itertools.pairwise(factors))


def test_site_factors_keep_only_the_hosts_that_move() -> None:
    """One pooled row a host (the URL library's GROUP BY); neutral hosts left out,
    windowed (fractional) counts taken as they are."""
    rows = [
        ("lazy.test", 0.0, 48.0),
        ("busy.test", 46.0, 48.0),
        ("new.test", 0.0, 5.0),  # too few revisits: neutral
        ("some.test", 17.5, 48.0),  # about one change a revisit interval
    ]
    factors = site_factors(rows, CONFIG)
    assert factors == {
        "lazy.test": 4.0,
        "busy.test": 0.5,
        "some.test": pytest.approx(1 / math.log(48.5 / 31.0)),
    }
    assert site_factors([], CONFIG) == {}


# --- settings -----------------------------------------------------------------------


def test_the_defaults_are_the_documented_ones() -> None:
    assert LazinessConfig.from_settings(vars(defaults)) == LazinessConfig(
        change_threshold=6, site_min_factor=0.5, site_max_factor=4.0, site_min_visits=20
    )
    assert defaults.REVISIT_CHANGE_THRESHOLD == CHANGE_THRESHOLD


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("REVISIT_CHANGE_THRESHOLD", -1, "REVISIT_CHANGE_THRESHOLD must be in [0, 64]"),
        (
            "REVISIT_CHANGE_THRESHOLD",
            "3.5",
            "REVISIT_CHANGE_THRESHOLD must be an integer",
        ),
        ("REVISIT_SITE_MIN_FACTOR", 0, "REVISIT_SITE_MIN_FACTOR must be in (0, 1]"),
        ("REVISIT_SITE_MIN_FACTOR", 1.5, "REVISIT_SITE_MIN_FACTOR must be in (0, 1]"),
        ("REVISIT_SITE_MAX_FACTOR", 0.9, "REVISIT_SITE_MAX_FACTOR must be >= 1"),
        ("REVISIT_SITE_MIN_VISITS", 0, "REVISIT_SITE_MIN_VISITS must be >= 1 revisits"),
    ],
)
def test_a_bad_setting_is_named_in_one_line(
    name: str, value: object, message: str
) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        LazinessConfig.from_settings({**vars(defaults), name: value})
