"""Writes one row per page to the page-record database (``crawler/records/database.py``).

``process_item`` returns only once the page's row is committed, so the frontier,
which acknowledges a page's lease when the page's items are through the pipelines,
never releases a page whose record could still be lost (a ``kill -9`` between the
two leaves the lease to expire and the page to be fetched again). Rows are written
by group commit: one write runs at a time, in a worker thread, and the rows that
arrive meanwhile go together in the next transaction (at most ``RECORDS_BATCH_SIZE``
a transaction); there is no timer on the way. A refetched URL overwrites its row.

A write that fails (the database is down, locked, restarting) is logged once,
counted in ``records/errors`` and tried again after a back-off, for as long as it
takes: the pages wait for their records and the crawl waits with them, rather than
acknowledging pages without a record. Rows the database refuses (a value it cannot
store) are given up (``records/dropped``): no retry would take them.

With revisits on (``REVISIT_POLICY``), the same write records each visit in the URL
library (``crawler.records.library``), which sets the URL's next visit; a 304 leaves
the ``pages`` row alone (the stored version is still the page's). What each revisit
found is counted under ``revisit/``.

A ``DepthRepair`` (a page reparsed at a shorter depth) lowers the depth of its
URL's row, in the same group commit; the row is otherwise the page's fetch's.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, NamedTuple

from scrapy.exceptions import NotConfigured

from crawler.context.startup import StartupFailure, failed_at_startup
from crawler.crawlstate.keys import CrawlKeys
from crawler.items import DepthRepair, PageRecord
from crawler.policy.revisitconfig import RevisitConfig, revisits_on
from crawler.policy.typedsettings import get_int
from crawler.records.database import RecordsDatabase, RecordsDatabaseError
from crawler.records.library import URLLibrary
from crawler.records.schema import Row, row_of
from crawler.records.visits import NOT_MODIFIED, Visit

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Self

    from scrapy.crawler import Crawler

    from crawler.records.visits import Outcome

logger = logging.getLogger(__name__)

# Seconds before the first retry of a failed write, doubled after each failure up
# to the most.
RETRY_DELAY = 0.5
MAX_RETRY_DELAY = 5.0
# The ``revisit/<name>`` stats each outcome of a revisit adds to (a first visit: none).
REVISIT_STATS: dict[str, tuple[str, ...]] = {
    "changed": ("fetched", "changed"),
    "unchanged": ("fetched", "unchanged"),
    "small_change": ("fetched", "unchanged", "small_change"),
    "not_modified": ("fetched", "unchanged", "not_modified"),
    "failed": ("failed",),
    "gone": ("failed", "gone"),
}


class Pending(NamedTuple):
    """What one URL writes: its ``pages`` row (None for a 304: the stored version
    stays, or for a depth repair alone), its visit for the URL library (None with
    revisits off), and the depth its row is lowered to (None: no repair)."""

    row: Row | None
    visit: Visit | None
    depth: int | None = None


class RecordsPipeline:
    """Upserts a ``pages`` row for every ``PageRecord``; other items pass through."""

    # Handed the page record of each response a spider handled without making one
    # (crawler.spiders.responserecords), and depth repairs.
    takes_page_records = True

    def __init__(
        self,
        crawler: Crawler,
        url: str,
        batch_size: int,
        revisits: RevisitConfig | None,
    ) -> None:
        self._crawler = crawler
        self._url = url
        # Each row says which crawl wrote it (`scrapy pages --crawl`): known once
        # the spider opens.
        self._crawl = ""
        self._batch_size = batch_size
        self._revisits = revisits  # None: revisits off
        self._database: RecordsDatabase | None = None
        self._library: URLLibrary | None = None
        # URL -> what to write, and URL -> the future its callers wait on: a URL
        # recorded twice before a write keeps its last record and one future.
        self._pending: dict[str, Pending] = {}
        self._waiting: dict[str, asyncio.Future[None]] = {}
        self._writer: asyncio.Task[None] | None = None
        self._failing = False
        self._failure: StartupFailure | None = None
        self._sites_said: set[str] = set()  # "lazy", "busy": logged once each

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self | StartupFailure:
        url = crawler.settings.get("RECORDS_DATABASE_URL") or ""
        if not url:
            raise NotConfigured  # switched off: no message (a message warns)
        try:
            batch_size = get_int(crawler.settings, "RECORDS_BATCH_SIZE", at_least=1)
            RecordsDatabase(url)  # checks the URL's form; connects in open_spider
            revisits = None
            if revisits_on(crawler.settings):
                revisits = RevisitConfig.from_settings(crawler.settings)
        except (ValueError, RecordsDatabaseError) as exc:
            return StartupFailure(crawler, f"Bad setting: {exc}")
        return cls(crawler, url, batch_size, revisits)

    async def open_spider(self) -> None:
        """Connect and create the table; if that fails, the crawl stops with one
        line (see ``crawler.context.startup``)."""
        if failed_at_startup(self._crawler):  # another component's: create nothing
            return
        spider = self._crawler.spider
        if spider is not None:
            self._crawl = CrawlKeys.of(self._crawler.settings, spider.name).prefix
        database = RecordsDatabase(self._url)
        try:
            self._database = await asyncio.to_thread(database.open)
            if self._revisits is not None:
                library = URLLibrary(database, self._revisits)
                await asyncio.to_thread(library.create)
                self._library = library
        except RecordsDatabaseError as exc:
            # Kept: signals hold only a weak reference to its handler.
            self._failure = StartupFailure(self._crawler, str(exc))

    async def process_item(self, item: object) -> object:
        """Return *item* once its row is committed (or refused by the database)."""
        if self._database is None:
            return item
        if isinstance(item, PageRecord):
            self._pending.pop(item.url, None)  # a re-recorded URL goes to the end
            self._pending[item.url] = Pending(
                None if item.status == NOT_MODIFIED else row_of(item, self._crawl),
                # A link cut as a trap was never fetched: nothing to revisit.
                None
                if self._library is None or item.fate == "trap"
                else Visit.of(item),
            )
        elif isinstance(item, DepthRepair):
            pending = self._pending.get(item.url, Pending(None, None))
            self._pending[item.url] = pending._replace(depth=item.depth)
        else:
            return item
        await self._committed(item.url)
        return item

    async def _committed(self, url: str) -> None:
        """Start the writer if it is idle; return once *url*'s pending write is
        committed."""
        waiting = self._waiting.get(url)
        if waiting is None:
            waiting = asyncio.get_running_loop().create_future()
            self._waiting[url] = waiting
        if self._writer is None:
            self._writer = asyncio.ensure_future(self._write_pending())
        await asyncio.shield(waiting)

    async def _write_pending(self) -> None:
        """Write the pending rows, a transaction at a time, until none are left."""
        try:
            while self._pending and self._database is not None:
                urls = list(self._pending)[: self._batch_size]
                batch = {url: self._pending.pop(url) for url in urls}
                waiting = [self._waiting.pop(url) for url in urls]
                await self._write(self._database, batch)
                for future in waiting:
                    if not future.done():
                        future.set_result(None)
        finally:
            self._writer = None

    async def _write(
        self, database: RecordsDatabase, batch: dict[str, Pending]
    ) -> None:
        """Write *batch* in one transaction (and its visits in a second), trying
        again until the database takes them; rows it refuses are given up."""
        stats = self._crawler.stats
        assert stats is not None
        pendings = batch.values()
        rows = [pending.row for pending in pendings if pending.row is not None]
        visits = [pending.visit for pending in pendings if pending.visit is not None]
        depths = [
            (url, pending.depth)
            for url, pending in batch.items()
            if pending.depth is not None
        ]
        delay = RETRY_DELAY
        while True:
            try:
                rejected = await asyncio.to_thread(database.upsert, rows)
                await asyncio.to_thread(database.lower_depths, depths)
                outcomes = await self._record_visits(visits)
            except RecordsDatabaseError as exc:
                stats.inc_value("records/errors")
                self._failed(exc, len(batch) + len(self._pending))
                await asyncio.sleep(delay)
                delay = min(2 * delay, MAX_RETRY_DELAY)
                continue
            break
        if self._failing:
            self._failing = False
            logger.info(
                "Writing page records works again",
                extra={"spider": self._crawler.spider},
            )
        if rejected:
            self._drop(len(rejected), f"refused by the database: {rejected[0][0]!r}")
        stats.inc_value("records/written", len(rows) - len(rejected))
        for outcome in outcomes:
            for name in REVISIT_STATS.get(outcome, ()):
                stats.inc_value(f"revisit/{name}")
        if self._library is not None:
            self._report_sites(self._library.site_factors)

    def _report_sites(self, factors: dict[str, float]) -> None:
        """Hosts whose factor stretches (lazy) or shortens (busy) their pages'
        intervals, as of the library's last look: counted, the first of each kind
        logged."""
        stats = self._crawler.stats
        assert stats is not None
        for kind, hosts in (
            ("lazy", sorted(h for h, f in factors.items() if f > 1)),
            ("busy", sorted(h for h, f in factors.items() if f < 1)),
        ):
            stats.set_value(f"revisit/{kind}_sites", len(hosts))
            if hosts and kind not in self._sites_said:
                self._sites_said.add(kind)
                logger.info(
                    "%(host)s is a %(kind)s site: its pages' revisit intervals are "
                    "scaled by %(factor).2f (REVISIT_SITE_*; such hosts are counted "
                    "in revisit/%(kind)s_sites)",
                    {"host": hosts[0], "kind": kind, "factor": factors[hosts[0]]},
                    extra={"spider": self._crawler.spider},
                )

    async def _record_visits(self, visits: Sequence[Visit]) -> list[Outcome]:
        """Record *visits* in the URL library (none with revisits off)."""
        if self._library is None or not visits:
            return []
        return await asyncio.to_thread(self._library.record, visits, time.time())

    def _failed(self, error: RecordsDatabaseError, rows: int) -> None:
        if self._failing:
            return
        self._failing = True
        logger.error(
            "%(error)s; %(rows)d pages wait for their records, and the crawl with "
            "them, until the database can be written (tried again every few "
            "seconds; further failures are counted in records/errors)",
            {"error": error, "rows": rows},
            extra={"spider": self._crawler.spider},
        )

    def _drop(self, count: int, why: str) -> None:
        stats = self._crawler.stats
        assert stats is not None
        stats.inc_value("records/dropped", count)
        logger.error(
            "%(count)d page records given up, %(why)s",
            {"count": count, "why": why},
            extra={"spider": self._crawler.spider},
        )

    async def close_spider(self) -> None:
        """Wait for the write under way (the engine closes the pipelines once every
        item is through them), then close the connection."""
        if self._writer is not None:
            await self._writer
        database = self._database
        if database is None:
            return
        self._database = None
        await asyncio.to_thread(database.close)
