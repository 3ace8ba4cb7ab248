"""The facts of the start-up lines (``crawler.policy.crawlsummary``), gathered
from the crawl's settings and the crawl as this start found it; and the crawl's
entry in its directory's register of running crawls
(``crawler.crawlstate.running``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy.settings import SETTINGS_PRIORITIES

from crawler.crawlstate.clients import masked
from crawler.crawlstate.running import RunningCrawl, register
from crawler.policy.crawlsummary import Delays, StartFacts

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

    from crawler.context.runsettings import RunSettings
    from crawler.crawlstate.connection import CrawlRedis
    from crawler.frontier.node.identity import SettledCrawl

# Where a setting's value came from, by the priority Scrapy gave it.
_SOURCES = {
    SETTINGS_PRIORITIES["default"]: "default",
    SETTINGS_PRIORITIES["command"]: "default",
    SETTINGS_PRIORITIES["addon"]: "default",
    SETTINGS_PRIORITIES["project"]: "settings.py",
    SETTINGS_PRIORITIES["spider"]: "the spider's custom_settings",
    SETTINGS_PRIORITIES["cmdline"]: "-s",
}


def start_facts(
    settings: BaseSettings,
    run: RunSettings,
    *,
    prefix: str,
    redis: CrawlRedis,
    crawl: SettledCrawl,
) -> StartFacts:
    """What the start-up lines say of this crawl."""
    politeness = run.politeness
    start, end = politeness.day_hours
    delays = Delays(
        day=politeness.day_delay,
        night=politeness.night_delay,
        minimum=politeness.floor,
        jitter=politeness.jitter,
        day_hours=f"{start // 60:02d}:{start % 60:02d}-{end // 60:02d}:{end % 60:02d}",
        day_source=source(settings, "POLITENESS_DAY_DELAY"),
        night_source=source(settings, "POLITENESS_NIGHT_DELAY"),
        minimum_source=_floor_source(settings),
        key=str(settings.get("POLITENESS_KEY") or "host").strip().lower(),
    )
    where = f" ({redis.source})" if redis.source else ""
    return StartFacts(
        prefix=prefix,
        redis=masked(redis.url) + where,
        identity=crawl.identity,
        verdict=crawl.verdict,
        counts=crawl.counts,
        depth_limit=run.depth_limit,
        delays=delays,
        concurrency=settings.getint("CONCURRENT_REQUESTS"),
    )


def source(settings: BaseSettings, name: str) -> str:
    """Where *name*'s value came from: ``default``, ``settings.py``, ``-s``..."""
    priority = settings.getpriority(name)
    if priority is None:
        return "default"
    return _SOURCES.get(priority, f"priority {priority}")


def _floor_source(settings: BaseSettings) -> str:
    """POLITENESS_MIN_DELAY's source; the add-on moves a DOWNLOAD_DELAY there, with
    its priority, and sets DOWNLOAD_DELAY to 0 (``crawler.addon``)."""
    found = source(settings, "POLITENESS_MIN_DELAY")
    moved = (
        settings.getpriority("POLITENESS_MIN_DELAY")
        == settings.getpriority("DOWNLOAD_DELAY")
        and found != "default"
        and not settings.getfloat("DOWNLOAD_DELAY")
    )
    return f"DOWNLOAD_DELAY in {found}" if moved else found


def register_running(
    settings: BaseSettings, prefix: str, redis_url: str, now: float
) -> Path | None:
    """Register this crawl in ``FRONTIER_RUNNING_DIR`` (empty: not at all); the
    entry's path, None if none was written (a directory that cannot be written is
    no reason to stop a crawl: commands then need ``-s REDIS_URL``)."""
    directory = settings.get("FRONTIER_RUNNING_DIR") or ""
    if not directory:
        return None
    crawl = RunningCrawl(prefix, redis_url, os.getpid(), now)
    try:
        return register(Path(directory), crawl)
    except OSError:
        return None
