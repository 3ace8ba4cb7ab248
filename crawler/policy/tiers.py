"""Timeout tiers: which timeout a request gets, and what a host's history says.

A request starts on its host's first tier (tier 1 for a host known to be slow or far
away, else tier 0). A timeout sends it back to the frontier one tier down: a looser
timeout, queued after every request of the tier above at the same depth. After the
last tier it is given up. A host whose requests keep escalating is remembered as
slow; one that keeps exhausting every tier is paused. Pure: no I/O, no clock.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

from crawler.policy.order import TIERS_PER_DEPTH
from crawler.policy.typedsettings import get_float, get_int, seconds_list

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

HealthEvent = Literal["slow", "recovered", "paused"]
# Escalation times a host's record keeps: enough for any sane TIMEOUTS_SLOW_AFTER.
MAX_REMEMBERED_ESCALATIONS = 64


class BadHealthRecordError(ValueError):
    """A host record in Redis that this crawler did not write."""


@dataclass(frozen=True, slots=True)
class TiersConfig:
    """The TIMEOUTS_* settings, checked once at start-up."""

    tiers: tuple[float, ...] = (10.0, 30.0, 90.0)
    slow_after: int = 3
    slow_window: float = 3600.0
    slow_recover_after: int = 10
    dead_after: int = 3
    pause: float = 600.0

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> TiersConfig:
        """The config; raises ``ValueError`` naming the first bad setting."""
        return cls(
            tiers=_tiers(settings.get("TIMEOUTS_TIERS")),
            slow_after=get_int(
                settings,
                "TIMEOUTS_SLOW_AFTER",
                at_least=1,
                at_most=MAX_REMEMBERED_ESCALATIONS,
            ),
            slow_window=get_float(
                settings, "TIMEOUTS_SLOW_WINDOW", above=0, note="seconds"
            ),
            slow_recover_after=get_int(
                settings, "TIMEOUTS_SLOW_RECOVER_AFTER", above=0
            ),
            dead_after=get_int(settings, "TIMEOUTS_HOST_DEAD_AFTER", above=0),
            pause=get_float(
                settings, "TIMEOUTS_HOST_PAUSE", at_least=0, note="seconds"
            ),
        )

    @property
    def last(self) -> int:
        return len(self.tiers) - 1

    def timeout_of(self, tier: int) -> float:
        """The download timeout of *tier* (a tier past the last gets the last's)."""
        return self.tiers[min(max(tier, 0), self.last)]

    def next_tier(self, tier: int) -> int | None:
        """The tier a request that timed out at *tier* goes to; None: give it up."""
        return tier + 1 if tier < self.last else None

    def start_tier(self, health: HostHealth, *, far: bool) -> int:
        """A slow or far-away host starts one tier down (if there is one)."""
        return min(1, self.last) if health.slow or far else 0


def _tiers(setting: object) -> tuple[float, ...]:
    """TIMEOUTS_TIERS from a list, a JSON list or a comma-separated string."""
    tiers = seconds_list(setting) or ()
    if (
        not 0 < len(tiers) <= TIERS_PER_DEPTH
        or not all(math.isfinite(t) and t > 0 for t in tiers)
        or any(a >= b for a, b in itertools.pairwise(tiers))
    ):
        raise ValueError(
            f"TIMEOUTS_TIERS must be 1 to {TIERS_PER_DEPTH} increasing positive "
            f"seconds such as [10, 30, 90], got {setting!r}"
        )
    return tiers


@dataclass(frozen=True, slots=True)
class HostHealth:
    """What the crawl remembers of a host's timeouts (stored as JSON in Redis)."""

    escalations: tuple[float, ...] = field(default=())
    slow: bool = False
    successes: int = 0
    dead_streak: int = 0
    paused_until: float = 0.0

    def to_json(self) -> str:
        return json.dumps(
            {
                "e": list(self.escalations),
                "s": self.slow,
                "ok": self.successes,
                "d": self.dead_streak,
                "p": self.paused_until,
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, data: bytes | str) -> HostHealth:
        """Parse a record; raises ``BadHealthRecordError`` for anything else."""
        try:
            raw = json.loads(data)
        except (ValueError, TypeError, RecursionError) as exc:
            raise BadHealthRecordError(f"not JSON ({exc})") from None
        if not isinstance(raw, dict) or _FIELDS - raw.keys():
            raise BadHealthRecordError("not a host record (fields missing)")
        if not isinstance(raw["e"], list) or not isinstance(raw["s"], bool):
            raise BadHealthRecordError("not a host record: bad field types")
        escalations = tuple(_time(t, "e") for t in raw["e"])
        return cls(
            escalations=escalations[-MAX_REMEMBERED_ESCALATIONS:],
            slow=raw["s"],
            successes=_count(raw["ok"], "ok"),
            dead_streak=_count(raw["d"], "d"),
            paused_until=_time(raw["p"], "p"),
        )


_FIELDS = frozenset({"e", "s", "ok", "d", "p"})


def _time(value: object, name: str) -> float:
    """A finite JSON number (not a bool, not a string) as seconds."""
    number = math.nan
    if not isinstance(value, bool) and isinstance(value, int | float):
        with contextlib.suppress(OverflowError):
            number = float(value)
    if not math.isfinite(number):
        raise BadHealthRecordError(f"{name} is not a finite number: {value!r:.40}")
    return number


def _count(value: object, name: str) -> int:
    """A JSON integer >= 0 (not a bool, a float or a string)."""
    if type(value) is not int or value < 0:
        raise BadHealthRecordError(f"{name} is not a count: {value!r:.40}")
    return value


def after_escalation(
    config: TiersConfig, health: HostHealth, *, now: float
) -> tuple[HostHealth, HealthEvent | None]:
    """A request of the host timed out and went one tier down."""
    recent = tuple(t for t in health.escalations if t > now - config.slow_window)
    recent = (*recent, now)[-MAX_REMEMBERED_ESCALATIONS:]
    if not health.slow and len(recent) >= config.slow_after:
        return replace(health, escalations=recent, slow=True, successes=0), "slow"
    return replace(health, escalations=recent), None


def after_success(
    config: TiersConfig, health: HostHealth, *, tier: int
) -> tuple[HostHealth, HealthEvent | None]:
    """The host answered a request fetched at *tier*: its dead streak ends, and
    enough quick answers (tier 0 or 1) make a slow host normal again."""
    if not health.slow or tier > 1:
        if health.dead_streak == 0:
            return health, None
        return replace(health, dead_streak=0), None
    successes = health.successes + 1
    if successes >= config.slow_recover_after:
        return HostHealth(paused_until=health.paused_until), "recovered"
    return replace(health, successes=successes, dead_streak=0), None


def after_give_up(
    config: TiersConfig, health: HostHealth, *, now: float
) -> tuple[HostHealth, HealthEvent | None]:
    """A request timed out on every tier. After TIMEOUTS_HOST_DEAD_AFTER of those
    in a row the host is paused, so that it stops holding download slots."""
    streak = health.dead_streak + 1
    if streak >= config.dead_after:
        return replace(health, dead_streak=0, paused_until=now + config.pause), "paused"
    return replace(health, dead_streak=streak), None
