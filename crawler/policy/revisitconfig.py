"""The ``REVISIT_*`` settings, checked: the revisit policy's name, each page's
interval bounds (``Bounds``; an unset floor or ceiling relative to the interval),
the per-domain overrides, the feeder's pace and batch. ``RevisitConfig`` turns the
settings into one checked value or one line naming the bad setting, so the
pipeline, the feeder and the URL library read them alike. Pure: no clock, no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from crawler.policy.laziness import LazinessConfig
from crawler.policy.typedsettings import (
    as_float,
    get_bool,
    get_choice,
    get_float,
    get_int,
    get_optional_float,
)

if TYPE_CHECKING:
    from crawler.policy.typedsettings import Range

POLICIES = ("off", "uniform", "adaptive", "halving")
# An unset REVISIT_MIN_INTERVAL or REVISIT_MAX_INTERVAL is this share or multiple of
# the interval: a day's interval gets an hour's floor and a two weeks' ceiling (a lazy
# page's cycle), a minute's 2.5 s and 14 minutes.
FLOOR_SHARE = 1 / 24
CEILING_FACTOR = 14.0
# An unset REVISIT_FEED_INTERVAL: the feeder looks this often, or twice per shortest
# interval when that is shorter (a feeder that looks less often than a page's
# interval cannot keep to it).
MAX_FEED_INTERVAL = 2.0
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
    # SimHash bits a revisited page's text may move by and count as unchanged
    # (REVISIT_CHANGE_THRESHOLD: crawler.policy.changehistory.small_change).
    change_threshold: int = 0
    # REVISIT_CHANGE_THRESHOLD again and the REVISIT_SITE_* settings: a host's
    # factor on its pages' intervals (crawler.policy.laziness; adaptive only).
    laziness: LazinessConfig = field(default_factory=LazinessConfig)

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
            change_threshold=get_int(
                settings, "REVISIT_CHANGE_THRESHOLD", at_least=0, at_most=64
            ),
            laziness=LazinessConfig.from_settings(settings),
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
