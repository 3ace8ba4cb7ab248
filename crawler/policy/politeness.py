"""How long a host must wait between two fetches. Pure: no I/O, no clock."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from crawler.policy.typedsettings import get_float

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


class DelayPolicy(Protocol):
    """What the frontier asks before it lets a host be fetched again."""

    def delay_for(self, host: str, *, now: float) -> float:
        """Seconds *host* must wait, counted from its last response, at time *now*."""
        ...


@dataclass(frozen=True, slots=True)
class FixedDelayPolicy:
    """The same delay for every host at every hour: Scrapy's ``DOWNLOAD_DELAY``."""

    delay: float

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> FixedDelayPolicy:
        """The policy; raises ``ValueError`` naming ``DOWNLOAD_DELAY`` if it is bad."""
        delay = get_float(settings, "DOWNLOAD_DELAY")
        if delay < 0:
            raise ValueError(f"DOWNLOAD_DELAY must be >= 0 seconds, got {delay!r}")
        return cls(delay)

    def delay_for(self, host: str, *, now: float) -> float:
        return self.delay
