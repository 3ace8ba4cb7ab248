"""The ``REVISIT_*`` settings, checked: the revisit policy's name, each page's
interval bounds (``Bounds``; an unset floor or ceiling relative to the interval),
the per-domain overrides, the feeder's pace and batch. ``RevisitConfig`` turns the
settings into one checked value or one line naming the bad setting, so the
pipeline, the feeder and the URL library read them alike. Pure: no clock, no I/O.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

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
        floor = _optional_positive(settings, "REVISIT_MIN_INTERVAL")
        ceiling = _optional_positive(settings, "REVISIT_MAX_INTERVAL")
        bounds = _bounds(_positive(settings, "REVISIT_INTERVAL"), floor, ceiling)
        _check_bounds(
            bounds,
            "REVISIT_INTERVAL",
            " (REVISIT_MIN_INTERVAL <= REVISIT_INTERVAL <= REVISIT_MAX_INTERVAL)",
        )
        overrides = _overrides(
            settings.get("REVISIT_OVERRIDES"), bounds.interval, floor, ceiling
        )
        feed_interval = _optional_positive(settings, "REVISIT_FEED_INTERVAL")
        if feed_interval is None:
            floors = [bounds.min_interval] + [b.min_interval for _, b in overrides]
            feed_interval = min(MAX_FEED_INTERVAL, min(floors) / 2)
        return cls(
            policy=policy,
            bounds=bounds,
            overrides=overrides,
            gone_after=_count(settings, "REVISIT_GONE_AFTER"),
            feed_interval=feed_interval,
            feed_batch=_count(settings, "REVISIT_FEED_BATCH"),
            claim_timeout=_positive(settings, "REVISIT_CLAIM_TIMEOUT"),
            conditional=_flag(settings, "REVISIT_CONDITIONAL"),
        )


def revisits_on(settings: SupportsGet) -> bool:
    """Whether ``REVISIT_POLICY`` asks for revisits (unset: no; a project without
    the add-on's defaults), read with ``RevisitConfig``'s spelling rules, so "Off"
    is off for every component alike."""
    value = settings.get("REVISIT_POLICY")
    return value is not None and str(value).strip().lower() not in ("", "off")


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


def _optional_positive(settings: SupportsGet, name: str) -> float | None:
    """A positive number of seconds, or None when unset (None or empty)."""
    value = settings.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    return _positive(settings, name)


def _bounds(interval: float, floor: float | None, ceiling: float | None) -> Bounds:
    """The bounds of *interval*; an unset floor or ceiling is relative to it."""
    return Bounds(
        interval=interval,
        min_interval=interval * FLOOR_SHARE if floor is None else floor,
        max_interval=interval * CEILING_FACTOR if ceiling is None else ceiling,
    )


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
        number = None if isinstance(raw, str) else _number(raw)
        if number is None or number <= 0:
            raise ValueError(f"{where}[{key!r}] must be a positive number, got {raw!r}")
        seconds[key] = number
    interval, floor, ceiling = default
    bounds = _bounds(
        seconds.get("interval", interval),
        seconds.get("min_interval", floor),
        seconds.get("max_interval", ceiling),
    )
    _check_bounds(bounds, where, " (an override keeps the settings it omits)")
    return bounds
