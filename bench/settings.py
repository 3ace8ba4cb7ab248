"""Scrapy settings for the plain Scrapy and scrapy-redis crawls of the benchmark.

Deliberately not ``crawler.settings``: these crawls must use Scrapy's own scheduler
(or scrapy-redis'), never the project's frontier. Everything the three crawls share
is passed on the command line by ``bench.crawls`` so that it is the same for all.
"""

from __future__ import annotations

BOT_NAME = "bench"
SPIDER_MODULES: list[str] = []
TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
