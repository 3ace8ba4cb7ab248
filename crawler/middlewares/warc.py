"""WARC output: a ``request`` and a ``response`` record for every download.

Off unless ``WARC_DIR`` names a directory. The middleware sits next to the
downloader (priority 960), so it sees each request as the download handler gets it
and each response as it came off the wire: redirect hops and robots.txt fetches are
separate downloads, and the body is the raw one, still compressed when the server
sent ``Content-Encoding`` (Scrapy's HttpCompressionMiddleware, 590, decodes it only
later), so the stored payload always agrees with the stored headers. The HTTP client
has already removed chunked transfer coding: a ``Transfer-Encoding`` header is kept
as ``X-Crawler-Transfer-Encoding``. A response this middleware did not see go out (an
HTTP cache hit) is not traffic and is not written.

Records are gzipped one by one into ``<crawl>-<UTC time>-<host>-<pid>-<serial>.warc.gz``
under ``WARC_DIR`` (written as ``....warc.gz.open``, renamed when closed); each file
starts with a ``warcinfo`` record and is closed once it reaches ``WARC_MAX_SIZE``
bytes, so a file exceeds it by at most one request/response pair. A failed write
never stops the crawl: it is logged once and counted in ``warc/errors``, and the
next download starts a new file.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import socket
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from http import HTTPStatus
from io import BytesIO
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import urlsplit
from weakref import WeakKeyDictionary

import scrapy
from scrapy import signals
from scrapy.exceptions import NotConfigured

# warcio ships no type hints: its objects are Any here.
from warcio.recordbuilder import RecordBuilder
from warcio.statusandheaders import StatusAndHeaders
from warcio.timeutils import datetime_to_iso_date
from warcio.warcwriter import WARCWriter

from crawler.crawlstate.keys import CrawlKeys
from crawler.policy.typedsettings import get_int
from crawler.startup import StartupFailure

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

# WARC/1.0: what warcio, Heritrix and wget write, and every WARC reader accepts.
WARC_VERSION = "1.0"
# Request headers never written: credentials meant for a proxy, not the site.
PRIVATE_HEADERS = frozenset({b"proxy-authorization"})
# Response headers the HTTP client already applied, kept under another name.
RENAMED_HEADERS = {"transfer-encoding": "X-Crawler-Transfer-Encoding"}
# Builds records (no I/O): one is enough for the process.
_BUILDER = RecordBuilder(warc_version=WARC_VERSION)
# Characters kept in a file-name part; anything else becomes "_".
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True, slots=True)
class WarcConfig:
    """Where WARC files go and when one is closed, checked once at start-up."""

    directory: Path
    max_size: int
    crawl: str

    @classmethod
    def from_settings(cls, settings: BaseSettings, spider_name: str) -> WarcConfig:
        """The config; ``ValueError`` with one line naming a bad setting."""
        max_size = get_int(settings, "WARC_MAX_SIZE")
        if max_size <= 0:
            raise ValueError(f"WARC_MAX_SIZE must be > 0 bytes, got {max_size!r}")
        crawl = CrawlKeys.of(settings, spider_name).prefix
        return cls(Path(settings.get("WARC_DIR")), max_size, crawl)


def warc_filename(crawl: str, *, now: float, node: str, serial: int) -> str:
    """``<crawl>-<YYYYmmddHHMMSS>-<node>-<serial>.warc.gz``, safe on any file system."""
    stamp = datetime.fromtimestamp(now, UTC).strftime("%Y%m%d%H%M%S")
    parts = (_UNSAFE.sub("_", crawl), stamp, _UNSAFE.sub("_", node), f"{serial:05d}")
    return "-".join(parts) + ".warc.gz"


def _protocol(response: Response) -> str:
    protocol = response.protocol or ""
    return protocol if protocol.startswith("HTTP/") else "HTTP/1.1"


def _header_list(headers: Any, skip: frozenset[bytes]) -> list[tuple[str, str]]:
    """Scrapy headers as (name, value) text pairs, one per value, in their order."""
    return [
        (name.decode("latin-1"), value.decode("latin-1"))
        for name, values in headers.items()
        if name.lower() not in skip
        for value in values
    ]


def request_headers(request: Request, protocol: str) -> Any:
    """The request line and headers as sent; the HTTP client adds Host itself."""
    url = urlsplit(request.url)
    target = (url.path or "/") + (f"?{url.query}" if url.query else "")
    headers = _header_list(request.headers, PRIVATE_HEADERS | {b"host"})
    host = request.headers.get(b"Host")
    headers.insert(0, ("Host", host.decode("latin-1") if host else url.netloc))
    line = f"{request.method} {target} {protocol}"
    return StatusAndHeaders(line, headers, is_http_request=True)


def response_headers(response: Response, protocol: str) -> Any:
    """The status line and headers as received (see the module docstring)."""
    try:
        reason = HTTPStatus(response.status).phrase
    except ValueError:
        reason = ""
    headers = [
        (RENAMED_HEADERS.get(name.lower(), name), value)
        for name, value in _header_list(response.headers, frozenset())
    ]
    return StatusAndHeaders(f"{response.status} {reason}".rstrip(), headers, protocol)


class WarcFiles:
    """The WARC file being written, its successors, and their warcinfo records."""

    def __init__(self, config: WarcConfig, *, info: dict[str, str]) -> None:
        self._config = config
        self._info = info
        self._node = f"{socket.gethostname()}-{os.getpid()}"
        self._serial = 0
        self._path: Path | None = None
        self._file: IO[bytes] | None = None
        self._writer: Any = None
        self.records = 0
        self.files = 0

    @property
    def directory(self) -> Path:
        return self._config.directory

    def write_pair(self, request_record: Any, response_record: Any) -> None:
        """Append a response and its request (opening a file first if none is
        open) and close the file once it reaches WARC_MAX_SIZE; ``OSError`` if
        the disk says no, and the file is then given up."""
        try:
            writer = self._writer or self._open()
            writer.write_request_response_pair(request_record, response_record)
            self.records += 2
            assert self._file is not None
            if self._file.tell() >= self._config.max_size:
                self.close()
        except OSError:
            self._abandon()
            raise

    def _open(self) -> Any:
        self._config.directory.mkdir(parents=True, exist_ok=True)
        name = warc_filename(
            self._config.crawl, now=time.time(), node=self._node, serial=self._serial
        )
        self._serial += 1
        self._path = self._config.directory / name
        self._file = self._path.with_name(name + ".open").open("xb")
        self.files += 1
        self._writer = WARCWriter(self._file, gzip=True, warc_version=WARC_VERSION)
        self._writer.write_record(self._writer.create_warcinfo_record(name, self._info))
        self.records += 1
        return self._writer

    def close(self) -> None:
        """Close the open file, if any, and give it its final name."""
        if self._file is None or self._path is None:
            return
        file, path = self._file, self._path
        self._file = self._path = self._writer = None
        file.close()
        Path(file.name).rename(path)
        logger.info("Closed WARC file %(path)s", {"path": path})

    def _abandon(self) -> None:
        """Drop a file a write failed on; it keeps its ``.open`` name."""
        file, self._file, self._path, self._writer = self._file, None, None, None
        if file is not None:
            with contextlib.suppress(OSError):
                file.close()


class WarcMiddleware:
    """Writes every download this node makes to WARC files under ``WARC_DIR``."""

    def __init__(
        self,
        crawler: Crawler,
        files: WarcFiles,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        assert crawler.stats is not None
        self._crawler = crawler
        self._stats = crawler.stats
        self._files = files
        self._clock = clock
        # When each request went to the download handler (the records' WARC-Date).
        self._sent: WeakKeyDictionary[Request, float] = WeakKeyDictionary()
        self._failure_logged = False
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self | StartupFailure:
        """The middleware; ``NotConfigured`` when ``WARC_DIR`` is empty; with a bad
        setting, a stand-in that logs one line and closes the spider."""
        if not crawler.settings.get("WARC_DIR"):
            raise NotConfigured("WARC_DIR is empty")
        assert crawler.spidercls is not None
        try:
            config = WarcConfig.from_settings(crawler.settings, crawler.spidercls.name)
        except ValueError as exc:
            return StartupFailure(crawler, f"Bad setting: {exc}")
        return cls(crawler, WarcFiles(config, info=_warcinfo(crawler, config)))

    def process_request(self, request: Request) -> None:
        self._sent[request] = self._clock()

    def process_response(self, request: Request, response: Response) -> Response:
        sent = self._sent.pop(request, None)
        if sent is None:  # not downloaded past this middleware: a cache hit
            return response
        protocol = _protocol(response)
        date = datetime_to_iso_date(
            datetime.fromtimestamp(sent, UTC).replace(tzinfo=None)
        )
        warc_headers = {"WARC-Date": date}
        if response.ip_address is not None:
            warc_headers["WARC-IP-Address"] = str(response.ip_address)
        if "dataloss" in response.flags:
            warc_headers["WARC-Truncated"] = "disconnect"
        response_record = _record(
            request.url, "response", response.body, warc_headers,
            response_headers(response, protocol),
        )  # fmt: skip
        request_record = _record(
            request.url, "request", request.body, {"WARC-Date": date},
            request_headers(request, protocol),
        )  # fmt: skip
        self._write(request_record, response_record)
        return response

    def _write(self, request_record: Any, response_record: Any) -> None:
        records, files = self._files.records, self._files.files
        try:
            self._files.write_pair(request_record, response_record)
        except OSError as exc:
            self._stats.inc_value("warc/errors")
            self._log_failure_once(exc)
        self._count(records, files)

    def _count(self, records: int, files: int) -> None:
        if added := self._files.records - records:
            self._stats.inc_value("warc/records", added)
        if added := self._files.files - files:
            self._stats.inc_value("warc/files", added)

    def _log_failure_once(self, error: OSError) -> None:
        if self._failure_logged:
            return
        self._failure_logged = True
        logger.error(
            "Could not write WARC files under %(directory)s (%(error)s); the crawl "
            "goes on, further failures are only counted in warc/errors",
            {"directory": self._files.directory, "error": error},
            extra={"spider": self._crawler.spider},
        )

    def _spider_closed(self) -> None:
        records, files = self._files.records, self._files.files
        try:
            self._files.close()
        except OSError as exc:
            self._stats.inc_value("warc/errors")
            self._log_failure_once(exc)
        self._count(records, files)


def _record(
    url: str,
    record_type: str,
    body: bytes,
    warc_headers: dict[str, str],
    http_headers: Any,
) -> Any:
    """A record of *body* after *http_headers*; digests are computed on writing."""
    return _BUILDER.create_warc_record(
        url,
        record_type,
        payload=BytesIO(body),
        length=len(body),
        warc_headers_dict=warc_headers,
        http_headers=http_headers,
    )


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
        "description": "request and response records of every download",
    }
