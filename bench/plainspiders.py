"""Plain Scrapy's crawl of the real-sites benchmark (``scrapy runspider``).

A textbook ``CrawlSpider``: one rule that follows every link on the seeds' hosts and
yields a small item a page, under Scrapy's own scheduler. It is the yardstick the
project's ``bfs`` spider is measured against on real pages (``bench.realsites``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy import Request
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    from scrapy.http import Response


class PlainSiteSpider(CrawlSpider):
    """Crawls ``-a seeds=URL,URL`` and every link on their hosts (``host:port``),
    or on the hosts of ``-a hosts=HOST:PORT,...`` when given.

    ``allow_domains`` gets those ``host:port``: Scrapy matches it against a
    link's netloc, so a link to another port or host (docs.python.org...) is never
    followed.
    """

    name = "plain_site"

    def __init__(self, seeds: str = "", hosts: str = "", **kwargs: Any) -> None:
        self.seed_urls = [url.strip() for url in seeds.split(",") if url.strip()]
        if not self.seed_urls:
            raise ValueError("give the site roots: -a seeds=URL,URL")
        allowed = [host.strip() for host in hosts.split(",") if host.strip()]
        hosts = sorted(set(allowed) or {urlsplit(url).netloc for url in self.seed_urls})
        extractor = LinkExtractor(allow_domains=hosts)
        self.rules = (Rule(extractor, callback="parse_page", follow=True),)
        super().__init__(**kwargs)

    async def start(self) -> AsyncIterator[Any]:
        for url in self.seed_urls:
            yield Request(url)

    def parse_page(self, response: Response) -> Iterator[dict[str, Any]]:
        """The small item a page: its URL, status and size."""
        yield {
            "url": response.url,
            "status": response.status,
            "size": len(response.body),
        }
