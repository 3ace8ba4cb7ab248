"""Settings of the benchmark's add-on crawl: a Scrapy project of its own that enables
the frontier through its add-on only, as a user's project would, and crawls with the
add-on's ``bfs`` spider. Everything the crawls share is on their command lines
(``bench.crawls``), so the add-on crawl differs from the frontier crawl only in how
the frontier is put together.
"""

from __future__ import annotations

BOT_NAME = "bench_addon"
SPIDER_MODULES: list[str] = []
ADDONS = {"crawler.addon.Frontier": 0}
