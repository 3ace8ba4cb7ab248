"""Waiting out a store that cannot answer now (``StoreUnavailableError``).

One policy for every caller that writes or reads a store in a loop (the page
store's pipeline, the WARC uploader, the analysis worker): how long to wait before
the next try (from *first*, doubled after each failure up to *most*), and the
outage logged once when it starts and once when it ends, in the caller's words and
by the caller's logger. How to wait (a coroutine's sleep, a thread's, an event cut
short by a closing crawl) stays the caller's.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping


@dataclass(slots=True)
class StoreOutage:
    """One caller's view of its store's outages.

    *started* and *ended* are log messages (``%``-style, with the caller's
    *values*, and ``error``, ``most`` or ``seconds``: the first error, the longest
    wait, how long it lasted); the start is an ERROR, the end *ended_level*."""

    logger: logging.Logger
    started: str
    ended: str
    values: Mapping[str, object] = field(default_factory=dict)
    first: float = 0.5
    most: float = 10.0
    ended_level: int = logging.WARNING
    _delay: float = field(init=False, default=0.0)
    _since: float | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self._delay = self.first

    @property
    def ongoing(self) -> bool:
        return self._since is not None

    def failed(self, error: Exception) -> float:
        """A try failed with *error*: the seconds to wait before the next one (the
        outage's first failure is logged)."""
        if self._since is None:
            self._since = time.monotonic()
            self.logger.error(
                self.started, {**self.values, "error": error, "most": self.most}
            )
        delay = self._delay
        self._delay = min(self._delay * 2, self.most)
        return delay

    def answered(self) -> None:
        """A try succeeded: the outage, if any, is over (logged once)."""
        self._delay = self.first
        if self._since is None:
            return
        seconds = time.monotonic() - self._since
        self._since = None
        self.logger.log(
            self.ended_level, self.ended, {**self.values, "seconds": seconds}
        )
