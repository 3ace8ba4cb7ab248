"""Unit tests for crawler/policy/siteclass.py: what auto makes of a host's history
(portal: bfs; specialised: dfs), the moving average over crawls, the minimum of
evidence, and counting the links that leave a page's site."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler.policy.siteclass import (
    MIN_LINKS,
    MIN_PAGES,
    WEIGHT,
    Observation,
    SiteEvidence,
    SiteHistory,
    classify,
    leaving_links,
)
from tests.unit.properties import PROPERTY

PORTAL = Observation(pages=40, links=800, leaving=600, depth=2)
SPECIALISED = Observation(pages=300, links=9000, leaving=90, depth=9)
FLAT = Observation(pages=40, links=400, leaving=20, depth=1)  # few leave, shallow
DOCS = Observation(pages=500, links=9000, leaving=2340, depth=2)  # 26% leave
DEEP_PORTAL = Observation(pages=40, links=400, leaving=200, depth=12)  # half leave


@pytest.mark.parametrize(
    ("observation", "strategy", "why"),
    [
        (PORTAL, "bfs", "75% links leave, depth 2"),
        (SPECIALISED, "dfs", "1% links leave, depth 9"),
        (FLAT, "bfs", "5% links leave, depth 1"),
        (DOCS, "dfs", "26% links leave, depth 2"),
        (DEEP_PORTAL, "bfs", "50% links leave, depth 12"),
    ],
)
def test_portals_go_breadth_first_and_deep_specialised_sites_deepest_first(
    observation, strategy, why
):
    found = classify(SiteHistory(), observation)
    assert (found.strategy, found.why, found.known) == (strategy, why, True)


@pytest.mark.parametrize(
    "observation",
    [
        Observation(MIN_PAGES - 1, 9000, 0, 9),
        Observation(300, MIN_LINKS - 1, 0, 9),
        Observation(0, 0, 0, 0),
    ],
)
def test_too_little_evidence_keeps_the_default(observation):
    found = classify(SiteHistory(), observation)
    assert found.strategy == "bfs"
    assert not found.known
    assert found.why == f"{observation.pages} pages, too few to tell"
    assert SiteHistory().folded(observation) == SiteHistory()


def test_the_history_of_earlier_crawls_classifies_a_host_this_crawl_barely_saw():
    history = SiteHistory().folded(SPECIALISED)
    assert classify(history, Observation(3, 10, 9, 0)).strategy == "dfs"
    assert classify(history).strategy == "dfs"


def test_the_moving_average_weighs_the_newest_crawl_by_its_weight():
    history = SiteHistory().folded(PORTAL)
    assert (history.crawls, history.pages, history.share) == (1, 40, 0.75)
    history = history.folded(SPECIALISED)
    assert history.crawls == 2
    assert history.pages == 340
    assert history.share == pytest.approx(WEIGHT * 0.01 + (1 - WEIGHT) * 0.75)
    assert history.depth == pytest.approx(WEIGHT * 9 + (1 - WEIGHT) * 2)


def test_a_site_that_changed_is_reclassified_within_a_few_crawls():
    history = SiteHistory().folded_all([PORTAL] * 5)
    assert classify(history).strategy == "bfs"
    crawls = 0
    while classify(history).strategy == "bfs":
        history = history.folded(SPECIALISED)
        crawls += 1
        assert crawls < 10
    assert crawls == 1  # 75% -> 38% links leave, depth 2 -> 5.5


def test_evidence_sums_itself_up():
    evidence = SiteEvidence.of(pages=5, links=10, leaving=3, depths={4: 2, 7: 1, 9: 0})
    assert evidence.span() == 3  # depth 9 has no page
    assert evidence.observation() == Observation(5, 10, 3, 3)
    assert SiteEvidence().span() == 0


def test_hostile_counts_are_made_harmless():
    evidence = SiteEvidence.of(pages=-5, links=3, leaving=99, depths={-4: 1, 10**9: 1})
    assert (evidence.pages, evidence.links, evidence.leaving) == (0, 3, 3)
    assert evidence.depths == ((0, 1), (127, 1))
    assert Observation(0, 0, 0, 0).share == 0.0


@PROPERTY
@given(
    st.lists(
        st.builds(
            Observation,
            st.integers(0, 10**6),
            st.integers(0, 10**6),
            st.integers(0, 10**6),
            st.integers(0, 127),
        ),
        max_size=8,
    )
)
def test_any_history_gives_a_strategy_and_averages_within_bounds(observations):
    observations = [
        Observation(o.pages, o.links, min(o.leaving, o.links), o.depth)
        for o in observations
    ]
    history = SiteHistory().folded_all(observations)
    assert history.crawls == sum(o.counts for o in observations)
    if history.share is not None:
        assert 0.0 <= history.share <= 1.0
        assert history.depth is not None
        assert 0.0 <= history.depth <= 127
    assert classify(history).strategy in ("bfs", "dfs")


@pytest.mark.parametrize(
    ("page", "links", "leaving"),
    [
        ("https://docs.example.org/a/", ["https://docs.example.org/b"] * 5, 0),
        ("https://docs.example.org/", ["https://www.example.org/"], 0),  # same site
        ("https://docs.example.org/", ["https://docs.example.org.evil.com/"], 1),
        ("https://docs.example.org/", ["https://docs.example.org?q=1"], 0),
        (
            "https://a.example.co.uk/",
            ["https://b.example.co.uk/", "https://x.co.uk/"],
            1,
        ),
        ("http://127.0.0.2:8000/", ["http://127.0.0.2:9000/", "http://127.0.0.3/"], 1),
        ("https://docs.example.org/", ["mailto:x@y", "http://[bad/", "/relative"], 0),
        ("mailto:x@y", ["https://a.org/"], 0),  # a page without a host: nothing
    ],
)
def test_links_leaving_the_site_are_those_to_another_registered_domain(
    page, links, leaving
):
    assert leaving_links(page, links) == leaving
