"""Simulated freshness of the revisit policies under one fetch budget (no network).

``python -m bench.freshsim [--pages 500] [--budget B] [--mix web] [--seed 1]``

N pages change as Poisson processes with known rates (a Web-like mix: many never or
rarely change, some often, a few very fast). A crawler may fetch B pages a second:
each fetch happens as soon as the budget allows once its page is due, overdue pages
served earliest-due first. Each policy is driven through
``crawler.policy.revisit`` exactly as the crawler drives it: after each visit the
page's History observes the check and ``next_interval`` gives the next interval;
adaptive's multiplier is refreshed from every page every ``refresh`` seconds. The
time-averaged freshness and age are measured over a window after a warm-up.

The optimum (Cho and Garcia-Molina's allocation for the known rates under the same
budget) is computed here on its own, by direct search on each page's freshness
rather than through ψ, so that it checks the policy module's derivation.
"""

from __future__ import annotations

import argparse
import heapq
import math
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from crawler.policy.changehistory import History
from crawler.policy.freshness import multiplier_for
from crawler.policy.revisit import next_interval
from crawler.policy.revisitconfig import Bounds

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

DAY = 86400.0
HOUR = 3600.0
GOLDEN = (math.sqrt(5) - 1) / 2


def web_rates(n: int, rng: random.Random) -> list[float]:
    """Changes a second: 30% never change; the rest log-uniform from once a year
    to once an hour (about a quarter of all pages change daily or faster)."""
    low, high = 1 / (365 * DAY), 1 / HOUR
    return [
        0.0
        if rng.random() < 0.3
        else math.exp(rng.uniform(math.log(low), math.log(high)))
        for _ in range(n)
    ]


def news_rates(n: int, rng: random.Random) -> list[float]:
    """A fast-heavy mix: 10% static, 60% once a month to once a day, 30% from once
    a day to every ten minutes."""
    rates = []
    for _ in range(n):
        draw = rng.random()
        if draw < 0.1:
            rates.append(0.0)
        elif draw < 0.7:
            rates.append(
                math.exp(rng.uniform(math.log(1 / (30 * DAY)), -math.log(DAY)))
            )
        else:
            rates.append(math.exp(rng.uniform(-math.log(DAY), -math.log(600.0))))
    return rates


def static_rates(n: int, rng: random.Random) -> list[float]:
    """A static-heavy mix (.gov-like): 60% never change, 35% once a year to once a
    week, 5% once a day to once an hour."""
    rates = []
    for _ in range(n):
        draw = rng.random()
        if draw < 0.6:
            rates.append(0.0)
        elif draw < 0.95:
            rates.append(
                math.exp(rng.uniform(math.log(1 / (365 * DAY)), -math.log(7 * DAY)))
            )
        else:
            rates.append(math.exp(rng.uniform(-math.log(DAY), -math.log(HOUR))))
    return rates


MIXES: dict[str, Callable[[int, random.Random], list[float]]] = {
    "web": web_rates,
    "news": news_rates,
    "static": static_rates,
}


def page_freshness(rate: float, interval: float) -> float:
    """(1 - e^{-λT}) / (λT); 0 for a changing page never synced again."""
    if rate <= 0:
        return 1.0
    if math.isinf(interval):
        return 0.0
    return (1 - math.exp(-rate * interval)) / (rate * interval)


def _best_frequency(rate: float, mu: float, low: float, high: float) -> float:
    """The f in [low, high] that maximizes F(f) - μ f by golden-section search on
    log f (F(f) = (f/λ)(1 - e^{-λ/f}) is concave, so unimodal in log f too)."""

    def gain(f: float) -> float:
        return 0.0 if f <= 0 else page_freshness(rate, 1 / f) - mu * f

    if rate <= 0:
        return low
    a, b = math.log(max(low, high * 1e-12)), math.log(high)
    for _ in range(60):
        c, d = b - GOLDEN * (b - a), a + GOLDEN * (b - a)
        if gain(math.exp(c)) >= gain(math.exp(d)):
            b = d
        else:
            a = c
    best = math.exp((a + b) / 2)
    return low if low <= 0 and gain(best) <= 0 else best


def optimum(
    rates: Sequence[float], budget: float, bounds: Bounds | None
) -> list[float]:
    """The intervals that maximize the mean freshness with Σ 1/T = budget
    (inf: never again). *bounds* None is Cho's unbounded optimum; else every
    interval stays in [min_interval, max_interval]."""
    low = 0.0 if bounds is None else 1 / bounds.max_interval
    high = budget if bounds is None else 1 / bounds.min_interval

    def frequencies(mu: float) -> list[float]:
        return [_best_frequency(rate, mu, low, high) for rate in rates]

    if sum(frequencies(0.0)) <= budget:
        chosen = frequencies(0.0)
    else:
        mu_low, mu_high = 0.0, 1.0  # μ: freshness per fetch a second (seconds)
        for _ in range(200):  # up to 4^200: past any budget a float can state
            if sum(frequencies(mu_high)) <= budget:
                break
            mu_low, mu_high = mu_high, mu_high * 4
        for _ in range(40):
            middle = (mu_low + mu_high) / 2
            if sum(frequencies(middle)) > budget:
                mu_low = middle
            else:
                mu_high = middle
        chosen = frequencies(mu_high)
    return [math.inf if f <= 0 else 1 / f for f in chosen]


@dataclass
class Page:
    rate: float
    interval: float
    last: float = 0.0
    change_at: float = math.inf
    history: History = field(default_factory=History)
    visited: bool = False


@dataclass(frozen=True)
class Result:
    label: str
    freshness: float
    age: float  # seconds
    fetches: int


def _window_overlap(start: float, end: float, window: tuple[float, float]) -> float:
    return max(0.0, min(end, window[1]) - max(start, window[0]))


def _stale_age(change: float, end: float, window: tuple[float, float]) -> float:
    """∫ (u - change) du over [change, end] ∩ window."""
    a, b = max(change, window[0]), min(end, window[1])
    return 0.0 if b <= a else ((b - change) ** 2 - (a - change) ** 2) / 2


@dataclass
class Meter:
    window: tuple[float, float]
    fresh: float = 0.0
    age: float = 0.0

    def close(self, page: Page, end: float) -> None:
        """Account for *page*'s copy from its last sync to *end*."""
        self.fresh += _window_overlap(page.last, min(page.change_at, end), self.window)
        self.age += _stale_age(page.change_at, end, self.window)


@dataclass(frozen=True)
class Run:
    rates: Sequence[float]
    budget: float  # fetches a second
    bounds: Bounds
    warmup: float
    measure: float
    refresh: float  # seconds between two refreshes of adaptive's multiplier
    seed: int


def simulate(run: Run, policy: str, fixed: Sequence[float] | None = None) -> Result:
    """One policy over *run*; *fixed* gives each page a fixed interval instead."""
    rng = random.Random(run.seed)
    pages = [Page(rate, run.bounds.interval) for rate in run.rates]
    window = (run.warmup, run.warmup + run.measure)
    meter = Meter(window)
    queue = [(rng.uniform(0, run.bounds.interval), i) for i in range(len(pages))]
    heapq.heapify(queue)
    clock, multiplier, next_refresh, fetches = -math.inf, None, run.refresh, 0

    def decide(page: Page, changed: bool | None) -> float:
        if fixed is not None:
            return fixed[index]
        return next_interval(
            policy,
            current=page.interval,
            history=page.history,
            changed=changed,
            bounds=run.bounds,
            multiplier=multiplier,
        )

    while queue:
        due, index = heapq.heappop(queue)
        clock = max(due, clock + 1 / run.budget)
        if clock > window[1]:
            break
        if policy == "adaptive" and clock >= next_refresh:
            multiplier = multiplier_for([(p.history, run.bounds) for p in pages])
            next_refresh = clock + run.refresh
        page, fetches = pages[index], fetches + 1
        _visit(page, clock, meter, decide)
        page.visited = True
        page.change_at = clock + rng.expovariate(page.rate) if page.rate else math.inf
        if math.isfinite(page.interval):
            heapq.heappush(queue, (clock + page.interval, index))
    for page in pages:
        meter.close(page, window[1])
    total = len(pages) * run.measure
    return Result(policy, meter.fresh / total, meter.age / total, fetches)


def _visit(
    page: Page, now: float, meter: Meter, decide: Callable[[Page, bool | None], float]
) -> None:
    """A fetch of *page* at *now*: what the crawler's record step does; *decide*
    gives the next interval from the page (its History updated) and the outcome."""
    changed: bool | None = None
    if page.visited:
        meter.close(page, now)
        changed = page.change_at <= now
        page.history = page.history.observe(changed=changed, elapsed=now - page.last)
    page.interval = decide(page, changed)
    page.last = now


def compare(run: Run) -> list[tuple[Result, float | None]]:
    """Each policy's simulated result with its analytic freshness where known."""
    n = len(run.rates)
    rows: list[tuple[Result, float | None]] = []
    for policy in ("uniform", "halving", "adaptive"):
        rows.append((simulate(run, policy), None))
    rows[0] = (rows[0][0], _mean_freshness(run.rates, [run.bounds.interval] * n))
    for label, limits in (("optimum", None), ("optimum-bounded", run.bounds)):
        intervals = optimum(run.rates, run.budget, limits)
        result = simulate(run, "fixed", intervals)
        rows.append(
            (
                Result(label, result.freshness, result.age, result.fetches),
                _mean_freshness(run.rates, intervals),
            )
        )
    return rows


def _mean_freshness(rates: Sequence[float], intervals: Sequence[float]) -> float:
    return sum(map(page_freshness, rates, intervals)) / len(rates)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=500)
    parser.add_argument(
        "--budget", type=float, help="fetches a second (default: pages a day)"
    )
    parser.add_argument("--mix", choices=sorted(MIXES), default="web")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--min-interval", type=float, default=HOUR)
    parser.add_argument("--max-interval", type=float, default=14 * DAY)
    parser.add_argument("--warmup-days", type=float, default=60.0)
    parser.add_argument("--measure-days", type=float, default=60.0)
    parser.add_argument("--refresh-days", type=float, default=1.0)
    args = parser.parse_args(argv)
    budget = args.budget or args.pages / DAY
    interval = args.pages / budget
    bounds = Bounds(
        interval, min(args.min_interval, interval), max(args.max_interval, interval)
    )
    run = Run(
        rates=MIXES[args.mix](args.pages, random.Random(args.seed)),
        budget=budget,
        bounds=bounds,
        warmup=args.warmup_days * DAY,
        measure=args.measure_days * DAY,
        refresh=args.refresh_days * DAY,
        seed=args.seed,
    )
    print(
        f"mix={args.mix} pages={args.pages} budget={budget:.6g}/s "
        f"interval={interval / HOUR:.3g} h seed={args.seed}"
    )
    print(
        f"{'policy':<16} {'fresh':>6} {'stale':>6} {'age h':>7} {'analytic':>8} {'fetches':>8}"
    )
    for result, analytic in compare(run):
        shown = "" if analytic is None else f"{analytic:.3f}"
        print(
            f"{result.label:<16} {result.freshness:6.3f} {1 - result.freshness:6.3f} "
            f"{result.age / HOUR:7.2f} {shown:>8} {result.fetches:8d}"
        )


if __name__ == "__main__":
    main()
