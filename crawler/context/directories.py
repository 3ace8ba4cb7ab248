"""The directories a crawl writes, made and tried at start.

A page store, WARC or data directory the crawl cannot write would otherwise fail
with a traceback at the first page (or, in the engine's opening, with errors from
Scrapy's own components after it). Trying one file in it at start turns that into
one line naming the setting and the reason.
"""

from __future__ import annotations

import tempfile
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path


class UnwritableDirectoryError(ValueError):
    """A directory setting names a place the crawl cannot write (one line)."""


def writable_directory(path: Path, setting: str) -> Path:
    """*path*, made if missing and tried with a file written and removed; raises
    ``UnwritableDirectoryError`` saying ``SETTING PATH is not writable: why``."""
    try:
        if path.exists() and not path.is_dir():
            raise UnwritableDirectoryError(
                f"{setting} {path} is not a directory: name a directory"
            )
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        reason = exc.strerror or str(exc)
        where = (
            f" ({exc.filename})" if exc.filename and exc.filename != str(path) else ""
        )
        raise UnwritableDirectoryError(
            f"{setting} {path} is not writable: {reason}{where}"
        ) from None
    return path
