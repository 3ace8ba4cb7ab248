"""PageStorePipeline: each page's body in the page store (``PAGESTORE_URL``: a
directory or an S3-compatible bucket, ``crawler.storage``), its key on the page's
record.

``process_item`` returns once the page is stored, so the frontier, which
acknowledges a page's lease when its items are through the pipelines, never
releases a page whose body could still be lost. A store that cannot take pages now
(unreachable, failing, refusing the credentials) is retried with back-off for as
long as it takes: the pages wait, the crawl waits with them (Scrapy stops taking
responses while its item slots are full), and a ``kill -9`` meanwhile leaves the
leases to expire and the pages to be fetched again. A page the store will never
take (a key or body refused, a file where a directory should be) is counted and
skipped. At most ``STORAGE_MAX_UPLOADS`` writes run at once.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

from crawler.context.logonce import OnceLogger
from crawler.context.startup import StartupFailure, failed_at_startup
from crawler.items import PageRecord
from crawler.policy.storepath import store_path
from crawler.records.visits import NOT_MODIFIED
from crawler.storage.errors import StoreUnavailableError
from crawler.storage.outage import StoreOutage
from crawler.storage.stores import page_store_of

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

    from crawler.storage.stores import ObjectStore

logger = logging.getLogger(__name__)

# Seconds before the first retry of a write the store could not take now, doubled
# after each failure up to the most.
RETRY_DELAY = 0.5
MAX_RETRY_DELAY = 10.0


class PageStorePipeline:
    """Stores each fetched page's body; sets ``store_path`` on its record."""

    # Handed the page record of each response a spider handled without making one
    # (crawler.spiders.responserecords), and depth repairs.
    takes_page_records = True

    def __init__(self, crawler: Crawler, store: ObjectStore) -> None:
        assert crawler.stats is not None
        self._crawler = crawler
        self._stats = crawler.stats
        self._store = store
        self._writers = ThreadPoolExecutor(
            store.concurrent_writes, thread_name_prefix="pagestore"
        )
        self._once = OnceLogger(logger, crawler)
        self._outage = StoreOutage(
            logger,
            "Page store %(store)s cannot take pages (%(error)s): pages wait and are "
            "tried again, every %(most).0f s at most",
            "Page store %(store)s takes pages again after %(seconds).0f s",
            {"store": store.address},
            first=RETRY_DELAY,
            most=MAX_RETRY_DELAY,
        )
        self._failure: StartupFailure | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self | StartupFailure:
        """The pipeline; with a store it cannot use, a stand-in that stops the
        crawl with one line before anything opens."""
        address = crawler.settings.get("PAGESTORE_URL")
        if not address:
            raise NotConfigured  # switched off: no message (a message warns)
        try:
            store = page_store_of(crawler)
            store.check(missing_ok=True)
        except ValueError as exc:
            return StartupFailure(crawler, str(exc))
        return cls(crawler, store)

    def open_spider(self) -> None:
        if failed_at_startup(self._crawler):  # the crawl will not run: make nothing
            return
        try:
            self._store.open()
        except OSError as exc:
            # Kept: signals hold only a weak reference to its handler.
            self._failure = StartupFailure(
                self._crawler, f"{self._store.address} cannot be made: {exc}"
            )

    def close_spider(self) -> None:
        self._writers.shutdown(wait=True)
        self._store.close()

    async def process_item(self, item: object) -> object:
        if (
            not isinstance(item, PageRecord)
            or item.status in (0, NOT_MODIFIED)  # a 304: the stored version stays
            or item.fate != "fetched"
        ):
            return item
        try:
            key = store_path(item.url).as_posix()
            await self._stored(key, item.body)
        except ValueError as exc:  # UnsafePathError, or no path for this URL
            self._rejected(item, exc)
        except OSError as exc:
            self._failed(item, exc)
        else:
            item.store_path = key
            self._stats.inc_value("pagestore/saved")
        return item

    async def _stored(self, key: str, body: bytes) -> None:
        """Write *body* at *key*, waiting out a store that cannot take it now."""
        while True:
            try:
                if len(body) <= self._store.inline_write_bytes:
                    self._store.put(key, body)
                else:
                    loop = asyncio.get_running_loop()
                    await loop.run_in_executor(
                        self._writers, self._store.put, key, body
                    )
            except StoreUnavailableError as exc:
                self._stats.inc_value("pagestore/retries")
                await asyncio.sleep(self._outage.failed(exc))
                continue
            self._outage.answered()
            return

    def _rejected(self, item: PageRecord, error: ValueError) -> None:
        self._once.event(
            "pagestore/rejected_path",
            "Page store skipped %(url)s: %(error)s; further ones are only "
            "counted in pagestore/rejected_path",
            {"url": item.url[:500], "error": error},
        )

    def _failed(self, item: PageRecord, error: OSError) -> None:
        self._once.event(
            "pagestore/errors",
            "Page store could not write %(url)s: %(error)s; further errors are "
            "only counted in pagestore/errors",
            {"url": item.url[:500], "error": error},
            level=logging.ERROR,
        )
