"""The settings that may change while a crawl runs, as one read-only object.

Components that obey them (``HostDelays`` for the politeness policy, ``Admission``
for ``DEPTH_LIMIT``) hold the crawl's ``RunSettingsHolder`` and read ``current``
each time they decide. Only the node's runtime replaces it, whole, when
``scrapy frontier set`` changes a value (``runcontrol.ControlFollower``): no
component's attribute is ever assigned from outside, and a reader never sees half
of a change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from crawler.policy.politeness import PolitenessConfig
from crawler.policy.typedsettings import get_int

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


@dataclass(frozen=True, slots=True)
class RunSettings:
    """The run-time settings in force: the politeness policy and the depth limit."""

    politeness: PolitenessConfig
    depth_limit: int

    @classmethod
    def from_settings(cls, settings: BaseSettings, machine_zone: str) -> RunSettings:
        """Read from *settings*; raises a one-line ``ValueError`` on a bad value."""
        depth_limit = get_int(settings, "DEPTH_LIMIT")
        if depth_limit < 0:
            raise ValueError(
                f"DEPTH_LIMIT must be >= 0 (0: no limit), got {depth_limit}"
            )
        politeness = PolitenessConfig.from_settings(settings, machine_zone=machine_zone)
        return cls(politeness, depth_limit)


class RunSettingsHolder:
    """The crawl's run-time settings: read ``current``; the runtime ``replace``s it."""

    def __init__(self, current: RunSettings) -> None:
        self._current = current

    @property
    def current(self) -> RunSettings:
        return self._current

    def replace(self, settings: RunSettings) -> None:
        """Put *settings* in force (the node's runtime only)."""
        self._current = settings
