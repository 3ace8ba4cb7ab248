"""Contexts in turn: each gets RENDER_MAX_PAGES_PER_CONTEXT pages, then is closed
as soon as none of its pages is open; never closed under an open page."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler.render.contexts import ContextRota


def test_a_context_takes_its_pages_then_the_next_one_does():
    rota = ContextRota(2)
    assert rota.take() == ("render-0", [])
    assert rota.take() == ("render-0", [])
    assert rota.release("render-0") is False
    assert rota.release("render-0") is False  # still current: not closed yet
    assert rota.take() == ("render-1", ["render-0"])  # idle and retired: close it


def test_a_retired_context_is_closed_by_its_last_page():
    rota = ContextRota(1)
    first, _ = rota.take()
    second, retired = rota.take()
    assert (first, second, retired) == ("render-0", "render-1", [])
    assert rota.release(second) is False  # current
    assert rota.release(first) is True  # retired, and its last page


def test_pages_per_context_must_be_positive():
    with pytest.raises(ValueError, match="pages_per_context"):
        ContextRota(0)


@given(
    limit=st.integers(min_value=1, max_value=5),
    steps=st.lists(st.booleans(), min_size=1, max_size=60),
    seed=st.integers(min_value=0, max_value=1000),
)
def test_no_context_is_closed_with_a_page_open_nor_gets_too_many(limit, steps, seed):
    rng = random.Random(seed)
    rota = ContextRota(limit)
    open_pages: list[str] = []
    given_to: dict[str, int] = {}
    closed: set[str] = set()
    for take in steps:
        if take or not open_pages:
            name, retired = rota.take()
            assert name not in closed
            for old in retired:
                assert old not in open_pages
                closed.add(old)
            open_pages.append(name)
            given_to[name] = given_to.get(name, 0) + 1
            assert given_to[name] <= limit
        else:
            name = open_pages.pop(rng.randrange(len(open_pages)))
            if rota.release(name):
                assert name not in open_pages
                closed.add(name)
    for name in set(given_to) - closed - {rota.current}:
        assert name in open_pages  # retired ones are closed once their pages are
