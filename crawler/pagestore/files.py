"""The page store's files: each page's body under PAGESTORE_DIR, never outside it.

The path comes from ``crawler.policy.storepath`` (docs/pagestore.md). Writes go to
a ``.tmp-*`` file in the target's directory, then ``os.replace``: a crash leaves the
old file or the new one, never half of one (a leftover ``.tmp-*`` file can be
deleted; stored names never start with ``.``). Before writing, every directory on
the way is checked not to be a symlink and the target's resolved parent to lie
under the resolved root, so even a path the scheme would never make, or a symlink
planted in the store, cannot send a write elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import PurePosixPath

    from scrapy.settings import BaseSettings

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
