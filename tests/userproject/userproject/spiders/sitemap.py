"""A ``SitemapSpider``: every page a host's sitemap lists (through its sitemap
index), with a rule per kind of page; ``-a robots=1`` finds the sitemaps through
each host's robots.txt instead."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.spiders import SitemapSpider

from userproject.spiders import domains_of, host_list

if TYPE_CHECKING:
    from collections.abc import Iterator

    from scrapy.http import Response


class SitemapPagesSpider(SitemapSpider):
    name = "sitemap"
    sitemap_rules = ((r"/p/\d+\.html$", "parse_page"), (r"/$", "parse_root"))

    def __init__(self, hosts: str = "", robots: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        authorities = host_list(hosts)
        where = "robots.txt" if robots else "sitemap.xml"
        self.sitemap_urls = [f"http://{host}/{where}" for host in authorities]
        self.allowed_domains = domains_of(authorities)

    def parse_page(self, response: Response) -> Iterator[Any]:
        yield {"url": response.url, "kind": "page", **self._title(response)}

    def parse_root(self, response: Response) -> Iterator[Any]:
        yield {"url": response.url, "kind": "root", **self._title(response)}

    def _title(self, response: Response) -> dict[str, Any]:
        return {"title": response.css("title::text").get()}
