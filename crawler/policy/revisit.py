"""When to fetch a page again: uniform, adaptive (by its change rate) or halving.

Pages change as Poisson processes (Cho and Garcia-Molina). ``next_interval`` is
the interval after a visit under each policy: ``uniform`` keeps the bounds'
interval; ``adaptive`` moves toward the freshness-optimal interval of the page's
estimated change rate (``crawler.policy.changehistory`` keeps the history and the
estimate, ``crawler.policy.freshness`` the optimum under uniform's budget,
``crawler.policy.revisitpace`` the share of that budget the crawl can spend);
``halving`` is StormCrawler's rule (halve on change, double otherwise), kept as a
baseline. The settings are read by ``crawler.policy.revisitconfig``. Pure: no
clock, no I/O.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from crawler.policy.freshness import target_interval
from crawler.policy.revisitconfig import POLICIES

if TYPE_CHECKING:
    from crawler.policy.changehistory import History
    from crawler.policy.revisitconfig import Bounds

# Most an adaptive interval moves in one visit (x or /): one noisy estimate from
# a few checks cannot throw a page to the floor or the ceiling, and the interval
# still reaches any target within a few visits (the simulator: 2 beats 4 and no
# limit, most of all in the first days of a crawl).
STEP = 2.0


def next_interval(  # noqa: PLR0913 (COMMON.md's interface, keyword-only)
    policy: str,
    *,
    current: float,
    history: History,
    changed: bool | None,
    bounds: Bounds,
    multiplier: float | None,
    site_factor: float = 1.0,
) -> float:
    """The interval after a visit, *history* already holding it. *changed* None is
    a first visit (no checks yet: the bounds' interval) or a failed one (the current
    interval, clamped). Adaptive moves at most ``STEP`` x toward its target, the
    page's own optimum times *site_factor* (its host's,
    ``crawler.policy.laziness``): the factor scales where the interval goes, not
    the interval itself, so it does not compound from one visit to the next.
    Uniform and halving ignore it (a fixed interval; a baseline)."""
    if policy not in POLICIES:
        raise ValueError(f"unknown revisit policy {policy!r}")
    valid = math.isfinite(current) and current > 0
    if (
        policy in ("off", "uniform")
        or not valid
        or (changed is None and history.checks <= 0)
    ):
        return bounds.interval
    current = bounds.clamp(current)
    if changed is None:
        return current
    if policy == "halving":
        return bounds.clamp(current / 2 if changed else current * 2)
    target = target_interval(history, multiplier, bounds)
    if target is None:
        return current
    target *= site_factor if math.isfinite(site_factor) and site_factor > 0 else 1
    return bounds.clamp(min(max(target, current / STEP), current * STEP))
