"""The directories a crawl writes, tried at start without making anything.

A page store, WARC or data directory the crawl cannot write would otherwise fail
with a traceback at the first page (or, in the engine's opening, with errors from
Scrapy's own components after it). Trying it at start turns that into one line
naming the setting and the reason. The directory itself is made later, by the
component that writes it, so a crawl that stops at start leaves nothing behind.
"""

from __future__ import annotations

import tempfile
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path


class UnwritableDirectoryError(ValueError):
    """A directory setting names a place the crawl cannot write (one line)."""


def check_writable_directory(path: Path, setting: str) -> None:
    """Raises ``UnwritableDirectoryError`` saying ``SETTING PATH is not writable:
    why`` unless *path* is a directory the crawl can write, or one it can make
    (its nearest existing ancestor is a directory a file can be written in)."""
    if path.exists() and not path.is_dir():
        raise UnwritableDirectoryError(
            f"{setting} {path} is not a directory: name a directory"
        )
    existing = next(p for p in (path, *path.parents) if p.exists() or p == p.parent)
    try:
        if not existing.is_dir():
            raise NotADirectoryError(20, "Not a directory", str(existing))
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as exc:
        reason = exc.strerror or str(exc)
        where = (
            f" ({exc.filename})" if exc.filename and exc.filename != str(path) else ""
        )
        raise UnwritableDirectoryError(
            f"{setting} {path} is not writable: {reason}{where}"
        ) from None
