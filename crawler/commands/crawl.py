"""``scrapy crawl``: Scrapy's own, with an exit status that says what happened and
a start-up failure's line as the last line of the output.

Every option and behaviour is Scrapy's (``-a``, ``-s``, ``-o``/``-O`` feeds...).
Two things differ: the exit status (``crawler.policy.exitcodes``: 0 finished or
stopped cleanly, 1 could not start, 2 usage error, 3 nothing could be fetched, 130
forced shutdown), and a start-up failure (``crawler.context.startup``) is logged
after Scrapy's closing lines rather than among them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.commands.crawl import Command as ScrapyCrawlCommand

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

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
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
