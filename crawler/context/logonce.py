"""A fault logged the first time, then only counted in Scrapy's stats.

A crawl that meets one damaged record, unwritable disk or refused request usually
meets it thousands of times more: one line says what happened and which stats key
counts the rest, and the log stays readable. ``OnceLogger`` keeps that rule in one
place for every component: ``event`` adds to a ``component/event`` stats key every
time and logs the first event of its kind; ``once`` only logs, for events counted
elsewhere (or not at all). "Its kind" is the stats key unless a ``key`` says
otherwise, e.g. one line per kind of bad seed, or one line for two keys that count
the same failure. Kinds are remembered for the object's life: callers keep one per
component and crawl.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Hashable

    from scrapy.crawler import Crawler


class OnceLogger:
    """Logs the first event of each kind to *logger*; counts each in *crawler*'s
    stats. With a crawler, lines carry ``extra={"spider": crawler.spider}`` (read
    when logged: a component may be made before the spider); without one, nothing
    is counted and no extra is added (a spider's own logger adds it)."""

    def __init__(
        self,
        logger: logging.Logger | logging.LoggerAdapter[Any],
        crawler: Crawler | None = None,
    ) -> None:
        self._logger = logger
        self._crawler = crawler
        self._logged: set[Hashable] = set()

    def event(
        self,
        stat: str,
        msg: str,
        *args: object,
        level: int = logging.WARNING,
        key: Hashable | None = None,
        count: int = 1,
    ) -> bool:
        """Add *count* to *stat*; log ``msg % args`` at *level* if this is the first
        event of *key* (default: *stat*). Whether it logged."""
        if self._crawler is not None and self._crawler.stats is not None:
            self._crawler.stats.inc_value(stat, count)
        return self._log(stat if key is None else key, level, msg, args)

    def once(
        self, key: Hashable, msg: str, *args: object, level: int = logging.WARNING
    ) -> bool:
        """Log ``msg % args`` at *level* the first time *key* comes; whether it did.
        For events whose count is kept elsewhere (or not kept)."""
        return self._log(key, level, msg, args)

    def _log(
        self, key: Hashable, level: int, msg: str, args: tuple[object, ...]
    ) -> bool:
        if key in self._logged:
            return False
        self._logged.add(key)
        extra = None if self._crawler is None else {"spider": self._crawler.spider}
        # stacklevel 3: the record names the component's line, not this module's.
        self._logger.log(level, msg, *args, extra=extra, stacklevel=3)
        return True
