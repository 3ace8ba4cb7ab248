"""WARC output: a ``request`` and a ``response`` record for every download (a
``revisit`` record instead of the response when a revisit brought nothing new).

Off unless ``WARC_URL`` names a directory or an object store (where files go
whole once closed: ``crawler.middlewares.warcupload``). The middleware sits next to
the downloader (priority 960), so it sees each request as the download handler gets it
and each response as it came off the wire: redirect hops and robots.txt fetches are
separate downloads, and the body is the raw one (Scrapy's HttpCompressionMiddleware,
590, decodes it only later). A response this middleware did not see go out (an HTTP
cache hit) is not traffic and is not written. What a record holds, and when a
revisit of a page is a ``revisit`` record, is
``crawler.middlewares.warcrecords``; how files are named, filled and closed,
``crawler.middlewares.warcfiles``. A failed write never stops the crawl: it is
logged once and counted in ``warc/errors``, and the next download starts a new file.
"""

from __future__ import annotations

import logging
import socket
import time
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

import scrapy
from scrapy import signals
from scrapy.exceptions import NotConfigured

from crawler.context.directories import (
    UnwritableDirectoryError,
    check_writable_directory,
)
from crawler.context.logonce import OnceLogger
from crawler.context.startup import StartupFailure
from crawler.middlewares.warcfiles import WarcConfig, WarcFiles
from crawler.middlewares.warcrecords import WARC_VERSION, download_records
from crawler.middlewares.warcupload import WarcUploader
from crawler.storage.stores import store_at

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)


class WarcMiddleware:
    """Writes every download this node makes to WARC files (``WARC_URL``)."""

    def __init__(
        self,
        crawler: Crawler,
        files: WarcFiles,
        *,
        uploader: WarcUploader | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        assert crawler.stats is not None
        self._crawler = crawler
        self._stats = crawler.stats
        self._files = files
        self._uploader = uploader
        self._clock = clock
        # When each request went to the download handler (the records' WARC-Date).
        self._sent: WeakKeyDictionary[Request, float] = WeakKeyDictionary()
        self._once = OnceLogger(logger, crawler)
        crawler.signals.connect(self._spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self | StartupFailure:
        """The middleware; ``NotConfigured`` when ``WARC_URL`` is empty; with a bad
        setting, a stand-in that logs one line and closes the spider."""
        settings = crawler.settings
        if not settings.get("WARC_URL"):
            raise NotConfigured  # off by default: no message (a message warns)
        assert crawler.spidercls is not None
        assert crawler.stats is not None
        try:
            config = WarcConfig.from_settings(settings, crawler.spidercls.name)
            check_writable_directory(config.directory, config.directory_setting)
            uploader = None
            if config.upload_to is not None:
                store = store_at(config.upload_to, "WARC_URL", settings)
                store.check(missing_ok=True)
                uploader = WarcUploader(store, config.directory, crawler.stats)
        except UnwritableDirectoryError as exc:
            return StartupFailure(crawler, str(exc))
        except ValueError as exc:
            return StartupFailure(crawler, f"Bad setting: {exc}")
        files = WarcFiles(
            config,
            info=_warcinfo(crawler, config),
            closed=uploader.submit if uploader else bool,
        )
        return cls(crawler, files, uploader=uploader)

    def process_request(self, request: Request) -> None:
        self._sent[request] = self._clock()

    def process_response(self, request: Request, response: Response) -> Response:
        sent = self._sent.pop(request, None)
        if sent is None:  # not downloaded past this middleware: a cache hit
            return response
        request_record, response_record = download_records(request, response, sent=sent)
        self._write(request_record, response_record)
        return response

    def _write(self, request_record: Any, response_record: Any) -> None:
        records, files = self._files.records, self._files.files
        try:
            self._files.write_pair(request_record, response_record)
        except OSError as exc:
            self._failed(exc)
        self._count(records, files)

    def _count(self, records: int, files: int) -> None:
        if added := self._files.records - records:
            self._stats.inc_value("warc/records", added)
        if added := self._files.files - files:
            self._stats.inc_value("warc/files", added)

    def _failed(self, error: OSError) -> None:
        """Count a failed write; log the first (the crawl goes on without WARCs)."""
        self._once.event(
            "warc/errors",
            "Could not write WARC files under %(directory)s (%(error)s); the crawl "
            "goes on, further failures are only counted in warc/errors",
            {"directory": self._files.directory, "error": error},
            level=logging.ERROR,
        )

    def _spider_opened(self) -> None:
        if self._uploader is not None:
            self._uploader.start()

    def _spider_closed(self) -> None:
        records, files = self._files.records, self._files.files
        try:
            self._files.close()
        except OSError as exc:
            self._failed(exc)
        self._count(records, files)
        if self._uploader is not None:
            self._uploader.close()


def _warcinfo(crawler: Crawler, config: WarcConfig) -> dict[str, str]:
    """The fields of every file's warcinfo record."""
    settings = crawler.settings
    return {
        "software": f"{settings.get('BOT_NAME')} (Scrapy {scrapy.__version__}, warcio)",
        "format": f"WARC File Format {WARC_VERSION}",
        "conformsTo": "http://bibnum.bnf.fr/WARC/WARC_ISO_28500_version1_latestdraft.pdf",
        "hostname": socket.gethostname(),
        "isPartOf": config.crawl,
        "robots": "obey" if settings.getbool("ROBOTSTXT_OBEY") else "ignore",
        "description": "request and response records of every download; revisit "
        "records for revisits that found the page unchanged",
    }
