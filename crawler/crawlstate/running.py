"""Running crawls, registered in their directory so commands find them.

A crawl that opens writes ``<FRONTIER_RUNNING_DIR>/<prefix>.<pid>.json`` (mode
0600): its prefix, Redis URL, pid and when it started; it removes the file when it
closes. A password in the URL is never written (``***`` stands for it): a command
then needs the URL with its password (``PASSWORD_WITHHELD``).
``scrapy frontier`` and ``scrapy pages``, run in the same directory with no Redis
named, read the crawl there, not the directory's private Redis. A file whose
process is gone (a crawl killed with -9) is ignored, and removed by the next crawl
of that prefix to open.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from urllib.parse import quote, urlsplit

from crawler.crawlstate.clients import masked

_SUFFIX = ".json"
# What stands for a password in a registered URL (``clients.masked``).
PASSWORD_WITHHELD = "***"  # noqa: S105 (a placeholder, no password)


@dataclass(frozen=True, slots=True)
class RunningCrawl:
    """One registered crawl process: its prefix, Redis URL, pid and start."""

    prefix: str
    redis_url: str
    pid: int
    started_at: float


def register(directory: Path, crawl: RunningCrawl) -> Path:
    """Write *crawl*'s entry (0600), removing its prefix's stale ones; its path."""
    directory.mkdir(parents=True, exist_ok=True)
    for stale, found in _entries(directory, crawl.prefix):
        if found is None or not _alive(found.pid):
            stale.unlink(missing_ok=True)
    path = directory / f"{quote(crawl.prefix, safe='')}.{crawl.pid}{_SUFFIX}"
    partial = path.with_suffix(".partial")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        json.dump(asdict(replace(crawl, redis_url=masked(crawl.redis_url))), handle)
    partial.replace(path)
    return path


def password_withheld(url: str) -> bool:
    """Whether *url*, read from an entry, had a password that was not written."""
    return urlsplit(url).password == PASSWORD_WITHHELD


def unregister(path: Path) -> None:
    """Remove an entry ``register`` wrote (gone already: nothing to do)."""
    path.unlink(missing_ok=True)


def running_crawl(directory: Path, prefix: str) -> RunningCrawl | None:
    """The live crawl of *prefix* registered in *directory* (the latest started),
    or None."""
    live = [
        found
        for _path, found in _entries(directory, prefix)
        if found is not None and found.prefix == prefix and _alive(found.pid)
    ]
    return max(live, key=lambda found: found.started_at, default=None)


def _entries(directory: Path, prefix: str) -> list[tuple[Path, RunningCrawl | None]]:
    """The entries of *prefix* in *directory*, each read (None: unreadable)."""
    if not directory.is_dir():
        return []
    pattern = f"{quote(prefix, safe='')}.*{_SUFFIX}"
    return [(path, _read(path)) for path in sorted(directory.glob(pattern))]


def _read(path: Path) -> RunningCrawl | None:
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
        return RunningCrawl(
            prefix=str(entry["prefix"]),
            redis_url=str(entry["redis_url"]),
            pid=int(entry["pid"]),
            started_at=float(entry["started_at"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _alive(pid: int) -> bool:
    """Whether a process *pid* runs (one of another user counts as running)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (a crawl killed, its parent not yet waiting) is gone.
    with contextlib.suppress(OSError, IndexError):
        state = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
        return state.rsplit(")", 1)[-1].split()[0] != "Z"
    return True
