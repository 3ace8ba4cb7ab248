"""``scrapy analyze [SPIDER]``: run the analysis tasks of a crawl (docs/analysis.md).

The crawl is found as ``scrapy frontier`` finds it (``crawler.commands.crawltarget``:
the SPIDER's, the project's only spider's, or ``--prefix``), in the Redis its
settings name, else the private Redis of ``FRONTIER_EMBEDDED_REDIS_DIR``.
"""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError
from scrapy.utils.log import configure_logging

from crawler.analysis.analysisconfig import AnalysisConfig
from crawler.analysis.processes import (
    LOG_SETTINGS,
    WorkerSpec,
    check_stores,
    run_worker,
    run_workers,
)
from crawler.commands.crawltarget import crawl_target
from crawler.commands.frontier import REDIS_COMMAND_ERRORS
from crawler.crawlstate.connection import CrawlRedis
from crawler.storage.stores import STORE_SETTINGS

if TYPE_CHECKING:
    import argparse


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return (
            "[SPIDER] [--workers N] [--idle-exit SECONDS | --once] [--allow MODULE ...]"
        )

    def short_desc(self) -> str:
        return "Run the analysis tasks of a crawl (ANALYSIS_ENABLED queues them)"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--workers", type=int, default=1, help="worker processes")
        parser.add_argument(
            "--idle-exit",
            type=float,
            metavar="SECONDS",
            help="stop after this long with no task (default: run until stopped)",
        )
        parser.add_argument(
            "--once", action="store_true", help="stop when no task is left"
        )
        parser.add_argument(
            "--prefix",
            help="the crawl's key prefix (default: the SPIDER's FRONTIER_KEY_PREFIX, "
            "else its name)",
        )
        parser.add_argument(
            "--allow",
            action="append",
            default=[],
            metavar="MODULE",
            help="also load analyzers from MODULE (and its submodules); the shipped "
            "analyzers and ANALYSIS_DEFAULT's module always are",
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        if len(args) > 1:
            raise UsageError(f"at most one argument (SPIDER) expected, got {args!r}")
        if args and opts.prefix:
            raise UsageError(f"give SPIDER or --prefix, not both; got {args[0]!r}")
        if opts.workers < 1:
            raise UsageError(f"--workers must be >= 1, got {opts.workers}")
        if opts.idle_exit is not None and opts.idle_exit < 0:
            raise UsageError(f"--idle-exit must be >= 0, got {opts.idle_exit}")
        configure_logging(self.settings)
        try:
            self.exitcode = self._run(args[0] if args else None, opts)
        except (*REDIS_COMMAND_ERRORS, ValueError) as exc:
            print(f"scrapy analyze: {exc}", file=sys.stderr)
            self.exitcode = 1

    def _run(self, spider: str | None, opts: argparse.Namespace) -> int:
        assert self.settings is not None
        target = crawl_target(self.settings, spider, opts.prefix)
        settings, keys = target.settings, target.keys
        config = AnalysisConfig.from_settings(settings)
        check_stores(config, settings)
        with contextlib.ExitStack() as stack:
            server = CrawlRedis.from_settings(settings, join=True)
            stack.callback(server.close)
            spec = WorkerSpec(
                url=server.url,
                cluster=server.cluster,
                params=server.server.params,
                prefix=keys.prefix,
                config=config,
                allowed=(*config.trusted_modules(), *opts.allow),
                idle_exit=0.0 if opts.once else opts.idle_exit,
                log_settings={name: settings.get(name) for name in LOG_SETTINGS},
                store_settings={name: settings.get(name) for name in STORE_SETTINGS},
            )
            if opts.workers == 1:
                return run_worker(spec)
            return run_workers(spec, opts.workers)
