"""A Scrapy extension that writes the crawl's final stats as JSON.

Enabled with ``-s EXTENSIONS={"bench.statsfile.StatsFile": 0}`` and
``-s BENCH_STATS_FILE=path``. Besides Scrapy's stats it records the wall-clock time
(``time.time()``) of the first and the last response received.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Self

from scrapy import signals
from scrapy.exceptions import NotConfigured

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class StatsFile:
    """Writes ``crawler.stats`` to ``BENCH_STATS_FILE`` when the engine stops."""

    def __init__(self, crawler: Crawler, path: Path) -> None:
        self._crawler = crawler
        self._path = path
        self._first: float | None = None
        self._last: float | None = None
        crawler.signals.connect(self._response, signal=signals.response_received)
        crawler.signals.connect(self._write, signal=signals.engine_stopped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        path = crawler.settings.get("BENCH_STATS_FILE")
        if not path:
            raise NotConfigured("BENCH_STATS_FILE is not set")
        return cls(crawler, Path(path))

    def _response(self) -> None:
        now = time.time()
        if self._first is None:
            self._first = now
        self._last = now

    def _write(self) -> None:
        assert self._crawler.stats is not None
        stats = dict(self._crawler.stats.get_stats())
        stats["bench/first_response_time"] = self._first
        stats["bench/last_response_time"] = self._last
        self._path.parent.mkdir(parents=True, exist_ok=True)
        self._path.write_text(json.dumps(stats, default=str, indent=1), "utf-8")
