"""Retry-later: how long a request whose failure may pass is held before another try.

Scrapy's RetryMiddleware retries at once, a few times; a host that is down for an
hour needs more patience than that. A failure that may pass (crawler.policy.fates)
is held back and tried again after each delay of ``RETRY_LATER_DELAYS`` in turn
(a server's ``Retry-After`` wins when it asks for longer); only then is its fate
final. Pure: no clock, the caller passes times in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from crawler.policy.typedsettings import seconds_list

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

# Most holds of one request: a longer list is a typo, not a plan.
MAX_HOLDS = 32


@dataclass(frozen=True, slots=True)
class RetryLaterConfig:
    """``RETRY_LATER_DELAYS``: the seconds before each later try (empty: none)."""

    delays: tuple[float, ...]

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> RetryLaterConfig:
        """The config; raises ``ValueError`` naming the setting if it is bad."""
        value = settings.get("RETRY_LATER_DELAYS")
        delays = () if value in ("", None) else seconds_list(value)
        if delays is None or len(delays) > MAX_HOLDS:
            raise ValueError(
                f"RETRY_LATER_DELAYS must be at most {MAX_HOLDS} non-negative seconds "
                f"such as 30,300,1800 (empty: never retry later), got {value!r}"
            )
        return cls(delays)


def hold_until(
    config: RetryLaterConfig,
    *,
    held_times: int,
    now: float,
    not_before: float | None = None,
) -> float | None:
    """When a request held *held_times* times already may be tried again, or None
    if it has had all its tries (its fate is then final). *not_before* is a time the
    failure itself asks for (``Retry-After``, the next robots.txt attempt)."""
    if not 0 <= held_times < len(config.delays):
        return None
    until = now + config.delays[held_times]
    return until if not_before is None else max(until, not_before)
