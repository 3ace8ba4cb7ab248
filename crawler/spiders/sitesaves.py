"""Site histories carried over crawls: the records database's ``sites`` table, read
as the crawl opens (for the hosts ``auto`` classifies) and saved every
``SAVE_INTERVAL`` seconds and at the end, for the site history middleware
(``crawler.spiders.sitehistory``).

A crawl is named by its key prefix and the time its identity was written, so a
crawl started over under the same prefix (``FRONTIER_RESET``, new seeds over a
finished crawl) is a new crawl of the history, and a resumed one is the same. A
database that cannot be read or written costs the history, never the crawl: the
failure is logged once and counted in ``sites/save_errors``, and saves are tried
again at the next interval.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING

from crawler.context.logonce import OnceLogger
from crawler.crawlstate.identity import identity_of
from crawler.records.database import RecordsDatabase, RecordsDatabaseError
from crawler.records.sites import SiteSave, SiteTable

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from crawler.context.sitestrategies import SiteStrategies
    from crawler.crawlstate.keys import CrawlKeys
    from crawler.policy.siteclass import SiteEvidence

logger = logging.getLogger(__name__)

# Seconds between two saves of the hosts whose counts changed.
SAVE_INTERVAL = 30.0


def crawl_name(keys: CrawlKeys, identity: bytes | None) -> str:
    """``<prefix>@<started at>`` from the crawl's stored *identity* (JSON), or the
    prefix alone for a crawl without one."""
    try:
        entry = json.loads(identity) if identity is not None else None
    except ValueError:
        entry = None
    found = identity_of(entry) if isinstance(entry, dict) else None
    if found is None:
        return keys.prefix
    return f"{keys.prefix}@{found.started_at:.3f}"


class SiteSaver:
    """The ``sites`` table of one crawl's records database, written in the background."""

    def __init__(self, crawler: Crawler, url: str, sites: SiteStrategies) -> None:
        assert crawler.stats is not None
        self._stats = crawler.stats
        self._database = RecordsDatabase(url)
        self._table = SiteTable(self._database)
        self._sites = sites
        self._crawl = ""
        self._unsaved: dict[str, SiteEvidence] = {}
        self._saving: asyncio.Task[None] | None = None
        self._next_save = 0.0
        self._once = OnceLogger(logger, crawler)

    async def open(self, crawl: str) -> None:
        """Make the table if missing and, if any host is ``auto``, tell the crawl's
        strategies what earlier crawls saw (run in a thread: it blocks)."""
        self._crawl = crawl
        try:
            await asyncio.to_thread(self._table.create)
            if self._sites.config.uses_auto:
                rows = await asyncio.to_thread(self._table.read)
                self._sites.remember(
                    {host: row.history_before(crawl) for host, row in rows.items()}
                )
        except RecordsDatabaseError as exc:
            self._failed("could not read site histories", exc)

    def note(self, host: str, evidence: SiteEvidence) -> None:
        """*host*'s crawl-wide evidence now: to save at the next save."""
        self._unsaved[host] = evidence

    def tick(self, now: float) -> None:
        """Start a save if one is due, none runs, and anything changed."""
        if now < self._next_save or self._saving is not None or not self._unsaved:
            return
        self._next_save = now + SAVE_INTERVAL
        self._saving = asyncio.ensure_future(self.save())
        self._saving.add_done_callback(self._saved)

    def _saved(self, task: asyncio.Task[None]) -> None:
        self._saving = None
        if not task.cancelled() and (error := task.exception()) is not None:
            logger.error("Saving site histories failed", exc_info=error)

    async def save(self) -> None:
        """Save every host noted since the last save (kept if it fails)."""
        taken, self._unsaved = self._unsaved, {}
        saves = [
            SiteSave(host, evidence.observation(), self._sites.decision_of(host).text())
            for host, evidence in taken.items()
        ]
        try:
            await asyncio.to_thread(self._table.save, self._crawl, saves)
        except RecordsDatabaseError as exc:
            self._unsaved = taken | self._unsaved
            self._failed("could not save site histories", exc)

    def _failed(self, what: str, error: RecordsDatabaseError) -> None:
        self._stats.inc_value("sites/save_errors")
        self._once.once(
            "failure",
            "%(what)s (%(error)s): auto site strategies start from what this crawl "
            "sees; further failures are only counted in sites/save_errors",
            {"what": what, "error": error},
        )

    async def close(self) -> None:
        """The last save, then the connection is closed."""
        if self._saving is not None:
            await asyncio.wait([self._saving])
        try:
            if self._unsaved:
                await self.save()
        finally:
            await asyncio.to_thread(self._database.close)
