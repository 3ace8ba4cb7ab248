"""A store in a local directory: each object a file under the root, never outside it.

Writes go to a ``.tmp-*`` file in the target's directory, then ``os.replace``: a
crash leaves the old file or the new one, never half of one (a leftover ``.tmp-*``
file can be deleted; stored names never start with ``.``). Before writing, every
directory on the way is checked not to be a symlink and the target's resolved parent
to lie under the resolved root, so even a key the page store would never make, or a
symlink planted in the store, cannot send a write elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from typing import TYPE_CHECKING

from crawler.context.directories import check_writable_directory
from crawler.storage.address import StoreAddress, check_key
from crawler.storage.errors import UnsafePathError

if TYPE_CHECKING:
    from pathlib import Path

TEMP_PREFIX = ".tmp-"
# Bytes copied at a time from a file put into the store.
COPY_CHUNK = 1 << 20


class LocalStore:
    """Objects as files under one directory (``file://`` and plain-path addresses)."""

    # A local write is fast enough for the reactor's thread when the body is small.
    inline_write_bytes = 64 * 1024
    # Larger bodies written at once, each in a thread.
    concurrent_writes = 4

    def __init__(self, address: StoreAddress, setting: str) -> None:
        assert address.root is not None
        self.address = address
        self._setting = setting
        self._root = address.root

    def check(self, *, missing_ok: bool = True) -> None:
        """``ValueError`` with one line unless the directory can be written (or
        made: a missing one always may be); makes nothing."""
        check_writable_directory(self._root, self._setting)

    def open(self) -> None:
        """Make the directory; later ``chdir`` moves nothing."""
        self._root.mkdir(parents=True, exist_ok=True)
        self._root = self._root.resolve()

    def put(self, key: str, body: bytes) -> None:
        """Write *body* atomically at *key*; ``UnsafePathError`` (nothing written)
        if it would not be inside the root, ``OSError`` if the disk refuses."""
        write_file(self._root, key, body)

    def put_file(self, key: str, path: Path) -> None:
        """Copy *path* to *key* atomically (a temporary file, then a rename)."""
        write_file(self._root, key, path)

    def get(self, key: str) -> bytes:
        """The object's bytes; ``FileNotFoundError`` when absent,
        ``UnsafePathError`` when *key* resolves outside the root."""
        return self.path_of(key).read_bytes()

    def path_of(self, key: str) -> Path:
        """The file of *key*, symlinks followed, checked to be inside the root."""
        check_key(key)
        base = self._root.resolve()
        try:
            resolved = (base / key).resolve()
        except (ValueError, OSError) as exc:  # a symlink loop
            raise UnsafePathError(f"key {key[:200]!r}: {exc}") from None
        if resolved == base or not resolved.is_relative_to(base):
            raise UnsafePathError(f"key {key[:200]!r} leaves {base}")
        return resolved

    def close(self) -> None:
        """Nothing to release."""


def write_file(root: Path, key: str, body: bytes | Path) -> Path:
    """Write *body* (bytes, or a file's content) atomically at *root*/*key*,
    creating directories; returns the file's path. ``UnsafePathError`` (nothing written) if the file would not be
    inside *root*, ``OSError`` if the file system refuses."""
    parts = check_key(key).split("/")
    base = root.resolve()
    parent = base
    for part in parts[:-1]:
        parent = parent / part
        if parent.is_symlink():
            raise UnsafePathError(f"symlink on the way: {parent}")
        with contextlib.suppress(FileExistsError):
            parent.mkdir()
    target = parent / parts[-1]
    if not parent.resolve().is_relative_to(base) or target.is_symlink():
        raise UnsafePathError(f"outside {base}: {target}")
    _replace_atomically(target, body)
    return target


def _replace_atomically(target: Path, body: bytes | Path) -> None:
    """Write a temporary file next to *target*, then rename it over *target*."""
    temp = target.with_name(f"{TEMP_PREFIX}{secrets.token_hex(8)}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    descriptor = os.open(temp, flags | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(descriptor, "wb") as file:
            if isinstance(body, bytes):
                file.write(body)
            else:
                with body.open("rb") as source:
                    shutil.copyfileobj(source, file, COPY_CHUNK)
        temp.replace(target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
