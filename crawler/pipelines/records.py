"""Writes one row per page to the page-record database (``crawler/records.py``).

Rows are held until ``RECORDS_BATCH_SIZE`` of them are waiting, then written in one
transaction in a worker thread, so the reactor never waits on the database; a timer
writes what is held every ``FLUSH_INTERVAL`` seconds, and the last rows are written
when the spider closes. A refetched URL overwrites its row. A batch that fails (the
database is down, locked, restarting) is logged, counted in ``records/errors`` and
kept for the next try: the crawl goes on. Past ``MAX_HELD_BATCHES`` batches held, the
oldest rows are given up (``records/dropped``), as are rows the database refuses.
While writes fail, only the timer tries again.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call

from crawler.items import PageRecord
from crawler.policy.typedsettings import get_int
from crawler.records import RecordsDatabase, RecordsDatabaseError, Row, row_of
from crawler.startup import StartupFailure

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.utils.asyncio import AsyncioLoopingCall
    from twisted.internet.task import LoopingCall

logger = logging.getLogger(__name__)

# Seconds between two writes of whatever rows are held.
FLUSH_INTERVAL = 2.0
# Batches held while the database cannot be written before the oldest rows go.
MAX_HELD_BATCHES = 100


class RecordsPipeline:
    """Upserts a ``pages`` row for every ``PageRecord``; other items pass through."""

    def __init__(self, crawler: Crawler, url: str, batch_size: int) -> None:
        self._crawler = crawler
        self._url = url
        self._batch_size = batch_size
        self._database: RecordsDatabase | None = None
        # URL -> row: a URL recorded twice before a write keeps its last row.
        self._held: dict[str, Row] = {}
        self._lock = asyncio.Lock()
        self._timer: AsyncioLoopingCall | LoopingCall | None = None
        self._ticking: asyncio.Task[None] | None = None
        self._failing = False
        self._failure: StartupFailure | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self | StartupFailure:
        url = crawler.settings.get("RECORDS_DATABASE_URL") or ""
        if not url:
            raise NotConfigured("RECORDS_DATABASE_URL is empty")
        try:
            batch_size = get_int(crawler.settings, "RECORDS_BATCH_SIZE")
            if batch_size < 1:
                raise ValueError(f"RECORDS_BATCH_SIZE must be >= 1, got {batch_size}")
            RecordsDatabase(url)  # checks the URL's form; connects in open_spider
        except (ValueError, RecordsDatabaseError) as exc:
            return StartupFailure(crawler, f"Bad setting: {exc}")
        return cls(crawler, url, batch_size)

    async def open_spider(self) -> None:
        """Connect and create the table; if that fails, the crawl stops with one
        line (see ``crawler.startup``)."""
        database = RecordsDatabase(self._url)
        try:
            self._database = await asyncio.to_thread(database.open)
        except RecordsDatabaseError as exc:
            # Kept: signals hold only a weak reference to its handler.
            self._failure = StartupFailure(self._crawler, str(exc))
            return
        self._timer = create_looping_call(self._tick)
        self._timer.start(FLUSH_INTERVAL, now=False)

    async def process_item(self, item: object) -> object:
        if self._database is None or not isinstance(item, PageRecord):
            return item
        self._held.pop(item.url, None)  # a re-recorded URL goes to the end
        self._held[item.url] = row_of(item)
        if len(self._held) >= self._batch_size and not self._busy():
            await self.flush()
        return item

    def _busy(self) -> bool:
        """Whether a write runs, or failed last time (the timer then retries)."""
        return self._lock.locked() or self._failing

    def _tick(self) -> None:
        if self._held and self._ticking is None and not self._lock.locked():
            self._ticking = asyncio.ensure_future(self.flush())
            self._ticking.add_done_callback(self._ticked)

    def _ticked(self, _task: asyncio.Task[None]) -> None:
        self._ticking = None

    async def flush(self) -> None:
        """Write every row held, a batch a transaction; stops at the first batch
        that fails, which is kept with the rest for the next flush."""
        async with self._lock:
            while self._held and self._database is not None:
                batch = self._take(self._batch_size)
                if not await self._write(self._database, batch):
                    self._put_back(batch)
                    self._cap_held()
                    return

    async def _write(self, database: RecordsDatabase, batch: dict[str, Row]) -> bool:
        stats = self._crawler.stats
        assert stats is not None
        try:
            rejected = await asyncio.to_thread(database.upsert, list(batch.values()))
        except RecordsDatabaseError as exc:
            stats.inc_value("records/errors")
            if not self._failing:
                self._failing = True
                logger.error(
                    "%(error)s; %(rows)d rows kept for the next try (further "
                    "failures are counted in records/errors)",
                    {"error": exc, "rows": len(batch) + len(self._held)},
                    extra={"spider": self._crawler.spider},
                )
            return False
        if self._failing:
            self._failing = False
            logger.info(
                "Writing page records works again",
                extra={"spider": self._crawler.spider},
            )
        if rejected:
            self._drop(len(rejected), f"refused by the database: {rejected[0][0]!r}")
        stats.inc_value("records/written", len(batch) - len(rejected))
        return True

    def _take(self, count: int) -> dict[str, Row]:
        urls = list(self._held)[:count]
        return {url: self._held.pop(url) for url in urls}

    def _put_back(self, batch: dict[str, Row]) -> None:
        """*batch* back in front of the held rows, unless a newer row of its URL
        arrived while it was being written."""
        newer = self._held
        self._held = {url: row for url, row in batch.items() if url not in newer}
        self._held.update(newer)

    def _cap_held(self) -> None:
        excess = len(self._held) - MAX_HELD_BATCHES * self._batch_size
        if excess > 0:
            for url in list(self._held)[:excess]:
                del self._held[url]
            self._drop(excess, "too many held while the database cannot be written")

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
        """Write what is held (one last try), then close the connection."""
        if self._timer is not None and self._timer.running:
            self._timer.stop()
        if self._ticking is not None:
            await self._ticking
        database = self._database
        if database is None:
            return
        await self.flush()
        if self._held:
            self._drop(len(self._held), "the database could not be written at close")
            self._held.clear()
        self._database = None
        await asyncio.to_thread(database.close)
