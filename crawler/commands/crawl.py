"""``scrapy crawl``: Scrapy's own, with an exit status that says what happened and
a start-up failure's line as the last line of the output.

Every option and behaviour is Scrapy's (``-a``, ``-s``, ``-o``/``-O`` feeds...).
Three things differ: the exit status (``crawler.policy.exitcodes``: 0 finished or
stopped cleanly, 1 could not start, 2 usage error, 3 nothing could be fetched, 130
forced shutdown); a start-up failure (``crawler.context.startup``) is logged after
Scrapy's closing lines rather than among them; and what Scrapy would only find with a
traceback (an unknown spider or ``LOG_LEVEL``, a feed file it cannot write, at its
first item) stops the command before any crawl, in one line, with status 1.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from scrapy.commands.crawl import Command as ScrapyCrawlCommand

from crawler.context.directories import (
    UnwritableDirectoryError,
    check_writable_directory,
)
from crawler.context.startup import failed_at_startup, log_kept_failure, report_last
from crawler.policy.exitcodes import crawl_exit_code

if TYPE_CHECKING:
    import argparse

    from scrapy import Spider
    from scrapy.crawler import Crawler


class Command(ScrapyCrawlCommand):
    """Scrapy's ``crawl``; its exit status is ``crawl_exit_code``'s."""

    # The crawler this run made (None until then).
    _running: Crawler | None = None

    def short_desc(self) -> str:
        return "Run a spider of the current project, by name (its exit status says how it ended)"

    def long_desc(self) -> str:
        return (
            "Run a spider of the current project, by name. Exit status: 0 the "
            "crawl finished or was stopped cleanly (one Ctrl-C), 1 it could not "
            "start (one ERROR line, the last, says why), 2 usage error, 3 nothing "
            "could be fetched, 130 forced shutdown (a second Ctrl-C)."
        )

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        """Scrapy's options (``-o``/``-O`` become ``FEEDS``), then the settings a
        crawl would only trip over later: one line and status 1 (``SystemExit``)."""
        super().process_options(args, opts)
        assert self.settings is not None  # Scrapy sets them before the options
        if problem := _log_level_problem(self.settings.get("LOG_LEVEL")):
            raise SystemExit(f"scrapy crawl: {problem}")
        for uri in self.settings.getdict("FEEDS"):
            if problem := _feed_problem(str(uri)):
                raise SystemExit(f"scrapy crawl: {problem}")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.crawler_process is not None
        known = self.crawler_process.spider_loader.list()
        if args and args[0] not in known:
            raise SystemExit(
                f"scrapy crawl: unknown spider {args[0]!r} (this project's "
                f"spiders: {', '.join(sorted(known)) or 'none'})"
            )
        try:
            super().run(args, opts)
        finally:
            if self._running is not None:
                log_kept_failure(self._running)
        if self._running is not None:
            self.exitcode = self._exit_code(self._running)

    def _create_crawler(self, spidercls: type[Spider] | str) -> Crawler:
        crawler = super()._create_crawler(spidercls)
        report_last(crawler)
        self._running = crawler
        return crawler

    def _exit_code(self, crawler: Crawler) -> int:
        """What the crawl's end says (Scrapy's bootstrap failure is a failed start)."""
        assert self.crawler_process is not None
        if failed_at_startup(crawler) or self.crawler_process.bootstrap_failed:
            return crawl_exit_code({}, failed_to_start=True)
        try:
            stats = crawler.stats.get_stats()
        except RuntimeError:  # stopped before Scrapy made the stats: nothing ran
            stats = {}
        return crawl_exit_code(stats, failed_to_start=False)


def _log_level_problem(level: object) -> str | None:
    """What is wrong with *level* as ``LOG_LEVEL`` (Scrapy would raise while it
    sets up logging), or None."""
    if isinstance(level, int) or str(level).upper() in logging.getLevelNamesMapping():
        return None
    return (
        f"LOG_LEVEL {level!r} is not a level: use DEBUG, INFO, WARNING, ERROR or "
        "CRITICAL"
    )


def _feed_problem(uri: str) -> str | None:
    """Why a feed of *uri* (a local file) could not be written, or None (another
    scheme is its storage's to judge, when it opens)."""
    parts = urlsplit(uri)
    if parts.scheme not in ("", "file") and len(parts.scheme) > 1:  # not C:\...
        return None
    path = Path(parts.path if parts.scheme == "file" else uri)
    try:
        check_writable_directory(path.parent, "the feed's directory")
    except UnwritableDirectoryError as exc:
        return f"cannot write the feed {uri}: {exc}"
    return None
