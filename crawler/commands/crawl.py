"""``scrapy crawl``, exiting with status 1 when the frontier could not start."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.commands.crawl import Command as ScrapyCrawlCommand

from crawler.startup import STARTUP_FAILED

if TYPE_CHECKING:
    import argparse

    from scrapy import Spider
    from scrapy.crawler import Crawler


class Command(ScrapyCrawlCommand):
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        self._crawlers: list[Crawler] = []
        super().run(args, opts)
        for crawler in self._crawlers:
            assert crawler.stats is not None
            if crawler.stats.get_value("finish_reason") == STARTUP_FAILED:
                self.exitcode = 1

    def _create_crawler(self, spidercls: type[Spider] | str) -> Crawler:
        crawler = super()._create_crawler(spidercls)
        self._crawlers.append(crawler)
        return crawler
