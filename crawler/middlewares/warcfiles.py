"""The WARC files of this node: named, opened, filled and closed at their size limit.

Records are gzipped one by one into ``<crawl>-<UTC time>-<host>-<pid>-<serial>.warc.gz``
in the WARC directory (``WARC_URL``, or ``WARC_SPOOL_DIR`` when that is an object
store: ``crawler.middlewares.warcupload``), written as ``....warc.gz.open`` and
renamed when closed; each file starts with a ``warcinfo`` record and is closed once
it reaches ``WARC_MAX_SIZE`` bytes, so a file exceeds it by at most one
request/response pair. A file a write
failed on is given up under its ``.open`` name; the next pair starts a new one.
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
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

# warcio ships no type hints: its objects are Any here.
from warcio.warcwriter import WARCWriter

from crawler.crawlstate.keys import CrawlKeys
from crawler.middlewares.warcrecords import WARC_VERSION
from crawler.policy.typedsettings import get_int
from crawler.storage.address import StoreAddress

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

# Characters kept in a file-name part; anything else becomes "_".
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True, slots=True)
class WarcConfig:
    """Where WARC files go and when one is closed, checked once at start-up."""

    directory: Path  # where files are written
    directory_setting: str  # the setting that names it
    max_size: int
    crawl: str
    upload_to: StoreAddress | None  # an object store closed files go to

    @classmethod
    def from_settings(cls, settings: BaseSettings, spider_name: str) -> WarcConfig:
        """The config; ``ValueError`` with one line naming a bad setting."""
        max_size = get_int(settings, "WARC_MAX_SIZE", above=0, note="bytes")
        crawl = CrawlKeys.of(settings, spider_name).prefix
        address = StoreAddress.parse(settings.get("WARC_URL"), "WARC_URL")
        if address.root is not None:
            return cls(address.root, "WARC_URL", max_size, crawl, None)
        spool = settings.get("WARC_SPOOL_DIR") or ""
        if not spool:
            raise ValueError("WARC_SPOOL_DIR must name a directory when WARC_URL is s3")
        return cls(Path(spool), "WARC_SPOOL_DIR", max_size, crawl, address)


def warc_filename(crawl: str, *, now: float, node: str, serial: int) -> str:
    """``<crawl>-<YYYYmmddHHMMSS>-<node>-<serial>.warc.gz``, safe on any file system."""
    stamp = datetime.fromtimestamp(now, UTC).strftime("%Y%m%d%H%M%S")
    parts = (_UNSAFE.sub("_", crawl), stamp, _UNSAFE.sub("_", node), f"{serial:05d}")
    return "-".join(parts) + ".warc.gz"


class WarcFiles:
    """The WARC file being written, its successors, and their warcinfo records."""

    def __init__(
        self,
        config: WarcConfig,
        *,
        info: dict[str, str],
        closed: Callable[[Path], object] = bool,
    ) -> None:
        self._config = config
        self._info = info
        self._closed = closed  # called with each file closed, by its final name
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
        self._closed(path)

    def _abandon(self) -> None:
        """Drop a file a write failed on; it keeps its ``.open`` name."""
        file, self._file, self._path, self._writer = self._file, None, None, None
        if file is not None:
            with contextlib.suppress(OSError):
                file.close()
