"""How long a host must wait between two fetches. Pure: no I/O, no clock, no RNG.

The delay in force for a host is the largest of: the day or night delay of the
host's own local time, its robots.txt ``Crawl-delay`` (capped), a per-domain
override, Scrapy's ``DOWNLOAD_DELAY`` as a floor, and the spacing an hourly page
cap needs. Jitter is added on top so the rhythm is not machine-regular, never below
the delay in force.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from crawler.policy.timezones import ZoneResolver
from crawler.policy.typedsettings import get_float

if TYPE_CHECKING:
    from collections.abc import Mapping

    from scrapy.settings import BaseSettings

DelayReason = Literal[
    "day", "night", "crawl-delay", "override", "download-delay", "hourly-cap"
]
MINUTES_A_DAY = 24 * 60


@dataclass(frozen=True, slots=True)
class Delay:
    """A host's delay in force and the rule that set it."""

    seconds: float
    reason: DelayReason


def parse_day_hours(text: str) -> tuple[int, int]:
    """``"08:00-22:00"`` -> minutes after midnight (start, end); start > end wraps."""
    try:
        start, end = (_minutes(part) for part in text.split("-"))
    except ValueError:
        raise ValueError(
            f'POLITENESS_DAY_HOURS must look like "08:00-22:00", got {text!r}'
        ) from None
    if start == end:
        raise ValueError(f"POLITENESS_DAY_HOURS must not be empty, got {text!r}")
    return start, end


def _minutes(clock: str) -> int:
    hours, minutes = clock.strip().split(":")
    value = int(hours) * 60 + int(minutes)
    if not (0 <= int(minutes) < 60 and 0 <= value <= MINUTES_A_DAY):
        raise ValueError(clock)
    return value


def most_specific(host: str, suffixes: Mapping[str, float]) -> float | None:
    """The value of the longest domain suffix of *host* in *suffixes*."""
    labels = host.lower().rstrip(".").split(".")
    for i in range(len(labels)):
        if (value := suffixes.get(".".join(labels[i:]))) is not None:
            return value
    return None


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

    @classmethod
    def from_settings(
        cls, settings: BaseSettings, *, machine_zone: str
    ) -> PolitenessConfig:
        """The policy; raises ``ValueError`` naming the first bad setting."""
        durations = {
            "POLITENESS_DAY_DELAY": get_float(settings, "POLITENESS_DAY_DELAY"),
            "POLITENESS_NIGHT_DELAY": get_float(settings, "POLITENESS_NIGHT_DELAY"),
            "POLITENESS_JITTER": get_float(settings, "POLITENESS_JITTER"),
            "DOWNLOAD_DELAY": get_float(settings, "DOWNLOAD_DELAY"),
            "ROBOTS_MAX_CRAWL_DELAY": get_float(settings, "ROBOTS_MAX_CRAWL_DELAY"),
        }
        for name, value in durations.items():
            if value < 0:
                raise ValueError(f"{name} must be >= 0, got {value!r}")
        overrides = {
            str(k).lower().strip("."): float(v)
            for k, v in settings.getdict("POLITENESS_OVERRIDES").items()
        }
        cap = settings.get("POLITENESS_MAX_PAGES_PER_HOST_PER_HOUR")
        return cls(
            day_delay=durations["POLITENESS_DAY_DELAY"],
            night_delay=durations["POLITENESS_NIGHT_DELAY"],
            day_hours=parse_day_hours(settings.get("POLITENESS_DAY_HOURS")),
            zones=ZoneResolver.from_settings(settings, machine_zone=machine_zone),
            jitter=durations["POLITENESS_JITTER"],
            overrides=overrides,
            floor=durations["DOWNLOAD_DELAY"],
            max_crawl_delay=durations["ROBOTS_MAX_CRAWL_DELAY"],
            max_pages_per_hour=int(cap) if cap not in (None, "") else None,
        )

    def is_day(self, host: str, *, now: float) -> bool:
        """Whether *now* falls in the day hours of *host*'s local time."""
        local = datetime.fromtimestamp(now, self.zones.zone_of(host))
        minute = local.hour * 60 + local.minute
        start, end = self.day_hours
        if start < end:
            return start <= minute < end
        return minute >= start or minute < end

    def in_force(
        self, host: str, *, now: float, crawl_delay: float | None = None
    ) -> Delay:
        """The delay in force for *host* at *now*: the largest rule wins."""
        day = self.is_day(host, now=now)
        candidates = [
            Delay(self.day_delay, "day") if day else Delay(self.night_delay, "night")
        ]
        if crawl_delay is not None:
            candidates.append(
                Delay(min(crawl_delay, self.max_crawl_delay), "crawl-delay")
            )
        if (
            self.overrides
            and (override := most_specific(host, self.overrides)) is not None
        ):
            candidates.append(Delay(override, "override"))
        candidates.append(Delay(self.floor, "download-delay"))
        if self.max_pages_per_hour:
            candidates.append(Delay(3600.0 / self.max_pages_per_hour, "hourly-cap"))
        return max(candidates, key=lambda delay: delay.seconds)

    def jittered(self, seconds: float, draw: float) -> float:
        """*seconds* stretched by *draw* (in [0, 1]) of the jitter: never below it."""
        return seconds * (1.0 + self.jitter * min(max(draw, 0.0), 1.0))

    def shortest(self) -> float:
        """The least delay any host can get: for hosts not yet seen."""
        return max(min(self.day_delay, self.night_delay), self.floor)
