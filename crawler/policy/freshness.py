"""The freshness-optimal revisit interval: adaptive's formula.

``adaptive`` gives each page the interval that maximizes the crawl's time-averaged
freshness under the budget ``uniform`` would spend ("Synchronizing a database to
improve freshness", "Effective page refresh policies"): freshness of a page of rate
λ synced every T is F = (1 - e^{-λT}) / (λT); maximizing the sum of F subject to a
fixed sum of 1/T gives, per page, ψ(T) = (1 - e^{-λT})/λ - T e^{-λT} = μ, with μ the
one Lagrange multiplier of the crawl (``multiplier_for``). The floor goes to the
fastest pages that can still be kept fresh; a page changing faster than the budget
can follow (λμ >= 1, or found changed at every check past ``_PEAK``) is left at the
ceiling, as in Cho's optimum: chasing it would buy little freshness with a large
share of the budget. ``freshness`` and ``age`` score a rate and an interval (the
simulator's measures). Pure: no clock, no I/O.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from crawler.policy.changehistory import decision_rate

if TYPE_CHECKING:
    from collections.abc import Sequence

    from crawler.policy.changehistory import History
    from crawler.policy.revisitconfig import Bounds

# λμ at which the optimal interval x/λ is shortest: g(x) = x g'(x), that is
# e^x = 1 + x + x², at x = 1.79328; g(x) = 1 - (1 + x) e^{-x} there.
_PEAK = 0.5351606


def _gain(x: float) -> float:
    """λ ψ at x = λT: 1 - (1 + x) e^{-x}, rising from 0 to 1 (x²/2 near 0)."""
    if x < 1e-4:
        return x * x / 2 - x * x * x / 3
    return -math.expm1(-x) - x * math.exp(-x)


def interval_for_rate(rate: float, multiplier: float, bounds: Bounds) -> float:
    """The freshness-optimal interval for *rate* under *multiplier* μ: T with
    ψ(T) = μ, clamped to the bounds. ψ rises from 0 to 1/λ, so a static page
    (λ = 0) or one changing too fast to be worth chasing (μ >= 1/λ) gets the
    ceiling, and μ <= 0 (spend freely) the floor."""
    if not rate > 0 or not math.isfinite(rate):
        return bounds.max_interval
    if not multiplier > 0:
        return bounds.min_interval
    target = rate * multiplier  # solve _gain(x) = target for x = rate * T
    low, high = rate * bounds.min_interval, rate * bounds.max_interval
    if target >= 1 or _gain(high) <= target:
        return bounds.max_interval
    if _gain(low) >= target:
        return bounds.min_interval
    x = min(max(math.sqrt(2 * target), low), high)
    for _ in range(100):  # safeguarded Newton: bisects when a step leaves the bracket
        error = _gain(x) - target
        if abs(error) <= 1e-12 * target or high - low <= 1e-12 * high:
            break
        if error > 0:
            high = x
        else:
            low = x
        slope = x * math.exp(-x)
        step = x - error / slope if slope > 0 else low
        x = step if low < step < high else (low + high) / 2
    return bounds.clamp(x / rate)


def target_interval(
    history: History, multiplier: float | None, bounds: Bounds
) -> float | None:
    """Where adaptive takes a page: ``interval_for_rate`` of its ``decision_rate``
    (None without a rate or a multiplier), except for a page found changed at every
    check of its window. Its estimate, ln(2n + 1) / mean interval, is only a lower
    bound; once that bound passes the rate whose optimal interval is the shortest
    (λμ = _PEAK), every rate it allows is better left at the ceiling, most of them
    being past 1/μ (not worth chasing), so the page gets the ceiling. Without
    this rule such a page settles where λμ = 0.9 and spends a budget share on
    freshness it never gets."""
    rate = decision_rate(history)
    if rate is None or multiplier is None:
        return None
    saturated = history.checks >= 3 and history.changes > history.checks - 0.5
    if saturated and rate * multiplier >= _PEAK:
        return bounds.max_interval
    return interval_for_rate(rate, multiplier, bounds)


def multiplier_for(
    pages: Sequence[tuple[History, Bounds]], scale: float = 1.0
) -> float | None:
    """Adaptive's μ: the one whose intervals spend the fetches uniform would
    (Σ 1/T = Σ 1/interval), times *scale* (``Pace``: less when the crawl cannot
    fetch that much), pages without a rate yet staying at their interval.
    None if no page has a rate. If even every page at its floor spends less, the
    smallest μ (all fast); the result never overspends. A random sample of the
    pages gives about the same μ at a fraction of the cost."""
    known = [(h, b) for h, b in pages if h.change_rate() is not None]
    if not known:
        return None
    budget = scale * sum(1 / b.interval for _, b in known)

    def spend(mu: float) -> float:
        return sum(1 / (target_interval(h, mu, b) or b.interval) for h, b in known)

    rates = [(rate, b) for h, b in known if (rate := decision_rate(h) or 0.0) > 0]
    if not rates:
        return 1.0  # every page static: any μ leaves them all at their ceiling
    low = min(_gain(rate * b.min_interval) / rate for rate, b in rates) / 2
    # At high, λμ >= 2 for every page: all at their ceiling, within the budget.
    low, high = max(low, 1e-300), min(max(2 / rate for rate, _ in rates), 1e300)
    if spend(low) <= budget:
        return low
    for _ in range(100):  # bisection on log μ; spend falls as μ grows
        if math.log(high / low) < 1e-6:
            break
        middle = math.sqrt(low) * math.sqrt(high)  # no underflow
        if spend(middle) > budget:
            low = middle
        else:
            high = middle
    return high


def freshness(rate: float, interval: float) -> float:
    """Expected time-averaged freshness of a page of Poisson *rate* synced every
    *interval* s: (1 - e^{-λT}) / (λT); 1 for a static page."""
    x = rate * interval
    return 1.0 if x <= 0 else -math.expm1(-x) / x


def age(rate: float, interval: float) -> float:
    """Expected time-averaged age (seconds since the first unseen change):
    T/2 - 1/λ + (1 - e^{-λT}) / (λ²T); 0 for a static page. A series near
    λT = 0, where the closed form cancels."""
    x = rate * interval
    if x <= 0:
        return 0.0
    if x < 1e-3:
        return interval * x * (1 / 6 - x / 24)
    return interval / 2 - 1 / rate - math.expm1(-x) / (rate * x)
