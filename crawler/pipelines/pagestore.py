"""PageStorePipeline: each page's body in the page store (``crawler.pagestore``),
its path on the page's record."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

from crawler.context.directories import (
    UnwritableDirectoryError,
    check_writable_directory,
)
from crawler.context.logonce import OnceLogger
from crawler.context.startup import StartupFailure, failed_at_startup
from crawler.items import PageRecord
from crawler.pagestore.files import PageStoreConfig, write_page
from crawler.policy.storepath import store_path
from crawler.records.visits import NOT_MODIFIED

if TYPE_CHECKING:
    from pathlib import Path
    from typing import Self

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

# Bodies up to this size are written on the reactor thread; larger ones in a thread.
INLINE_WRITE_BYTES = 64 * 1024


class PageStorePipeline:
    """Stores each fetched page's body; sets ``store_path`` on its record."""

    # Handed the page record of each response a spider handled without making one
    # (crawler.spiders.responserecords), and depth repairs.
    takes_page_records = True

    def __init__(self, crawler: Crawler, root: Path) -> None:
        self._crawler = crawler
        self._root = root
        self._once = OnceLogger(logger, crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self | StartupFailure:
        """The pipeline; with a directory it cannot write, a stand-in that stops
        the crawl with one line before anything opens."""
        config = PageStoreConfig.from_settings(crawler.settings)
        if config.root is None:
            raise NotConfigured  # switched off: no message (a message warns)
        try:
            check_writable_directory(config.root, "PAGESTORE_DIR")
        except UnwritableDirectoryError as exc:
            return StartupFailure(crawler, str(exc))
        return cls(crawler, config.root)

    def open_spider(self) -> None:
        if failed_at_startup(self._crawler):  # the crawl will not run: make nothing
            return
        self._root.mkdir(parents=True, exist_ok=True)
        self._root = self._root.resolve()  # a later chdir moves nothing

    async def process_item(self, item: object) -> object:
        if (
            not isinstance(item, PageRecord)
            or item.status in (0, NOT_MODIFIED)  # a 304: the stored version stays
            or item.fate != "fetched"
        ):
            return item
        try:
            relative = store_path(item.url)
            if len(item.body) <= INLINE_WRITE_BYTES:
                write_page(self._root, relative, item.body)
            else:
                await asyncio.to_thread(write_page, self._root, relative, item.body)
        except ValueError as exc:  # UnsafePathError, or no path for this URL
            self._rejected(item, exc)
        except OSError as exc:
            self._failed(item, exc)
        else:
            item.store_path = relative.as_posix()
            self._crawler.stats.inc_value("pagestore/saved")
        return item

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
