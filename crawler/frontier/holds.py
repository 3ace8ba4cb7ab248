"""Why a leased request did not reach its host: held for later, or forbidden.

A downloader middleware raises it (robots.txt unreachable, say); the frontier holds
the request until *until* and tries it again, as many times as RETRY_LATER_DELAYS
allows, before its fate becomes final.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import IgnoreRequest

if TYPE_CHECKING:
    from crawler.policy.fates import Fate


class HoldRequest(IgnoreRequest):
    """Hold the request until *until* (epoch seconds); if it may not be held again,
    its fate is *fate*."""

    def __init__(self, message: str, *, until: float, fate: Fate) -> None:
        super().__init__(message)
        self.until = until
        self.fate = fate


class ForbiddenByRobots(IgnoreRequest):
    """robots.txt forbids the URL: its fate is ``robots_disallowed``, and the host's
    politeness delay is not spent on it."""
