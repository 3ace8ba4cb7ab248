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
multiplier of the crawl (``multiplier_for``). ``halving`` is StormCrawler's rule
(halve on change, double otherwise), kept as a baseline. Pure: no clock, no I/O.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Sequence

POLICIES = ("off", "uniform", "adaptive", "halving")

# Checks a History remembers: beyond it all three statistics shrink in proportion,
# so each older check weighs WINDOW/(WINDOW+1) of the next and a rate that changed
# (a page that became static, a news page) is relearned in about WINDOW revisits,
# while the estimator keeps enough checks to tell 0.1 from 0.3 changes a visit.
WINDOW = 24.0
# Most an adaptive interval moves in one visit (x or /): one noisy check (the
# estimator reads a single unchanged check as rate 0) cannot send a page to the
# ceiling, and the interval still reaches any target within a few visits.
STEP = 2.0
_OVERRIDE_KEYS = frozenset({"interval", "min_interval", "max_interval"})
_TRUE, _FALSE = frozenset({"1", "true"}), frozenset({"0", "false"})


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
        policy = str(settings.get("REVISIT_POLICY")).strip().lower()
        if policy not in POLICIES:
            raise ValueError(
                f"REVISIT_POLICY must be one of {', '.join(POLICIES)}, "
                f"got {settings.get('REVISIT_POLICY')!r}"
            )
        bounds = Bounds(
            interval=_positive(settings, "REVISIT_INTERVAL"),
            min_interval=_positive(settings, "REVISIT_MIN_INTERVAL"),
            max_interval=_positive(settings, "REVISIT_MAX_INTERVAL"),
        )
        _check_bounds(bounds, "REVISIT_INTERVAL")
        return cls(
            policy=policy,
            bounds=bounds,
            overrides=_overrides(settings.get("REVISIT_OVERRIDES"), bounds),
            gone_after=_count(settings, "REVISIT_GONE_AFTER"),
            feed_interval=_positive(settings, "REVISIT_FEED_INTERVAL"),
            feed_batch=_count(settings, "REVISIT_FEED_BATCH"),
            claim_timeout=_positive(settings, "REVISIT_CLAIM_TIMEOUT"),
            conditional=_flag(settings, "REVISIT_CONDITIONAL"),
        )


def _number(value: object) -> float | None:
    """A finite float from a number or a numeric string (``-s`` gives strings)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value)
    except (ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def _positive(settings: SupportsGet, name: str) -> float:
    value = settings.get(name)
    number = _number(value)
    if number is None or number <= 0:
        raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
    return number


def _count(settings: SupportsGet, name: str) -> int:
    value = settings.get(name)
    number = _number(value)
    if number is None or number < 1 or not number.is_integer():
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return int(number)


def _flag(settings: SupportsGet, name: str) -> bool:
    value = settings.get(name)
    text = str(value).strip().lower()
    if isinstance(value, bool | int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and text in _TRUE | _FALSE:
        return text in _TRUE
    raise ValueError(f"{name} must be true or false (1 or 0), got {value!r}")


def _check_bounds(bounds: Bounds, name: str) -> None:
    if not bounds.min_interval <= bounds.interval <= bounds.max_interval:
        raise ValueError(
            f"{name}: need min_interval <= interval <= max_interval, got "
            f"{bounds.min_interval!r} <= {bounds.interval!r} <= {bounds.max_interval!r}"
        )


def _overrides(value: object, default: Bounds) -> tuple[tuple[str, Bounds], ...]:
    """``REVISIT_OVERRIDES`` as (suffix, bounds), longest suffix first; an override
    leaves the default bounds it does not name."""
    name = "REVISIT_OVERRIDES"
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except (ValueError, RecursionError):
            raise ValueError(f"{name} must be a JSON object, got {value!r}") from None
    if value is None:
        value = {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{name} must be a dict of domain suffix -> bounds")
    found: dict[str, Bounds] = {}
    for key, fields in value.items():
        suffix = str(key).strip().lower().strip(".")
        where = f"{name}[{key!r}]"
        if not isinstance(key, str) or not suffix or suffix in found:
            raise ValueError(f"{where}: the key must be a new, non-empty domain suffix")
        found[suffix] = _override(fields, default, where)
    ordered = sorted(found.items(), key=lambda item: (-item[0].count("."), item[0]))
    return tuple(sorted(ordered, key=lambda item: -len(item[0])))


def _override(fields: object, default: Bounds, where: str) -> Bounds:
    if not isinstance(fields, Mapping) or not set(fields) <= _OVERRIDE_KEYS:
        raise ValueError(
            f"{where} must be a dict with any of {', '.join(sorted(_OVERRIDE_KEYS))}"
        )
    seconds: dict[str, float] = {}
    for key, raw in fields.items():
        number = None if isinstance(raw, str) else _number(raw)
        if number is None or number <= 0:
            raise ValueError(f"{where}[{key!r}] must be a positive number, got {raw!r}")
        seconds[key] = number
    bounds = Bounds(
        interval=seconds.get("interval", default.interval),
        min_interval=seconds.get("min_interval", default.min_interval),
        max_interval=seconds.get("max_interval", default.max_interval),
    )
    _check_bounds(bounds, where)
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
        until a check covered any time."""
        n, changes = self.checks, min(self.changes, self.checks)
        if n <= 0 or self.observed <= 0:
            return None
        return -math.log((n - changes + 0.5) / (n + 0.5)) / (self.observed / n)


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
    for _ in range(60):  # safeguarded Newton: falls back to bisection
        error = _gain(x) - target
        if error > 0:
            high = x
        else:
            low = x
        slope = x * math.exp(-x)
        step = x - error / slope if slope > 0 else low
        x = step if low < step < high else (low + high) / 2
        if high - low <= 1e-12 * high or abs(error) <= 1e-12 * target:
            break
    return bounds.clamp(x / rate)


def multiplier_for(pages: Sequence[tuple[History, Bounds]]) -> float | None:
    """Adaptive's μ: the one whose intervals spend the fetches uniform would
    (Σ 1/T = Σ 1/interval), pages without a rate yet staying at their interval.
    None if no page has a rate. If even every page at its floor spends less, the
    smallest μ (all fast); the result never overspends. A random sample of the
    pages gives about the same μ at a fraction of the cost."""
    known = [(rate, b) for h, b in pages if (rate := h.change_rate()) is not None]
    if not known:
        return None
    budget = sum(1 / b.interval for _, b in known)

    def spend(mu: float) -> float:
        return sum(1 / interval_for_rate(rate, mu, b) for rate, b in known)

    moving = [(rate, b) for rate, b in known if rate > 0]
    if not moving:
        return 1.0  # every page static: any μ leaves them all at their ceiling
    low = min(_gain(rate * b.min_interval) / rate for rate, b in moving) / 2
    high = max(1 / rate for rate, _ in moving)
    if spend(low) <= budget:
        return low
    for _ in range(100):  # bisection on log μ; spend falls as μ grows
        if math.log(high / low) < 1e-6:
            break
        middle = math.sqrt(low * high)
        if spend(middle) > budget:
            low = middle
        else:
            high = middle
    return high


def next_interval(
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
    if policy in ("off", "uniform") or not valid or (
        changed is None and history.checks <= 0
    ):
        return bounds.interval
    current = bounds.clamp(current)
    if changed is None:
        return current
    if policy == "halving":
        return bounds.clamp(current / 2 if changed else current * 2)
    rate = history.change_rate()
    if rate is None or multiplier is None:
        return current
    target = interval_for_rate(rate, multiplier, bounds)
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
