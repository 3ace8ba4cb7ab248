"""bench/freshsim.py: a small seeded simulation meets the issue's targets, and the
simulator's optimum is the freshest allocation it knows."""

from __future__ import annotations

import math
import random

import pytest

from bench.freshsim import (
    DAY,
    HOUR,
    Run,
    optimum,
    page_freshness,
    simulate,
    static_rates,
)
from crawler.policy.revisitconfig import Bounds

PAGES = 150
# A static-heavy mix (60% never change) at a budget of one fetch a page every 12 h:
# uniform wastes most of it on static pages, as in the Web-like site.
BOUNDS = Bounds(interval=DAY / 2, min_interval=HOUR, max_interval=14 * DAY)


@pytest.fixture(scope="module")
def results() -> dict[str, float]:
    rates = static_rates(PAGES, random.Random(3))
    run = Run(
        rates=rates,
        budget=PAGES / BOUNDS.interval,
        bounds=BOUNDS,
        warmup=20 * DAY,
        measure=20 * DAY,
        refresh=BOUNDS.interval,
        seed=3,
    )
    found = {
        policy: simulate(run, policy).freshness
        for policy in ("uniform", "halving", "adaptive")
    }
    found["optimum"] = simulate(
        run, "fixed", optimum(rates, run.budget, None)
    ).freshness
    return found


def test_adaptive_staleness_is_at_most_six_tenths_of_uniform(
    results: dict[str, float],
) -> None:
    assert 1 - results["adaptive"] <= 0.6 * (1 - results["uniform"])


def test_adaptive_is_no_worse_than_halving(results: dict[str, float]) -> None:
    assert results["adaptive"] >= results["halving"]


def test_adaptive_is_within_five_hundredths_of_the_optimum(
    results: dict[str, float],
) -> None:
    assert results["adaptive"] >= results["optimum"] - 0.05


def test_optimum_is_at_least_as_fresh_as_every_policy(
    results: dict[str, float],
) -> None:
    # The simulated optimum has sampling noise too: a margin of 0.005.
    for policy in ("uniform", "halving", "adaptive"):
        assert results["optimum"] >= results[policy] - 0.005


def test_optimum_spends_the_budget_and_beats_uniform_analytically() -> None:
    rates = [0.0, 1 / (30 * DAY), 1 / DAY, 1 / HOUR, 10 / HOUR]
    budget = len(rates) / DAY
    intervals = optimum(rates, budget, None)
    spent = sum(0.0 if math.isinf(t) else 1 / t for t in intervals)
    assert spent == pytest.approx(budget, rel=1e-3)
    assert math.isinf(intervals[0])  # a static page is never fetched again
    assert math.isinf(intervals[4])  # ten changes an hour: not worth chasing
    best = sum(map(page_freshness, rates, intervals))
    uniform = sum(page_freshness(rate, DAY) for rate in rates)
    assert best > uniform


def test_simulated_uniform_meets_its_closed_form() -> None:
    # Pages changing once a day, each fetched daily: F = 1 - 1/e = 0.632.
    run = Run(
        rates=[1 / DAY] * 40,
        budget=40 / DAY,
        bounds=BOUNDS,
        warmup=2 * DAY,
        measure=200 * DAY,
        refresh=DAY,
        seed=5,
    )
    assert simulate(run, "uniform").freshness == pytest.approx(1 - 1 / math.e, abs=0.01)
