"""The importance formula's pure parts: credits, bands and the default URL scorer."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler.policy.importance import (
    DAMPING,
    DEPTH_DECAY,
    EXTERNAL_WEIGHT,
    HOST_SHARE,
    ImportanceConfig,
    LinkCredit,
    band_floor,
    band_of,
    check_config,
    link_credit,
)
from crawler.policy.order import PRIORITY_BANDS
from crawler.policy.urlimportance import url_importance


def test_more_important_ranks_in_a_lower_band() -> None:
    values = [1e6, 10.0, 1.0, 0.5, 0.1, 1e-3, 1e-9]
    bands = [band_of(v) for v in values]
    assert bands == sorted(bands)
    assert len(set(bands)) == len(bands)


def test_a_band_is_a_four_percent_step() -> None:
    assert band_of(1.0) - band_of(2.0) == 16  # sixteen bands a doubling
    assert band_of(1.0) == band_of(1.04)
    assert band_of(1.0) > band_of(1.05)


@pytest.mark.parametrize("value", [0.0, -1.0, math.nan, -math.inf])
def test_nothing_or_nonsense_ranks_last(value: float) -> None:
    assert band_of(value) == PRIORITY_BANDS - 1


def test_bands_are_clamped() -> None:
    assert band_of(math.inf) == 0
    assert band_of(2.0**200) == 0
    assert band_of(2.0**-200) == PRIORITY_BANDS - 1


@given(st.floats(min_value=2.0**-30, max_value=2.0**30))
def test_a_band_floor_ranks_in_its_band(value: float) -> None:
    band = band_of(value)
    assert band_floor(band) <= value * (1 + 1e-12)
    assert band_of(band_floor(band)) == band


def test_every_band_floor_ranks_in_its_own_band() -> None:
    """A URL ranked again from its band alone (a lease put back, an entry back from
    the spill) keeps its band: log2 of a floor may come out a hair under it."""
    sunk = [b for b in range(PRIORITY_BANDS) if band_of(band_floor(b)) != b]
    assert sunk == []


def test_count_gives_one_a_link() -> None:
    assert link_credit("count", 0.7, 3, 10, external=True) == LinkCredit(1.0)


def test_opic_splits_the_backlink_importance_evenly() -> None:
    assert link_credit("opic", 0.6, 2, 3, external=False).url == pytest.approx(0.2)


def test_weighted_is_a_floor_plus_a_share_decaying_with_depth() -> None:
    credit = link_credit("weighted", 2.0, 0, 4, external=False)
    assert credit == LinkCredit(pytest.approx(1 + DAMPING * 2.0 / 4))
    deeper = link_credit("weighted", 2.0, 3, 4, external=False)
    assert deeper.url == pytest.approx(DEPTH_DECAY**3 * credit.url)


def test_a_link_from_another_host_counts_for_the_url_and_its_host() -> None:
    inside = link_credit("weighted", 1.0, 1, 5, external=False)
    outside = link_credit("weighted", 1.0, 1, 5, external=True)
    assert outside.url == pytest.approx(EXTERNAL_WEIGHT * inside.url)
    assert outside.host == pytest.approx(HOST_SHARE * outside.url)
    assert inside.host == 0.0


@given(
    st.sampled_from(["weighted", "count", "opic"]),
    st.floats(allow_nan=True, allow_infinity=False),
    st.integers(min_value=-5, max_value=10**6),
    st.integers(min_value=-5, max_value=10**6),
    st.booleans(),
)
def test_credits_are_finite_and_not_negative_for_any_page(
    mode: str, backlinks: float, depth: int, links: int, external: bool
) -> None:
    credit = link_credit(mode, backlinks, depth, links, external)
    assert 0 <= credit.url < math.inf
    assert 0 <= credit.host < math.inf


def test_the_formula_weighs_its_two_terms() -> None:
    config = ImportanceConfig(alpha=2.0, beta=0.5)
    assert config.first(0.25, 0.8) == pytest.approx(0.9)
    assert config.more(0.25) == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("alpha", "beta", "mode", "message"),
    [
        (-1.0, 0.1, "weighted", "IMPORTANCE_ALPHA must be a finite number >= 0"),
        (1.0, math.inf, "weighted", "IMPORTANCE_BETA must be a finite number >= 0"),
        (0.0, 0.0, "weighted", "cannot both be 0"),
        (1.0, 0.1, "pagerank", "IMPORTANCE_BACKLINKS must be one of weighted"),
    ],
)
def test_a_bad_setting_is_one_line(
    alpha: float, beta: float, mode: str, message: str
) -> None:
    with pytest.raises(ValueError, match=message) as raised:
        check_config(alpha, beta, mode)
    assert "\n" not in str(raised.value)


def test_entry_points_score_above_deep_pages() -> None:
    ranked = [
        "http://example.com/",
        "http://example.com/docs/index.html",
        "http://example.com/docs/guide/install.html",
        "http://example.com/a/b/c/d/e/f/page.html?session=1&sort=asc",
    ]
    scores = [url_importance(url) for url in ranked]
    assert scores == sorted(scores, reverse=True)
    assert len(set(scores)) == len(scores)


def test_a_generic_top_level_domain_scores_higher() -> None:
    assert url_importance("http://example.com/x.html") > url_importance(
        "http://example.zz/x.html"
    )


@given(st.text(max_size=300))
def test_any_text_scores_between_0_and_1(text: str) -> None:
    assert 0.0 <= url_importance(text) <= 1.0
    assert 0.0 <= url_importance("http://" + text) <= 1.0
