"""A ``CrawlSpider``: a rule follows every page link (``/p/N.html``) and calls back
with its ``cb_kwargs``; the start page goes to ``parse_start_url``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule

from userproject.spiders import domains_of, host_list

if TYPE_CHECKING:
    from collections.abc import Iterator

    from scrapy.http import Response


class RulesSpider(CrawlSpider):
    name = "rules"
    rules = (
        Rule(
            LinkExtractor(allow=r"/p/\d+\.html$"),
            callback="parse_page",
            cb_kwargs={"rule": "page"},
            follow=True,
        ),
    )

    def __init__(self, hosts: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        authorities = host_list(hosts)
        self.allowed_domains = domains_of(authorities)
        self.start_urls = [f"http://{authorities[0]}/"]

    def parse_start_url(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        yield {"url": response.url, "title": response.css("title::text").get()}

    def parse_page(self, response: Response, rule: str) -> Iterator[Any]:
        yield {
            "url": response.url,
            "title": response.css("title::text").get(),
            "rule": rule,
            "link_text": response.meta.get("link_text"),
        }
