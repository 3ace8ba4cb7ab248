"""PageStorePipeline: each page's body in a file under PAGESTORE_DIR, never outside it.

The path comes from ``crawler.policy.storepath`` (docs/pagestore.md). Writes go to
a ``.tmp-*`` file in the target's directory, then ``os.replace``: a crash leaves the
old file or the new one, never half of one (a leftover ``.tmp-*`` file can be
deleted; stored names never start with ``.``). Before writing, every directory on
the way is checked not to be a symlink and the target's resolved parent to lie
under the resolved root, so even a path the scheme would never make, or a symlink
planted in the store, cannot send a write elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured
from scrapy.utils.conf import build_component_list
from scrapy.utils.misc import load_object

from crawler.items import PageRecord
from crawler.policy.storepath import store_path
from crawler.revisit.entries import NOT_MODIFIED

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

# Bodies up to this size are written on the reactor thread; larger ones in a thread.
INLINE_WRITE_BYTES = 64 * 1024
TEMP_PREFIX = ".tmp-"


class UnsafePathError(ValueError):
    """A store path that would leave the root (or pass through a symlink)."""


@dataclass(frozen=True, slots=True)
class PageStoreConfig:
    root: Path | None  # None: the page store is off

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> PageStoreConfig:
        directory = settings.get("PAGESTORE_DIR")
        if not directory:
            return cls(root=None)
        if not isinstance(directory, (str, os.PathLike)):
            raise TypeError(f"PAGESTORE_DIR must be a path, got {directory!r}")
        return cls(root=Path(directory))


def write_page(root: Path, relative: PurePosixPath, body: bytes) -> Path:
    """Write *body* atomically at *root*/*relative*, creating directories; returns
    the file's path. Raises ``UnsafePathError`` (nothing written) if the file would
    not be inside *root*, ``OSError`` if the file system refuses."""
    if (
        not relative.parts
        or relative.is_absolute()
        or any(part in ("", ".", "..") or "\0" in part for part in relative.parts)
    ):
        raise UnsafePathError(f"not a safe relative path: {str(relative)[:200]!r}")
    base = root.resolve()
    parent = base
    for part in relative.parts[:-1]:
        parent = parent / part
        if parent.is_symlink():
            raise UnsafePathError(f"symlink on the way: {parent}")
        with contextlib.suppress(FileExistsError):
            parent.mkdir()
    target = parent / relative.parts[-1]
    if not parent.resolve().is_relative_to(base) or target.is_symlink():
        raise UnsafePathError(f"outside {base}: {target}")
    _replace_atomically(target, body)
    return target


def _replace_atomically(target: Path, body: bytes) -> None:
    """Write a temporary file next to *target*, then rename it over *target*."""
    temp = target.with_name(f"{TEMP_PREFIX}{secrets.token_hex(8)}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    descriptor = os.open(temp, flags | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(body)
        temp.replace(target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def page_store_on(settings: BaseSettings) -> bool:
    """Whether this crawl stores pages: ``PAGESTORE_DIR`` set and the pipeline among
    ``ITEM_PIPELINES`` (``-s ITEM_PIPELINES={}`` turns it off). Depth repair answers
    a page again from the store only then; otherwise it never fetches it twice."""
    if not settings.get("PAGESTORE_DIR"):
        return False
    pipelines = build_component_list(settings.getwithbase("ITEM_PIPELINES"))
    return any(
        load_object(pipeline) is PageStorePipeline
        if isinstance(pipeline, str)
        else pipeline is PageStorePipeline
        for pipeline in pipelines
    )


class PageStorePipeline:
    """Stores each fetched page's body; sets ``store_path`` on its record."""

    def __init__(self, crawler: Crawler, root: Path) -> None:
        self._crawler = crawler
        self._root = root
        self._rejected_logged = False
        self._error_logged = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        config = PageStoreConfig.from_settings(crawler.settings)
        if config.root is None:
            raise NotConfigured("PAGESTORE_DIR is empty")
        return cls(crawler, config.root)

    def open_spider(self) -> None:
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
        self._crawler.stats.inc_value("pagestore/rejected_path")
        if not self._rejected_logged:
            self._rejected_logged = True
            logger.warning(
                "Page store skipped %(url)s: %(error)s; further ones are only "
                "counted in pagestore/rejected_path",
                {"url": item.url[:500], "error": error},
                extra={"spider": self._crawler.spider},
            )

    def _failed(self, item: PageRecord, error: OSError) -> None:
        self._crawler.stats.inc_value("pagestore/errors")
        if not self._error_logged:
            self._error_logged = True
            logger.error(
                "Page store could not write %(url)s: %(error)s; further errors are "
                "only counted in pagestore/errors",
                {"url": item.url[:500], "error": error},
                extra={"spider": self._crawler.spider},
            )
