"""WARC files sent whole to an object store (``WARC_URL=s3://...``).

Files are written in ``WARC_SPOOL_DIR`` on this machine as they would be in a WARC
directory (``crawler.middlewares.warcfiles``); each one closed at ``WARC_MAX_SIZE``
(or at the crawl's end) is uploaded whole, streamed in parts, by one thread of its
own, then deleted from the spool. A store that cannot take it now is tried again
with back-off while the crawl runs, and for CLOSE_PATIENCE more seconds once it
ends; what is still in the spool then (the store away, the node killed) is uploaded
first by the next crawl that spools there. A file still named ``.open`` was cut off
mid-write by a crash: it is left for an operator (its gzip members up to the cut are
readable).
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from crawler.storage.errors import StoreUnavailableError
from crawler.storage.outage import StoreOutage

if TYPE_CHECKING:
    from pathlib import Path

    from scrapy.statscollectors import StatsCollector

    from crawler.storage.stores import ObjectStore

logger = logging.getLogger(__name__)

# Seconds before the first retry of an upload the store could not take now, doubled
# after each failure up to the most.
RETRY_DELAY = 1.0
MAX_RETRY_DELAY = 30.0
# Seconds a closing crawl goes on trying to upload its last files.
CLOSE_PATIENCE = 30.0
# What a closed WARC file's name ends with (a file being written ends ``.open``).
CLOSED_SUFFIX = ".warc.gz"


class WarcUploader:
    """Uploads the spool's closed files to *store*, oldest first, one at a time."""

    def __init__(self, store: ObjectStore, spool: Path, stats: StatsCollector) -> None:
        self._store = store
        self._spool = spool
        self._stats = stats
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="warc-upload")
        self._closing = threading.Event()
        self._give_up_at = float("inf")
        self._outage = StoreOutage(
            logger,
            "Could not upload WARC files to %(store)s (%(error)s): they wait in "
            "%(spool)s and are tried again",
            "%(store)s takes WARC files again",
            {"store": store.address, "spool": spool},
            first=RETRY_DELAY,
            most=MAX_RETRY_DELAY,
        )

    @property
    def store(self) -> ObjectStore:
        return self._store

    def start(self) -> None:
        """Make the bucket if there is none; queue the closed files an earlier
        crawl left in the spool."""
        self._thread.submit(self._made)
        if self._spool.is_dir():
            for path in sorted(self._spool.glob(f"*{CLOSED_SUFFIX}")):
                self.submit(path)

    def submit(self, path: Path) -> None:
        """Queue the closed file *path* for upload."""
        self._thread.submit(self._upload, path)

    def close(self) -> None:
        """Upload what is queued, trying for CLOSE_PATIENCE seconds at most; what
        the store did not take by then stays in the spool for the next crawl."""
        self._give_up_at = time.monotonic() + CLOSE_PATIENCE
        self._closing.set()
        self._thread.shutdown(wait=True)
        if left := sorted(self._spool.glob(f"*{CLOSED_SUFFIX}")):
            logger.warning(
                "%(count)d WARC files wait in %(spool)s for the next crawl to "
                "upload them to %(store)s",
                {"count": len(left), "spool": self._spool,
                 "store": self._store.address},
            )  # fmt: skip

    def _made(self) -> None:
        """Make the store's bucket if there is none (uploads say why if not)."""
        try:
            self._store.open()
        except (OSError, ValueError) as exc:
            logger.error(
                "%(store)s: %(error)s", {"store": self._store.address, "error": exc}
            )

    def _upload(self, path: Path) -> None:
        while True:
            try:
                self._store.put_file(path.name, path)
            except StoreUnavailableError as exc:
                self._stats.inc_value("warc/upload_retries")
                if not self._waited(self._outage.failed(exc)):
                    return
                continue
            except (OSError, ValueError) as exc:  # refused for good, or gone
                self._stats.inc_value("warc/upload_errors")
                logger.error(
                    "WARC file %(path)s was not uploaded to %(store)s: %(error)s; "
                    "it stays in the spool",
                    {"path": path, "store": self._store.address, "error": exc},
                )
                return
            break
        path.unlink(missing_ok=True)
        self._stats.inc_value("warc/uploaded")
        self._outage.answered()
        logger.info(
            "Uploaded WARC file %(name)s to %(store)s",
            {"name": path.name, "store": self._store.address},
        )

    def _waited(self, delay: float) -> bool:
        """Wait *delay* seconds before the next try (while the crawl runs, cut short
        when it closes); False when the crawl has closed and its patience is out."""
        if not self._closing.is_set():
            self._closing.wait(delay)
            return True
        left = self._give_up_at - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(delay, left))
        return True
