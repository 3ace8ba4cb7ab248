"""How long a host must wait between two fetches. Pure: no I/O, no clock, no RNG.

The delay in force for a host is the largest of: the day or night delay of the
host's own local time, its robots.txt ``Crawl-delay`` (capped), a per-domain
override, ``POLITENESS_MIN_DELAY`` (where the add-on puts ``DOWNLOAD_DELAY``) as a floor, and the spacing an hourly page
cap needs. Jitter is added on top so the rhythm is not machine-regular, never below
the delay in force.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from crawler.policy.backoff import BackoffConfig
from crawler.policy.suffixes import most_specific, suffix_table
from crawler.policy.timezones import ZoneResolver
from crawler.policy.typedsettings import as_float, get_float, get_optional_int

if TYPE_CHECKING:
    from collections.abc import Mapping

    from scrapy.settings import BaseSettings

    from crawler.policy.typedsettings import Range

DelayReason = Literal[
    "day",
    "night",
    "crawl-delay",
    "override",
    "download-delay",
    "hourly-cap",
    "retry-after",
    "paused",
    "throttled",
]
MINUTES_A_DAY = 24 * 60
SECONDS_AN_HOUR = 3600.0
_CLOCK = re.compile(r"\s*([0-9]{1,2}):([0-9]{2})\s*")  # ASCII digits only
# Largest hourly cap: 15 digits, which a float holds exactly (a cap of 10**400 would
# overflow the division that spaces the fetches).
_MAX_HOURLY_CAP = 10**15 - 1


@dataclass(frozen=True, slots=True)
class Delay:
    """A host's delay in force and the rule that set it."""

    seconds: float
    reason: DelayReason


def parse_day_hours(text: object) -> tuple[int, int]:
    """``"08:00-22:00"`` -> minutes after midnight (start, end); start > end wraps.

    ``24:00`` may end the day (``"00:00-24:00"`` is all day); a day that starts
    and ends at the same minute is ambiguous (none or all?) and so refused.
    """
    parts = text.split("-") if isinstance(text, str) else []
    clocks = [match for part in parts if (match := _CLOCK.fullmatch(part))]
    if len(parts) != 2 or len(clocks) != 2:
        raise ValueError(
            f'POLITENESS_DAY_HOURS must look like "08:00-22:00", got {text!r}'
        )
    start, end = (int(clock[1]) * 60 + int(clock[2]) for clock in clocks)
    if any(int(clock[2]) >= 60 for clock in clocks) or not (
        start < MINUTES_A_DAY and end <= MINUTES_A_DAY
    ):
        raise ValueError(
            f"POLITENESS_DAY_HOURS has a time outside 00:00-24:00, got {text!r}"
        )
    if start == end:
        raise ValueError(
            f"POLITENESS_DAY_HOURS must not start and end alike, got {text!r}"
        )
    return start, end


@dataclass(frozen=True, slots=True)
class PolitenessConfig:
    """The settings of the politeness policy, checked once at start-up."""

    day_delay: float
    night_delay: float
    day_hours: tuple[int, int]
    zones: ZoneResolver
    jitter: float = 0.0
    overrides: Mapping[str, float] | None = None
    floor: float = 0.0
    max_crawl_delay: float = 60.0
    max_pages_per_hour: int | None = None
    backoff: BackoffConfig = field(default_factory=BackoffConfig)

    @classmethod
    def from_settings(
        cls, settings: BaseSettings, *, machine_zone: str
    ) -> PolitenessConfig:
        """The policy; raises a one-line ``ValueError`` naming the first bad setting.

        Every check happens here, at start-up: a typo in ``-s`` must stop the crawl
        before the first fetch, not surface hours later as a crash or a hammering.
        """
        durations = _durations(settings)
        return cls(
            day_delay=durations["POLITENESS_DAY_DELAY"],
            night_delay=durations["POLITENESS_NIGHT_DELAY"],
            day_hours=parse_day_hours(settings.get("POLITENESS_DAY_HOURS")),
            zones=ZoneResolver.from_settings(settings, machine_zone=machine_zone),
            jitter=durations["POLITENESS_JITTER"],
            overrides=_overrides(settings),
            floor=durations["POLITENESS_MIN_DELAY"],
            max_crawl_delay=durations["ROBOTS_MAX_CRAWL_DELAY"],
            max_pages_per_hour=_hourly_cap(settings),
            backoff=BackoffConfig.from_settings(settings),
        )

    def is_day(self, host: str, *, now: float) -> bool:
        """Whether *now* falls in the day hours of *host*'s local wall clock.

        ``fromtimestamp`` with the zone gives the wall time, DST included, so a
        host's day starts at its 08:00 on both sides of a clock change.
        """
        local = datetime.fromtimestamp(now, self.zones.zone_of(host))
        minute = local.hour * 60 + local.minute
        start, end = self.day_hours
        if start < end:
            return start <= minute < end
        return minute >= start or minute < end

    def in_force(
        self, host: str, *, now: float, crawl_delay: float | None = None
    ) -> Delay:
        """The delay in force for *host* at *now*: the largest rule wins.

        On a tie the earlier rule names the reason (day/night, crawl-delay,
        override, download-delay, hourly-cap). A NaN crawl-delay is ignored.
        """
        day = self.is_day(host, now=now)
        candidates = [
            Delay(self.day_delay, "day") if day else Delay(self.night_delay, "night")
        ]
        if crawl_delay is not None and not math.isnan(crawl_delay):
            capped = min(crawl_delay, self.max_crawl_delay)
            candidates.append(Delay(capped, "crawl-delay"))
        override = most_specific(host, self.overrides) if self.overrides else None
        if override is not None:
            candidates.append(Delay(override, "override"))
        candidates.append(Delay(self.floor, "download-delay"))
        if self.max_pages_per_hour:
            spacing = SECONDS_AN_HOUR / self.max_pages_per_hour
            candidates.append(Delay(spacing, "hourly-cap"))
        return max(candidates, key=lambda delay: delay.seconds)

    def jittered(self, seconds: float, draw: float) -> float:
        """*seconds* stretched by *draw* (in [0, 1]) of the jitter: never below it.

        The draw is clamped, NaN as 0, so a faulty RNG can at worst slow a host to
        the top of the range and never speed it past the delay in force.
        """
        share = 0.0 if math.isnan(draw) else min(max(draw, 0.0), 1.0)
        return seconds * (1.0 + self.jitter * share)

    def shortest(self) -> float:
        """The least delay any host can get: for hosts not yet seen."""
        least = max(min(self.day_delay, self.night_delay), self.floor)
        if self.max_pages_per_hour:
            least = max(least, SECONDS_AN_HOUR / self.max_pages_per_hour)
        return least


# A bad floor may have been given as Scrapy's DOWNLOAD_DELAY (see crawler/addon.py).
_FLOOR_SHOWN = "POLITENESS_MIN_DELAY (or the DOWNLOAD_DELAY moved there)"
# Every delay: a number of seconds, 0 for none.
_SECONDS: Range = {"at_least": 0, "note": "seconds"}


def _durations(settings: BaseSettings) -> dict[str, float]:
    """The numeric settings, each finite and >= 0.

    Each name is a literal so tests/unit/test_settings.py sees it is read.
    """
    return {
        "POLITENESS_DAY_DELAY": get_float(settings, "POLITENESS_DAY_DELAY", **_SECONDS),
        "POLITENESS_NIGHT_DELAY": get_float(
            settings, "POLITENESS_NIGHT_DELAY", **_SECONDS
        ),
        "POLITENESS_JITTER": get_float(settings, "POLITENESS_JITTER", at_least=0),
        "POLITENESS_MIN_DELAY": as_float(
            settings.get("POLITENESS_MIN_DELAY"), _FLOOR_SHOWN, **_SECONDS
        ),
        "ROBOTS_MAX_CRAWL_DELAY": get_float(
            settings, "ROBOTS_MAX_CRAWL_DELAY", **_SECONDS
        ),
    }


def _overrides(settings: BaseSettings) -> dict[str, float]:
    """``POLITENESS_OVERRIDES``: domain suffix -> seconds, each finite and >= 0."""
    return {
        suffix: as_float(value, f"POLITENESS_OVERRIDES[{suffix!r}]", **_SECONDS)
        for suffix, value in suffix_table(settings, "POLITENESS_OVERRIDES").items()
    }


def _hourly_cap(settings: BaseSettings) -> int | None:
    """The hourly page cap of a host: a positive integer, or ``None`` for none
    (``-s`` gives strings, so ``""`` and ``"None"`` mean no cap too)."""
    return get_optional_int(
        settings,
        "POLITENESS_MAX_PAGES_PER_HOST_PER_HOUR",
        at_least=1,
        at_most=_MAX_HOURLY_CAP,
        note="(empty: no cap)",
    )
