"""The crawl's politeness state: one per crawler, shared by the frontier and the
middlewares.

The frontier asks it for each host's delay when a fetch of that host is done; the
robots middleware tells it each host's ``Crawl-delay``; the traffic monitor reads
the delay in force and its reason. The formula itself is pure, in
``crawler.policy.politeness``.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from crawler.policy.politeness import Delay, PolitenessConfig

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

_BY_CRAWLER: WeakKeyDictionary[Crawler, HostDelays] = WeakKeyDictionary()


class HostDelays:
    """Each host's delay in force, with what robots.txt said about it."""

    def __init__(
        self,
        config: PolitenessConfig,
        stats: StatsCollector | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        self._stats = stats
        self._rng = rng or random.Random()  # noqa: S311 (jitter, not secrets)
        self._crawl_delays: dict[str, float] = {}

    @classmethod
    def of(cls, crawler: Crawler) -> HostDelays:
        """The crawler's one instance; raises ``ValueError`` on a bad setting."""
        if (found := _BY_CRAWLER.get(crawler)) is None:
            config = PolitenessConfig.from_settings(
                crawler.settings, machine_zone=machine_zone()
            )
            found = _BY_CRAWLER[crawler] = cls(config, crawler.stats)
        return found

    def set_crawl_delay(self, host: str, seconds: float | None) -> None:
        """What *host*'s robots.txt asks for our token (``None``: nothing)."""
        if seconds is None:
            self._crawl_delays.pop(host, None)
        else:
            self._crawl_delays[host] = seconds

    def in_force(self, host: str, *, now: float) -> Delay:
        return self.config.in_force(
            host, now=now, crawl_delay=self._crawl_delays.get(host)
        )

    def delay_for(self, host: str, *, now: float) -> float:
        """Seconds *host* waits after this fetch: the delay in force plus jitter."""
        delay = self.in_force(host, now=now)
        if self._stats is not None and delay.reason == "hourly-cap":
            self._stats.inc_value("politeness/hourly_cap")
        return self.config.jittered(delay.seconds, self._rng.random())

    def shortest(self) -> float:
        return self.config.shortest()


def machine_zone() -> str:
    """The IANA name of this machine's time zone (``TZ``, ``/etc/localtime``), or UTC."""
    if name := os.environ.get("TZ", "").lstrip(":"):
        return name
    try:
        target = Path("/etc/localtime").resolve(strict=True)
    except OSError:
        return "UTC"
    parts = target.parts
    if "zoneinfo" in parts:
        return "/".join(parts[parts.index("zoneinfo") + 1 :]) or "UTC"
    return "UTC"
