"""The spider of the plain Scrapy and scrapy-redis crawls (``scrapy runspider``).

It is the project's ``bfs`` spider under another name, so all three crawls run the
very same parse code: LinkExtractor on every page, one ``PageRecord`` item a page,
one request per extracted link. Only the scheduler differs.
"""

from __future__ import annotations

from crawler.spiders.bfs import BfsSpider


class BenchBfsSpider(BfsSpider):
    """``bfs`` with Scrapy's or scrapy-redis' scheduler (set by the settings)."""

    name = "bench_bfs"
