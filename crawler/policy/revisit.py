"""When to fetch a page again: uniform, adaptive (by its change rate) or halving.

Pages change as Poisson processes (Cho and Garcia-Molina). A revisit only tells
whether the page changed since the last one, so a page's history is kept as three
sufficient statistics (``History``) and its rate estimated with Cho and
Garcia-Molina's estimator for incomplete change histories. ``adaptive`` gives each
page the interval that maximizes the crawl's time-averaged freshness under the
budget ``uniform`` would spend ("Synchronizing a database to improve freshness",
"Effective page refresh policies"): freshness of a page of rate λ synced every T is
F = (1 - e^{-λT}) / (λT); maximizing the sum of F subject to a fixed sum of 1/T
gives, per page, ψ(T) = (1 - e^{-λT})/λ - T e^{-λT} = μ, with μ the one Lagrange
multiplier of the crawl (``multiplier_for``). The floor goes to the fastest pages
that can still be kept fresh; a page changing faster than the budget can follow
(λμ >= 1, or found changed at every check past ``_PEAK``) is left at the ceiling,
as in Cho's optimum: chasing it would buy little freshness with a large share of
the budget. Pages never seen to change drift up (see ``decision_rate``).
``halving`` is StormCrawler's rule (halve on change, double otherwise), kept as a
baseline. Pure: no clock, no I/O.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from crawler.policy.typedsettings import (
    as_float,
    get_bool,
    get_choice,
    get_float,
    get_int,
    get_optional_float,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from crawler.policy.typedsettings import Range

POLICIES = ("off", "uniform", "adaptive", "halving")

# Checks a History remembers: beyond it all three statistics shrink in proportion,
# so each older check weighs WINDOW/(WINDOW+1) of the next and a rate that changed
# (a page that became static, a news page) is relearned in about WINDOW revisits,
# while the estimator keeps enough checks to tell 0.1 from 0.3 changes a visit.
WINDOW = 24.0
# An unset REVISIT_MIN_INTERVAL or REVISIT_MAX_INTERVAL is this share or multiple of
# the interval: a day's interval gets an hour's floor and a two weeks' ceiling (a lazy
# page's cycle), a minute's 2.5 s and 14 minutes.
FLOOR_SHARE = 1 / 24
CEILING_FACTOR = 14.0
# An unset REVISIT_FEED_INTERVAL: the feeder looks this often, or twice per shortest
# interval when that is shorter (a feeder that looks less often than a page's
# interval cannot keep to it).
MAX_FEED_INTERVAL = 2.0
# Pace: the least share of uniform's budget adaptive plans for, how much the share
# grows a look once the crawl keeps up, and the backlog that means "behind": this
# share of REVISIT_INTERVAL in seconds of fetching.
MIN_PACE = 0.05
PACE_RECOVERY = 1.1
BEHIND_SHARE = 0.2
# Most an adaptive interval moves in one visit (x or /): one noisy estimate from
# a few checks cannot throw a page to the floor or the ceiling, and the interval
# still reaches any target within a few visits (the simulator: 2 beats 4 and no
# limit, most of all in the first days of a crawl).
STEP = 2.0
# Changes a page with none seen yet is planned with (see decision_rate).
PRIOR_CHANGES = 0.25
# λμ at which the optimal interval x/λ is shortest: g(x) = x g'(x), that is
# e^x = 1 + x + x², at x = 1.79328; g(x) = 1 - (1 + x) e^{-x} there.
_PEAK = 0.5351606
_OVERRIDE_KEYS = frozenset({"interval", "min_interval", "max_interval"})
# Every interval: a positive number of seconds.
_SECONDS: Range = {"above": 0, "note": "seconds"}


class SupportsGet(Protocol):
    """Anything settings can be read from: Scrapy ``Settings``, a dict."""

    def get(self, name: str, /) -> object: ...


@dataclass(frozen=True, slots=True)
class Bounds:
    """A page's intervals: uniform's (a new page's first, adaptive's budget share)
    and the floor and ceiling every policy keeps to."""

    interval: float
    min_interval: float
    max_interval: float

    def clamp(self, seconds: float) -> float:
        """*seconds* within [min_interval, max_interval]."""
        return min(max(seconds, self.min_interval), self.max_interval)


@dataclass(frozen=True, slots=True)
class RevisitConfig:
    """The ``REVISIT_*`` settings, checked."""

    policy: str
    bounds: Bounds
    overrides: tuple[tuple[str, Bounds], ...]  # domain suffix -> bounds, longest first
    gone_after: int
    feed_interval: float
    feed_batch: int
    claim_timeout: float
    conditional: bool

    @property
    def enabled(self) -> bool:
        """Whether pages are revisited at all."""
        return self.policy != "off"

    def bounds_for(self, host: str) -> Bounds:
        """The bounds of the longest override suffix *host* ends with (on a label
        boundary: "gov" matches "x.gov", not "xgov"), else the default ones."""
        host = host.lower().rstrip(".")
        for suffix, bounds in self.overrides:
            if host == suffix or host.endswith("." + suffix):
                return bounds
        return self.bounds

    @classmethod
    def from_settings(cls, settings: SupportsGet) -> RevisitConfig:
        """The config; raises ``ValueError`` with one line naming a bad setting."""
        policy = get_choice(settings, "REVISIT_POLICY", POLICIES, fold_case=True)
        floor = get_optional_float(settings, "REVISIT_MIN_INTERVAL", **_SECONDS)
        ceiling = get_optional_float(settings, "REVISIT_MAX_INTERVAL", **_SECONDS)
        interval = get_float(settings, "REVISIT_INTERVAL", **_SECONDS)
        bounds = _bounds(interval, floor, ceiling)
        _check_bounds(
            bounds,
            "REVISIT_INTERVAL",
            " (REVISIT_MIN_INTERVAL <= REVISIT_INTERVAL <= REVISIT_MAX_INTERVAL)",
        )
        overrides = _overrides(
            settings.get("REVISIT_OVERRIDES"), bounds.interval, floor, ceiling
        )
        feed_interval = get_optional_float(
            settings, "REVISIT_FEED_INTERVAL", **_SECONDS
        )
        if feed_interval is None:
            floors = [bounds.min_interval] + [b.min_interval for _, b in overrides]
            feed_interval = min(MAX_FEED_INTERVAL, min(floors) / 2)
        return cls(
            policy=policy,
            bounds=bounds,
            overrides=overrides,
            gone_after=get_int(settings, "REVISIT_GONE_AFTER", at_least=1),
            feed_interval=feed_interval,
            feed_batch=get_int(settings, "REVISIT_FEED_BATCH", at_least=1),
            claim_timeout=get_float(settings, "REVISIT_CLAIM_TIMEOUT", **_SECONDS),
            conditional=get_bool(settings, "REVISIT_CONDITIONAL"),
        )


def revisits_on(settings: SupportsGet) -> bool:
    """Whether ``REVISIT_POLICY`` asks for revisits (unset: no; a project without
    the add-on's defaults), read with ``RevisitConfig``'s spelling rules, so "Off"
    is off for every component alike."""
    value = settings.get("REVISIT_POLICY")
    return value is not None and str(value).strip().lower() not in ("", "off")


def _bounds(interval: float, floor: float | None, ceiling: float | None) -> Bounds:
    """The bounds of *interval*; an unset floor or ceiling is relative to it."""
    return Bounds(
        interval=interval,
        min_interval=interval * FLOOR_SHARE if floor is None else floor,
        max_interval=interval * CEILING_FACTOR if ceiling is None else ceiling,
    )


def _check_bounds(bounds: Bounds, name: str, hint: str = "") -> None:
    if not bounds.min_interval <= bounds.interval <= bounds.max_interval:
        raise ValueError(
            f"{name}: need min_interval <= interval <= max_interval{hint}, got "
            f"{bounds.min_interval!r} <= {bounds.interval!r} <= {bounds.max_interval!r}"
        )


def _overrides(
    value: object, interval: float, floor: float | None, ceiling: float | None
) -> tuple[tuple[str, Bounds], ...]:
    """``REVISIT_OVERRIDES`` as (suffix, bounds), longest suffix first; an override
    keeps the settings it does not name (an unset floor or ceiling is relative to
    the override's own interval)."""
    name = "REVISIT_OVERRIDES"
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except (ValueError, RecursionError):
            raise ValueError(f"{name} must be a JSON object, got {value!r}") from None
    if value is None:
        value = {}
    if not isinstance(value, Mapping):
        raise ValueError(  # noqa: TRY004 (a bad setting, like every other)
            f"{name} must be a dict of domain suffix -> bounds"
        )
    found: dict[str, Bounds] = {}
    for key, fields in value.items():
        suffix = str(key).strip().lower().strip(".")
        where = f"{name}[{key!r}]"
        if not isinstance(key, str) or not suffix or suffix in found:
            raise ValueError(f"{where}: the key must be a new, non-empty domain suffix")
        found[suffix] = _override(fields, (interval, floor, ceiling), where)
    return tuple(sorted(found.items(), key=lambda item: (-len(item[0]), item[0])))


def _override(
    fields: object,
    default: tuple[float, float | None, float | None],
    where: str,
) -> Bounds:
    if not isinstance(fields, Mapping) or not set(fields) <= _OVERRIDE_KEYS:
        raise ValueError(
            f"{where} must be a dict with any of {', '.join(sorted(_OVERRIDE_KEYS))}"
        )
    seconds: dict[str, float] = {}
    for key, raw in fields.items():
        if isinstance(raw, str):  # a JSON number, not text that looks like one
            raise ValueError(  # noqa: TRY004 (a bad setting, like every other)
                f"{where}[{key!r}] must be a number, got {raw!r}"
            )
        seconds[key] = as_float(raw, f"{where}[{key!r}]", **_SECONDS)
    interval, floor, ceiling = default
    bounds = _bounds(
        seconds.get("interval", interval),
        seconds.get("min_interval", floor),
        seconds.get("max_interval", ceiling),
    )
    _check_bounds(bounds, where, " (an override keeps the settings it omits)")
    return bounds


@dataclass(frozen=True, slots=True)
class History:
    """What a page's revisits told: checks (revisits that said changed or not),
    the changes among them and the seconds they covered. Fractional once old checks
    fade (see ``WINDOW``)."""

    checks: float = 0.0
    changes: float = 0.0
    observed: float = 0.0

    def observe(self, *, changed: bool, elapsed: float) -> History:
        """This history plus one check *elapsed* seconds after the previous visit
        (a negative or non-finite elapsed, from a skewed clock, counts as 0)."""
        elapsed = elapsed if math.isfinite(elapsed) and elapsed > 0 else 0.0
        checks = self.checks + 1
        changes = self.changes + (1 if changed else 0)
        observed = self.observed + elapsed
        if checks > WINDOW:
            scale = WINDOW / checks
            checks, changes, observed = WINDOW, changes * scale, observed * scale
        return History(checks, changes, observed)

    def change_rate(self) -> float | None:
        """Changes a second by Cho and Garcia-Molina's estimator for incomplete
        histories, -ln((n - X + 0.5) / (n + 0.5)) / (observed / n): unlike X/observed
        it does not read "changed at every check" as one change per interval. None
        until checks covered a usable time (a finite rate)."""
        changes = min(max(self.changes, 0.0), self.checks)
        return _estimate(self.checks, changes, self.observed)


def _estimate(checks: float, changes: float, observed: float) -> float | None:
    """Cho's estimate for *changes* (0 <= changes <= checks), None if not finite."""
    mean = observed / checks if checks > 0 else 0.0
    if not mean > 0:
        return None
    rate = -math.log((checks - changes + 0.5) / (checks + 0.5)) / mean
    return rate if math.isfinite(rate) else None


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


def decision_rate(history: History) -> float | None:
    """The rate adaptive plans with: Cho's estimate, except that a page with less
    than ``PRIOR_CHANGES`` changes in its window is planned as if it had that many
    (about 0.25 / observed seconds) rather than as static. "No change yet" is the
    usual state of a page that changes every month, and reading it as static
    starves such pages when the budget could refresh them (the simulator: 0.94 ->
    0.36 x uniform's staleness on a static-heavy mix at a generous budget; 0.25
    rather than 0.5 tells changed from unchanged pages sooner in a crawl's first
    days, as well as halving does). A page
    that never changes still drifts up, to the ceiling whenever the multiplier
    says the budget has better uses (its interval tends to 192 μ, the window
    capping its evidence at WINDOW checks)."""
    rate = history.change_rate()
    if rate is None or history.changes >= PRIOR_CHANGES:
        return rate
    prior = min(PRIOR_CHANGES, history.checks)
    return _estimate(history.checks, prior, history.observed) or rate


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


@dataclass(frozen=True, slots=True)
class Pace:
    """The share of uniform's budget adaptive plans for: all of it, unless the crawl
    falls behind its schedule, which means it cannot fetch that much (politeness
    delays, slow hosts, too few nodes). Behind, adaptive plans for what the crawl
    fetched meanwhile: its intervals then fit the fetches there are, and the budget
    goes where it keeps most pages fresh instead of every page being late alike.
    Caught up, the share grows back by ``PACE_RECOVERY`` a look, up to all."""

    scale: float = 1.0
    visits: float | None = None  # the library's visits at the last look
    at: float | None = None  # and when (epoch seconds)

    def update(
        self, *, now: float, visits: float, backlog: float, budget: float, lag: float
    ) -> Pace:
        """The pace after a look at *now*: *visits* recorded in the library so far,
        *backlog* URLs due and not yet revisited, *budget* uniform's fetches a
        second; behind when the backlog is more than *lag* seconds of fetching."""
        if self.visits is None or self.at is None or now <= self.at:
            return Pace(self.scale, visits, now)
        rate = max(visits - self.visits, 0.0) / (now - self.at)
        if rate > 0 and budget > 0 and backlog > rate * lag:
            scale = min(self.scale, max(rate / budget, MIN_PACE))
        else:
            scale = min(1.0, self.scale * PACE_RECOVERY)
        return Pace(scale, visits, now)


def next_interval(  # noqa: PLR0913 (COMMON.md's interface, keyword-only)
    policy: str,
    *,
    current: float,
    history: History,
    changed: bool | None,
    bounds: Bounds,
    multiplier: float | None,
) -> float:
    """The interval after a visit, *history* already holding it. *changed* None is
    a first visit (no checks yet: the bounds' interval) or a failed one (the current
    interval, clamped). Adaptive moves at most ``STEP`` x toward its target."""
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
    return bounds.clamp(min(max(target, current / STEP), current * STEP))


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
